// The token mask of constrained output (see token_constraint.h). A token whose first byte cannot
// come next is out at once; inside a string without limits, plain text tokens are in at once; every
// other token is tried on a copy of the matcher.
#include "runtime/token_constraint.h"

#include <limits>

#include "tokenizer/tokenizer.h"

namespace jitllm {

std::shared_ptr<const ConstraintVocab> constraint_vocab(const Tokenizer& tok) {
    auto v = std::make_shared<ConstraintVocab>();
    const int n = tok.n_vocab();
    v->pieces.resize(size_t(n));
    v->eog.resize(size_t(n));
    v->plain.resize(size_t(n));
    for (int32_t id = 0; id < n; ++id) {
        const std::string p = tok.token_to_piece(id, false);
        bool plain = !p.empty();
        for (size_t i = 0; i < p.size() && plain;) {  // whole UTF-8 characters, no ", \ or control
            const auto c = uint8_t(p[i]);
            const size_t len = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3
                               : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
            plain = len > 0 && i + len <= p.size() && c >= 0x20 && c != '"' && c != '\\';
            for (size_t k = 1; plain && k < len; ++k) plain = (uint8_t(p[i + k]) & 0xC0) == 0x80;
            i += len ? len : 1;
        }
        v->pieces[size_t(id)] = p;
        v->eog[size_t(id)] = tok.is_eog(id);
        v->plain[size_t(id)] = plain;
    }
    return v;
}

bool JsonConstraint::allowed(int32_t id, int budget) {
    if (v_->eog[size_t(id)]) return m_.complete();
    const std::string& piece = v_->pieces[size_t(id)];
    if (piece.empty()) return false;  // a control token: no text to check
    scratch_ = m_;
    return scratch_.advance(piece) && scratch_.remaining() <= budget - 1;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonSchema> schema, std::shared_ptr<const ConstraintVocab> vocab)
    : v_(std::move(vocab)), m_(schema), scratch_(schema), after1_(schema), rem2_(256 * 256, -1) {}

void JsonConstraint::prefix_tables() {
    for (int b0 = 0; b0 < 256; ++b0) {
        after1_ = m_;
        const char c0 = char(b0);
        ok1_[b0] = after1_.advance(std::string_view(&c0, 1));
        int* row = &rem2_[size_t(b0) * 256];
        for (int b1 = 0; b1 < 256; ++b1) {
            const char c1 = char(b1);
            scratch_ = after1_;
            row[b1] = ok1_[b0] && scratch_.advance(std::string_view(&c1, 1)) ? scratch_.remaining() : -1;
        }
    }
}

int JsonConstraint::mask(float* logits, int n_vocab, int budget) {
    const int n = std::min(n_vocab, int(v_->pieces.size()));
    const bool free_string = m_.in_free_string();
    const bool plain_fits = m_.remaining() <= budget - 1;  // plain text leaves remaining() as it is
    if (!free_string) prefix_tables();
    int kept = 0;
    for (int32_t id = 0; id < n_vocab; ++id) {
        bool in = false;
        if (id < n && logits[id] != -std::numeric_limits<float>::infinity()) {
            const std::string& p = v_->pieces[size_t(id)];
            if (v_->eog[size_t(id)]) {
                in = m_.complete();
            } else if (p.empty()) {
                in = false;
            } else if (free_string) {
                in = v_->plain[size_t(id)] ? plain_fits : allowed(id, budget);
            } else if (!ok1_[uint8_t(p[0])]) {
                in = false;
            } else if (p.size() == 1) {
                in = allowed(id, budget);
            } else {
                const int r = rem2_[size_t(uint8_t(p[0])) * 256 + uint8_t(p[1])];
                in = r >= 0 && (p.size() == 2 ? r <= budget - 1 : allowed(id, budget));
            }
        }
        if (in) ++kept;
        else logits[id] = -std::numeric_limits<float>::infinity();
    }
    return kept;
}

void JsonConstraint::accept(int32_t token) {
    if (size_t(token) >= v_->pieces.size() || v_->eog[size_t(token)]) return;
    m_.feed(v_->pieces[size_t(token)]);
}

}  // namespace jitllm
