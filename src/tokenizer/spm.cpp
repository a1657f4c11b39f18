// SentencePiece-style encoder for "llama" vocabs: starting from single UTF-8 characters, merge
// the adjacent pair whose joined text is a vocab token with the best score, until no pair is a
// token; characters left outside the vocab become <0xXX> byte tokens. Matches llama.cpp's
// llm_tokenizer_spm_session (the input arrives with spaces already turned into U+2581).
#include <queue>
#include <string>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace jitllm::tok {

namespace {

struct Symbol {
    int prev, next;
    size_t offset, length;  // bytes of the input; length 0 once merged into its left neighbour
};

struct Bigram {
    int left, right;
    float score;
    size_t length;  // bytes of the joined text when it was queued
};

// Best score first; on a tie the left-most pair.
struct WorseBigram {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

int32_t byte_token(const Vocab& v, uint8_t byte) {
    static const char kHex[] = "0123456789ABCDEF";
    const char name[] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>', '\0'};
    if (int32_t id = v.find(name); id >= 0) return id;
    if (int32_t id = v.find(std::string(1, char(byte))); id >= 0) return id;
    return v.unk;  // the vocab cannot spell this byte
}

}  // namespace

void spm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out) {
    std::vector<Symbol> syms;
    for (size_t off = 0; off < text.size();) {
        const size_t n = std::min(utf8_seq_len(uint8_t(text[off])), text.size() - off);
        const int idx = int(syms.size());
        syms.push_back({idx - 1, off + n == text.size() ? -1 : idx + 1, off, n});
        off += n;
    }

    std::priority_queue<Bigram, std::vector<Bigram>, WorseBigram> queue;
    auto try_pair = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t len = syms[left].length + syms[right].length;
        const int32_t id = v.find(text.substr(syms[left].offset, len));
        if (id < 0) return;
        queue.push({left, right, v.tokens[id].score, len});
    };
    for (int i = 1; i < int(syms.size()); ++i) try_pair(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& l = syms[b.left];
        Symbol& r = syms[b.right];
        // Stale: one side was merged elsewhere since this pair was queued.
        if (l.length == 0 || r.length == 0 || l.length + r.length != b.length) continue;
        l.length += r.length;
        r.length = 0;
        l.next = r.next;
        if (r.next >= 0) syms[r.next].prev = b.left;
        try_pair(l.prev, b.left);
        try_pair(b.left, l.next);
    }

    // Every merged symbol is a vocab token by construction; a single character may not be.
    for (int i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
        const std::string_view s = text.substr(syms[i].offset, syms[i].length);
        if (int32_t id = v.find(s); id >= 0) {
            out.push_back(id);
            continue;
        }
        for (char c : s)
            if (int32_t id = byte_token(v, uint8_t(c)); id >= 0) out.push_back(id);
    }
}

}  // namespace jitllm::tok
