// Constrained output: before each pick, only the tokens that keep the reply valid may be taken. A
// token may come next when the reply stays the beginning of a JSON value that validates against
// the schema (json_schema.h) and the value can still be completed in the tokens left (each token
// adds at least one character, and the vocabulary has a token of each character the completion
// needs); an end-of-generation token only once the value is whole. So the reply is valid JSON
// unless a stop string cuts it.
//
// The allowed tokens come as a bit mask (bit id % 32 of word id / 32), which the host sampler
// applies to its logits (mask()) and a GPU backend to the device's logits before its pick
// (Backend::decode_masked).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/json_schema.h"

namespace jitllm {

class Tokenizer;

// Each token's text (token_to_piece without specials: a control token has none), whether it ends
// generation, and indexes over the texts; built once per model.
struct ConstraintVocab {
    std::vector<std::string> pieces;
    std::vector<bool> eog;
    std::vector<int32_t> eog_ids;

    // Plain tokens: string content only (whole UTF-8 characters, no quote, backslash or control
    // byte): inside a string they only add characters.
    std::vector<uint16_t> plain_chars;     // characters of a plain token; 0: not plain
    std::vector<uint32_t> plain_bits;      // the plain tokens as a mask
    std::vector<int32_t> plain_by_chars;   // plain token ids by characters, ascending
    std::vector<int> plain_chars_start;    // [k]: index in plain_by_chars of the first of k characters
    // The other tokens with text: a plain prefix (whole characters) and the rest, in the order of
    // (rest, prefix characters), so that a run of equal pairs is decided once
    struct Mixed {
        int32_t id;
        uint16_t prefix_bytes, prefix_chars;
        int rest;  // index in rests
    };
    std::vector<Mixed> mixed;
    std::vector<std::string> rests;
    // Every text in a trie, nodes in preorder: node i's subtree is [i, end); its token (-1: none),
    // further tokens of the same text through same_text
    struct Node {
        uint32_t end;
        int32_t token;
        uint16_t depth;  // 1 for a first byte
        uint8_t byte;
    };
    std::vector<Node> trie;
    std::vector<int32_t> same_text;  // [id]: the next token with id's text, -1
    int max_depth = 0;               // the longest text in the trie
};
std::shared_ptr<const ConstraintVocab> constraint_vocab(const Tokenizer& tok);
std::shared_ptr<const ConstraintVocab> constraint_vocab(std::vector<std::string> pieces, std::vector<bool> eog);

class JsonConstraint {
public:
    JsonConstraint(std::shared_ptr<const JsonSchema> schema, std::shared_ptr<const ConstraintVocab> vocab);

    // The tokens that may come next (bits over the vocabulary, n_vocab rounded up to 32 bits);
    // `budget`: the tokens that may still be generated, this one included.
    const std::vector<uint32_t>& allowed(int budget);
    int n_allowed() const { return n_allowed_; }  // in the last allowed()
    // allowed(budget) as n_vocab bits (0 past the vocabulary's texts): the mask a backend takes
    // (Backend::decode_masked), valid until the next call
    const uint32_t* allowed_words(int budget, int n_vocab);
    // Sets the logits of the tokens that may not come next to -infinity (those past the
    // vocabulary's texts too). Returns how many tokens remain allowed.
    int mask(float* logits, int n_vocab, int budget);
    void accept(int32_t token);  // the token taken (an end-of-generation token changes nothing)
    bool complete() const { return m_.complete(); }
    int remaining() const { return m_.remaining(); }

private:
    void allow(int32_t id);            // the token and those of the same text
    void walk(int budget);             // every token, through the trie
    void in_string(int budget, int count, int min_length, int max_length);  // plain tokens by rule

    std::shared_ptr<const ConstraintVocab> v_;
    JsonMatcher m_;
    std::vector<JsonMatcher> depth_;  // the trie walk's matcher after each depth
    JsonMatcher scratch_;
    std::vector<uint32_t> bits_;
    std::vector<uint32_t> words_;  // allowed_words()
    int n_allowed_ = 0;
};

}  // namespace jitllm
