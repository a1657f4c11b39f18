// The indexes of a vocabulary that the token mask (token_constraint.h) reads: plain tokens by
// characters, the other tokens split into a plain prefix and the rest, and a trie of every text.
#include <algorithm>
#include <map>
#include <numeric>

#include "runtime/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {

namespace {

// The bytes of the UTF-8 character a lead byte starts, as the matcher takes them (0: no lead byte).
size_t char_len(uint8_t c) {
    return c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
}

// The longest prefix of whole characters without a quote, backslash or control byte: its bytes
// and characters.
std::pair<size_t, int> plain_prefix(const std::string& p) {
    size_t i = 0;
    int n = 0;
    while (i < p.size()) {
        const auto c = uint8_t(p[i]);
        const size_t len = char_len(c);
        if (len == 0 || c < 0x20 || c == '"' || c == '\\' || i + len > p.size()) break;
        bool whole = true;
        for (size_t k = 1; k < len; ++k) whole = whole && (uint8_t(p[i + k]) & 0xC0) == 0x80;
        if (!whole) break;
        i += len;
        ++n;
    }
    return {i, n};
}

constexpr size_t kMaxText = 0xFFFF;  // longer texts (none in real vocabularies) are never allowed

void index_plain(ConstraintVocab& v) {
    const size_t n = v.pieces.size();
    v.plain_chars.assign(n, 0);
    v.plain_bits.assign((n + 31) / 32, 0u);
    std::map<std::string, int> rests;
    int top = 0;
    for (size_t id = 0; id < n; ++id) {
        const std::string& p = v.pieces[id];
        if (v.eog[id] || p.empty() || p.size() > kMaxText) continue;
        const auto [bytes, chars] = plain_prefix(p);
        if (bytes == p.size()) {
            v.plain_chars[id] = uint16_t(chars);
            v.plain_bits[id / 32] |= 1u << (id % 32);
            top = std::max(top, chars);
        } else {
            const auto it = rests.emplace(p.substr(bytes), int(rests.size())).first;
            v.mixed.push_back({int32_t(id), uint16_t(bytes), uint16_t(chars), it->second});
        }
    }
    v.plain_chars_start.assign(size_t(top) + 2, 0);
    for (size_t id = 0; id < n; ++id)
        if (v.plain_chars[id]) v.plain_chars_start[v.plain_chars[id] + 1u]++;
    std::partial_sum(v.plain_chars_start.begin(), v.plain_chars_start.end(), v.plain_chars_start.begin());
    v.plain_by_chars.resize(size_t(v.plain_chars_start.back()));
    std::vector<int> at(v.plain_chars_start.begin(), v.plain_chars_start.end() - 1);
    for (size_t id = 0; id < n; ++id)
        if (v.plain_chars[id]) v.plain_by_chars[size_t(at[v.plain_chars[id]]++)] = int32_t(id);
    v.rests.resize(rests.size());
    for (auto& [text, i] : rests) v.rests[size_t(i)] = text;
    std::sort(v.mixed.begin(), v.mixed.end(), [](const ConstraintVocab::Mixed& a, const ConstraintVocab::Mixed& b) {
        return a.rest != b.rest ? a.rest < b.rest : a.prefix_chars < b.prefix_chars;
    });
}

// The trie in preorder from the texts in sorted order: the path of the previous text is kept,
// cut back to the common prefix, and extended by the new text's other bytes.
void index_trie(ConstraintVocab& v) {
    const size_t n = v.pieces.size();
    v.same_text.assign(n, -1);
    std::vector<int32_t> ids;
    for (size_t id = 0; id < n; ++id)
        if (!v.eog[id] && !v.pieces[id].empty() && v.pieces[id].size() <= kMaxText) ids.push_back(int32_t(id));
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return v.pieces[size_t(a)] < v.pieces[size_t(b)]; });
    std::vector<uint32_t> path;  // node of each byte of the previous text
    const std::string* prev = nullptr;
    for (const int32_t id : ids) {
        const std::string& p = v.pieces[size_t(id)];
        size_t common = 0;
        if (prev)
            while (common < p.size() && common < prev->size() && p[common] == (*prev)[common]) ++common;
        for (; path.size() > common; path.pop_back()) v.trie[path.back()].end = uint32_t(v.trie.size());
        for (size_t k = common; k < p.size(); ++k) {
            path.push_back(uint32_t(v.trie.size()));
            v.trie.push_back({0, -1, uint16_t(k + 1), uint8_t(p[k])});
        }
        int32_t& first = v.trie[path.back()].token;
        if (first < 0) {
            first = id;
        } else {  // the same text again: at the end of the chain
            int32_t t = first;
            while (v.same_text[size_t(t)] >= 0) t = v.same_text[size_t(t)];
            v.same_text[size_t(t)] = id;
        }
        v.max_depth = std::max(v.max_depth, int(p.size()));
        prev = &p;
    }
    for (; !path.empty(); path.pop_back()) v.trie[path.back()].end = uint32_t(v.trie.size());
}

}  // namespace

std::shared_ptr<const ConstraintVocab> constraint_vocab(std::vector<std::string> pieces, std::vector<bool> eog) {
    auto v = std::make_shared<ConstraintVocab>();
    v->pieces = std::move(pieces);
    v->eog = std::move(eog);
    v->eog.resize(v->pieces.size(), false);
    for (size_t id = 0; id < v->pieces.size(); ++id)
        if (v->eog[id]) v->eog_ids.push_back(int32_t(id));
    index_plain(*v);
    index_trie(*v);
    return v;
}

std::shared_ptr<const ConstraintVocab> constraint_vocab(const Tokenizer& tok) {
    const int n = tok.n_vocab();
    std::vector<std::string> pieces(static_cast<size_t>(n));
    std::vector<bool> eog(static_cast<size_t>(n));
    for (int32_t id = 0; id < n; ++id) {
        pieces[size_t(id)] = tok.token_to_piece(id, false);
        eog[size_t(id)] = tok.is_eog(id);
    }
    return constraint_vocab(std::move(pieces), std::move(eog));
}

}  // namespace jitllm
