// Constrained output on the host sampler: before each pick, the logits of the tokens that cannot
// come next are set to -infinity. A token may come next when the reply stays the beginning of a
// JSON value that validates against the schema (json_schema.h) and the value can still be
// completed in the tokens left (each token adds at least one character, and the vocabulary has a
// token of each character the completion needs); an end-of-generation token only once the value
// is whole. So the reply is valid JSON unless a stop string cuts it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/json_schema.h"

namespace jitllm {

class Tokenizer;

// Each token's text (token_to_piece without specials: a control token has none) and whether it
// ends generation; built once per model.
struct ConstraintVocab {
    std::vector<std::string> pieces;
    std::vector<bool> eog;
    // the piece is plain string content: no quote, backslash or control byte, whole UTF-8
    // characters (inside a string without limits, such a token is always allowed)
    std::vector<bool> plain;
};
std::shared_ptr<const ConstraintVocab> constraint_vocab(const Tokenizer& tok);

class JsonConstraint {
public:
    JsonConstraint(std::shared_ptr<const JsonSchema> schema, std::shared_ptr<const ConstraintVocab> vocab);

    // Sets the logits of the tokens that may not come next to -infinity; `budget`: the tokens that
    // may still be generated, this one included. Returns how many tokens remain allowed.
    int mask(float* logits, int n_vocab, int budget);
    void accept(int32_t token);  // the token taken (an end-of-generation token changes nothing)
    bool complete() const { return m_.complete(); }
    int remaining() const { return m_.remaining(); }

private:
    bool allowed(int32_t id, int budget);
    // Which first byte, and first two bytes, a next piece may start with, and what remains after
    // two (each tried on a copy of the matcher): most tokens are decided by these tables.
    void prefix_tables();

    std::shared_ptr<const ConstraintVocab> v_;
    JsonMatcher m_, scratch_, after1_;
    bool ok1_[256];
    std::vector<int> rem2_;  // [b0 * 256 + b1]: remaining() after the two bytes; -1: refused
};

}  // namespace jitllm
