// Constrained JSON output: a JSON schema compiled to a graph of nodes, and a matcher that reads
// text byte by byte and knows at every point whether the text can still become a JSON value that
// validates, and how many more characters that takes at the least. The token mask
// (token_constraint.h) is built on it.
//
// Schema keywords: type (a name or a list), properties, required, additionalProperties (false, or
// a schema), items, minItems, maxItems, enum, const, anyOf / oneOf (alternatives that start with
// different characters: different JSON types), minLength, maxLength, and the annotations
// (title, description, default, examples, $schema, $id, format, strict). Others are refused. An
// object with `properties` gets only those (the output still validates where additional
// properties would be allowed); one without gets any keys.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace jitllm {

struct SchemaNode {
    enum class Kind { Object, Array, String, Number, Integer, Boolean, Null, Literals, Union };
    Kind kind = Kind::Null;
    // Object
    std::vector<std::string> keys;  // declared properties, in order
    std::vector<int> values;        // their schemas
    std::vector<bool> required;
    int additional = -1;            // schema of other keys' values; -1: no other keys
    // Array
    int items = -1;
    int min_items = 0, max_items = -1;
    // String
    int min_length = 0, max_length = -1;
    // Literals (enum, const, true/false/null): the JSON texts allowed
    std::vector<std::string> texts;
    // Union: alternatives, each starting with different characters
    std::vector<int> alternatives;
    // the shortest JSON text this schema accepts
    int min_len = 0;
};

struct JsonSchema {
    std::vector<SchemaNode> nodes;
    int root = 0;
};

// Compiles a JSON schema; throws Error naming the keyword (`where` starts the message:
// "response_format.json_schema.schema").
std::shared_ptr<const JsonSchema> compile_json_schema(const nlohmann::json& schema, const std::string& where);
// Any JSON object ({type: json_object}).
std::shared_ptr<const JsonSchema> json_object_schema();

// Reads JSON text byte by byte against a schema.
class JsonMatcher {
public:
    explicit JsonMatcher(std::shared_ptr<const JsonSchema> s);

    // Consumes one byte; false (and the state unchanged) when no valid text continues with it.
    bool feed(char c);
    bool feed(std::string_view text);  // all or nothing
    // Consumes text in place, without a copy: on false the state is no longer usable (the token
    // mask advances a scratch copy).
    bool advance(std::string_view text);
    // Whether the text so far is a whole value (white space may follow).
    bool complete() const;
    // The fewest characters that make the text so far a whole value.
    int remaining() const;
    // Inside a string where plain text (whole UTF-8 characters without a quote, backslash or
    // control byte) only adds characters: a string value with no escape or character pending, or
    // the key of an object that takes any key and declares none. Gives the characters so far and
    // the length limits (-1: none; a key has none).
    bool in_plain_string(int* count, int* min_length, int* max_length) const;

    struct Frame;

private:
    enum class Result { Reject, Accept, Again };  // Again: the frame ended, the byte goes to its parent
    bool step(char c);
    bool space(char c);
    void pop_value();
    Result feed_value(Frame& f, char c);
    Result feed_object(Frame& f, char c);
    Result feed_array(Frame& f, char c);
    Result feed_string(Frame& f, char c);
    Result feed_number(Frame& f, char c);
    Result feed_literal(Frame& f, char c);
    Result close_key(Frame& k);
    bool key_possible(const Frame& obj) const;
    bool required_done(const Frame& obj) const;
    std::vector<int> key_candidates(const Frame& obj, const std::string& prefix) const;
    int frame_cost(size_t i) const;
    int object_cost(size_t i) const;
    int missing_cost(const Frame& f, int skip) const;

    std::shared_ptr<const JsonSchema> s_;
    std::vector<Frame> stack_;
    bool done_ = false;
    int ws_run_ = 0;           // white space since the last token
    bool ws_newline_ = false;  // ... which began with a newline
};

struct JsonMatcher::Frame {
    enum class T : uint8_t { Value, Object, Array, String, Number, Literal } t = T::Value;
    uint8_t sub = 0;
    bool key = false;       // String: an object key
    int node = 0;
    uint64_t used = 0;      // Object: declared properties given so far (bit i)
    int member = -1;        // Object: the property being read (-2: another key)
    int count = 0;          // Array: items; String: characters
    int utf8_need = 0;      // String: continuation bytes still due
    int escape = 0;         // String: 1 after a backslash, 2..5 hex digits of \u due
    std::string text;       // String (key): the key so far; Literal: the text so far
};

}  // namespace jitllm
