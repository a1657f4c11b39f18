// Byte-level BPE encoder for "gpt2" vocabs: pre-tokenize with the vocab's regexes, map each
// piece's bytes to GPT-2's alphabet, then merge adjacent symbols by merge rank (lowest first).
// Matches llama.cpp's llm_tokenizer_bpe_session, including ignore_merges (a piece that is a
// token is emitted whole) and the silent drop of bytes the vocab cannot spell.
#include <queue>
#include <string>

#include "tokenizer/symbols.h"

namespace jitllm::tok {

namespace {

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
        syms = char_symbols(word);
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
    // stale where the pair's text is no longer the joined text it was queued with
    merge_symbols(syms, queue, try_pair, [&](const Bigram& b, const Symbol& l, const Symbol& r) {
        return l.length + r.length != b.text.size() || word.compare(l.offset, b.text.size(), b.text) != 0;
    });
    // No token: try each byte of the symbol on its own; what the vocab lacks is dropped.
    emit_symbols(v, syms, word, [&](uint8_t byte) { return v.find(std::string(1, char(byte))); }, out);
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
