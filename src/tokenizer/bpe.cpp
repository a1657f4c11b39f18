// Byte-level BPE encoder for "gpt2" vocabs: pre-tokenize with the vocab's regexes, map each
// piece's bytes to GPT-2's alphabet, then merge adjacent symbols by merge rank (lowest first).
// Matches llama.cpp's llm_tokenizer_bpe_session, including ignore_merges (a piece that is a
// token is emitted whole) and the silent drop of bytes the vocab cannot spell.
#include <queue>
#include <string>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace jitllm::tok {

namespace {

struct Symbol {
    int prev, next;
    size_t offset, length;  // bytes of the encoded word; length 0 once merged away
};

struct Bigram {
    int left, right;
    int32_t rank;
    std::string text;  // joined text when queued, to spot stale entries
};

// Lowest rank first; on a tie the left-most pair.
struct WorseBigram {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

void encode_word(const Vocab& v, const std::string& word, std::vector<int32_t>& out) {
    std::vector<Symbol> syms;
    if (v.ignore_merges && v.find(word) >= 0) {
        syms.push_back({-1, -1, 0, word.size()});
    } else {
        for (size_t off = 0; off < word.size();) {
            const size_t n = std::min(utf8_seq_len(uint8_t(word[off])), word.size() - off);
            const int idx = int(syms.size());
            syms.push_back({idx - 1, off + n == word.size() ? -1 : idx + 1, off, n});
            off += n;
        }
    }
    auto text_of = [&](const Symbol& s) {
        return std::string_view(word).substr(s.offset, s.length);
    };

    std::priority_queue<Bigram, std::vector<Bigram>, WorseBigram> queue;
    auto try_pair = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const int32_t rank = v.merge_rank_of(text_of(syms[left]), text_of(syms[right]));
        if (rank < 0) return;
        std::string joined(text_of(syms[left]));
        joined += text_of(syms[right]);
        queue.push({left, right, rank, std::move(joined)});
    };
    for (int i = 1; i < int(syms.size()); ++i) try_pair(i - 1, i);

    while (!queue.empty()) {
        Bigram b = queue.top();
        queue.pop();
        Symbol& l = syms[b.left];
        Symbol& r = syms[b.right];
        if (l.length == 0 || r.length == 0) continue;
        if (l.length + r.length != b.text.size() ||
            word.compare(l.offset, b.text.size(), b.text) != 0)
            continue;  // stale: a side changed since this pair was queued
        l.length += r.length;
        r.length = 0;
        l.next = r.next;
        if (r.next >= 0) syms[r.next].prev = b.left;
        try_pair(l.prev, b.left);
        try_pair(b.left, l.next);
    }

    for (int i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
        const std::string_view s = text_of(syms[i]);
        if (int32_t id = v.find(s); id >= 0) {
            out.push_back(id);
            continue;
        }
        // No token: try each byte of the symbol on its own; what the vocab lacks is dropped.
        for (char c : s)
            if (int32_t id = v.find(std::string(1, c)); id >= 0) out.push_back(id);
    }
}

}  // namespace

void bpe_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out) {
    // llama.cpp splits decoded code points (bad bytes become U+FFFD) and rebuilds the pieces
    // from them, so the regexes and merges see that normalised UTF-8.
    std::string norm;
    norm.reserve(text.size());
    for (uint32_t cpt : utf8_decode(text)) utf8_append(norm, cpt);

    std::string word;
    for (const auto& [off, len] : v.pre_tokenizer->split(norm)) {
        word.clear();
        for (size_t i = off; i < off + len; ++i) word += byte_to_unicode(uint8_t(norm[i]));
        encode_word(v, word, out);
    }
}

}  // namespace jitllm::tok
