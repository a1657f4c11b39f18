// The symbol merging that the SentencePiece and byte-level BPE encoders share (spm.cpp, bpe.cpp):
// a word split into UTF-8 characters, adjacent pairs merged best first from a priority queue
// (each encoder ranks pairs its own way), then each symbol emitted as a token or byte by byte.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace jitllm::tok {

// A linked list over the text's bytes
struct Symbol {
    int prev, next;
    size_t offset, length;  // bytes of the text; length 0 once merged into its left neighbour
};

// One symbol per UTF-8 character of text (a truncated last sequence: the bytes left)
inline std::vector<Symbol> char_symbols(std::string_view text) {
    std::vector<Symbol> syms;
    for (size_t off = 0; off < text.size();) {
        const size_t n = std::min(utf8_seq_len(uint8_t(text[off])), text.size() - off);
        const int idx = int(syms.size());
        syms.push_back({idx - 1, off + n == text.size() ? -1 : idx + 1, off, n});
        off += n;
    }
    return syms;
}

// Queues every adjacent pair (try_pair(left, right) queues it where the encoder may merge it),
// then merges the queue's best pair until none is left: a popped pair is passed over where a side
// was merged since it was queued, or where stale(pair, left, right) says so; a merge queues the
// merged symbol's pairs with its new neighbours.
template <class Queue, class TryPair, class Stale>
void merge_symbols(std::vector<Symbol>& syms, Queue& queue, TryPair try_pair, Stale stale) {
    for (int i = 1; i < int(syms.size()); ++i) try_pair(i - 1, i);
    while (!queue.empty()) {
        const auto b = queue.top();
        queue.pop();
        Symbol& l = syms[b.left];
        Symbol& r = syms[b.right];
        if (l.length == 0 || r.length == 0 || stale(b, l, r)) continue;
        l.length += r.length;
        r.length = 0;
        l.next = r.next;
        if (r.next >= 0) syms[r.next].prev = b.left;
        try_pair(l.prev, b.left);
        try_pair(b.left, l.next);
    }
}

// Each symbol left, in order, as its vocab token; one that is not a token byte by byte as
// byte_token(byte) (a negative id: the byte is dropped).
template <class ByteToken>
void emit_symbols(const Vocab& v, const std::vector<Symbol>& syms, std::string_view text, ByteToken byte_token,
                  std::vector<int32_t>& out) {
    for (int i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
        const std::string_view s = text.substr(syms[i].offset, syms[i].length);
        if (int32_t id = v.find(s); id >= 0) {
            out.push_back(id);
            continue;
        }
        for (char c : s)
            if (int32_t id = byte_token(uint8_t(c)); id >= 0) out.push_back(id);
    }
}

}  // namespace jitllm::tok
