// The token mask of constrained output (see token_constraint.h). Inside a string, plain tokens
// are decided by a rule (their characters against the length limits and the budget) and every
// other token by its rest after the plain prefix, once per (rest, prefix length); elsewhere the
// texts are walked as a trie, a subtree left at its first byte the matcher refuses (a structural
// point takes few first bytes, so few nodes are visited).
#include "runtime/token_constraint.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <limits>

namespace jitllm {

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonSchema> schema, std::shared_ptr<const ConstraintVocab> vocab)
    : v_(std::move(vocab)), m_(schema), scratch_(schema) {
    depth_.assign(size_t(v_->max_depth) + 1, JsonMatcher(schema));
    bits_.assign((v_->pieces.size() + 31) / 32, 0u);
}

void JsonConstraint::allow(int32_t id) {
    for (; id >= 0; id = v_->same_text[size_t(id)]) bits_[size_t(id) / 32] |= 1u << (id % 32);
}

void JsonConstraint::walk(int budget) {
    const auto& trie = v_->trie;
    depth_[0] = m_;
    for (uint32_t i = 0; i < trie.size();) {
        const ConstraintVocab::Node& n = trie[i];
        JsonMatcher& m = depth_[n.depth];
        m = depth_[n.depth - 1u];
        const char c = char(n.byte);
        if (!m.advance(std::string_view(&c, 1))) {
            i = n.end;  // no text with this prefix
            continue;
        }
        if (n.token >= 0 && m.remaining() <= budget - 1) allow(n.token);
        ++i;
    }
}

void JsonConstraint::in_string(int budget, int count, int min_length, int max_length) {
    const ConstraintVocab& v = *v_;
    const int rem = m_.remaining();
    const int need = std::max(0, min_length - count);  // characters the string still needs
    const int room = max_length < 0 ? INT_MAX : max_length - count;
    // a plain token of k characters: k <= room, and rem - min(k, need) <= budget - 1
    int lo = 1;
    if (rem > budget - 1) lo = rem - (budget - 1) <= need ? rem - (budget - 1) : INT_MAX;
    const int top = int(v.plain_chars_start.size()) - 2;  // the most characters of a plain token
    const int hi = std::min(room, top);
    if (lo <= 1 && hi == top) {
        bits_ = v.plain_bits;
    } else {
        for (int k = std::max(lo, 1); k <= hi; ++k)
            for (int j = v.plain_chars_start[size_t(k)]; j < v.plain_chars_start[size_t(k) + 1]; ++j) {
                const int32_t id = v.plain_by_chars[size_t(j)];
                bits_[size_t(id) / 32] |= 1u << (id % 32);
            }
    }
    // the others: the matcher after the prefix and the rest, once per (rest, prefix characters);
    // once per rest where the count does not matter (no limit to meet or keep)
    const bool free = max_length < 0 && need == 0;
    int last_rest = -1, last_chars = -1, last_rem = -1;
    for (const auto& x : v.mixed) {
        if (x.rest != last_rest || (!free && x.prefix_chars != last_chars)) {
            last_rest = x.rest;
            last_chars = x.prefix_chars;
            last_rem = -1;
            if (x.prefix_chars <= room) {
                scratch_ = m_;
                const std::string& p = v.pieces[size_t(x.id)];
                if (scratch_.advance(std::string_view(p).substr(0, x.prefix_bytes)) &&
                    scratch_.advance(v.rests[size_t(x.rest)]))
                    last_rem = scratch_.remaining();
            }
        }
        if (last_rem >= 0 && last_rem <= budget - 1) bits_[size_t(x.id) / 32] |= 1u << (x.id % 32);
    }
}

const std::vector<uint32_t>& JsonConstraint::allowed(int budget) {
    std::fill(bits_.begin(), bits_.end(), 0u);
    int count = 0, min_length = 0, max_length = -1;
    if (m_.in_plain_string(&count, &min_length, &max_length)) in_string(budget, count, min_length, max_length);
    else walk(budget);
    if (m_.complete())
        for (const int32_t id : v_->eog_ids) bits_[size_t(id) / 32] |= 1u << (id % 32);
    n_allowed_ = 0;
    for (const uint32_t w : bits_) n_allowed_ += std::popcount(w);
    return bits_;
}

const uint32_t* JsonConstraint::allowed_words(int budget, int n_vocab) {
    const std::vector<uint32_t>& b = allowed(budget);
    words_.assign(size_t(n_vocab + 31) / 32, 0u);
    std::copy_n(b.begin(), std::min(b.size(), words_.size()), words_.begin());
    return words_.data();
}

int JsonConstraint::mask(float* logits, int n_vocab, int budget) {
    const std::vector<uint32_t>& b = allowed(budget);
    const int n = std::min(n_vocab, int(v_->pieces.size()));
    int kept = 0;
    for (int id = 0; id < n_vocab; ++id) {
        if (id < n && (b[size_t(id) / 32] >> (id % 32) & 1u) && logits[id] != -std::numeric_limits<float>::infinity())
            ++kept;
        else
            logits[id] = -std::numeric_limits<float>::infinity();
    }
    return kept;
}

void JsonConstraint::accept(int32_t token) {
    if (size_t(token) >= v_->pieces.size() || v_->eog[size_t(token)]) return;
    m_.feed(v_->pieces[size_t(token)]);
}

}  // namespace jitllm
