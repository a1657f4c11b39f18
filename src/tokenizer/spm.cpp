// SentencePiece-style encoder for "llama" vocabs: starting from single UTF-8 characters, merge
// the adjacent pair whose joined text is a vocab token with the best score, until no pair is a
// token; characters left outside the vocab become <0xXX> byte tokens. Matches llama.cpp's
// llm_tokenizer_spm_session (the input arrives with spaces already turned into U+2581).
#include <queue>
#include <string>

#include "tokenizer/symbols.h"

namespace jitllm::tok {

namespace {

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
    std::vector<Symbol> syms = char_symbols(text);
    std::priority_queue<Bigram, std::vector<Bigram>, WorseBigram> queue;
    auto try_pair = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t len = syms[left].length + syms[right].length;
        const int32_t id = v.find(text.substr(syms[left].offset, len));
        if (id < 0) return;
        queue.push({left, right, v.tokens[id].score, len});
    };
    // stale where a side has grown since the pair was queued
    merge_symbols(syms, queue, try_pair,
                  [](const Bigram& b, const Symbol& l, const Symbol& r) { return l.length + r.length != b.length; });
    // Every merged symbol is a vocab token by construction; a single character may not be.
    emit_symbols(v, syms, text, [&](uint8_t byte) { return byte_token(v, byte); }, out);
}

}  // namespace jitllm::tok
