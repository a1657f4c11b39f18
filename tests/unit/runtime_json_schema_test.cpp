// Constrained JSON output (runtime/json_schema.h): the matcher against a JSON-schema validator
// written here (independent of it), on hand-picked texts and on 300 random schemas:
//  - sound: every text the matcher takes as whole parses and validates;
//  - remaining() is the exact shortest completion: no byte lowers it by more than one, and some
//    byte of the schema's alphabet lowers it by exactly one (so a reply always fits the budget);
//  - random walks that follow the budget end in valid JSON.
// And the token mask: on a small vocabulary, and on two real ones against its definition (each
// token's text tried on the matcher).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "core/error.h"
#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"
#include "runtime/json_schema.h"
#include "runtime/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {
namespace {

using json = nlohmann::json;

size_t code_points(const std::string& s) {
    size_t n = 0;
    for (char c : s) n += (uint8_t(c) & 0xC0) != 0x80;
    return n;
}

// JSON-schema validation of the keywords the matcher takes.
bool validates(const json& v, const json& s) {
    if (s.is_boolean()) return s.get<bool>();
    if (s.contains("const")) return v == s["const"];
    if (s.contains("enum")) return std::find(s["enum"].begin(), s["enum"].end(), v) != s["enum"].end();
    for (const char* k : {"anyOf", "oneOf"})
        if (s.contains(k)) {
            int n = 0;
            for (const auto& a : s[k]) n += validates(v, a);
            return std::string(k) == "anyOf" ? n > 0 : n == 1;
        }
    if (s.contains("type")) {
        const json types = s["type"].is_array() ? s["type"] : json::array({s["type"]});
        bool ok = false;
        for (const auto& t : types) {
            const std::string n = t;
            ok = ok || (n == "object" && v.is_object()) || (n == "array" && v.is_array()) ||
                 (n == "string" && v.is_string()) || (n == "number" && v.is_number()) ||
                 (n == "integer" && (v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) ==
                                                                                       v.get<double>()))) ||
                 (n == "boolean" && v.is_boolean()) || (n == "null" && v.is_null());
        }
        if (!ok) return false;
    }
    if (v.is_object()) {
        for (const auto& r : s.value("required", json::array()))
            if (!v.contains(r.get<std::string>())) return false;
        const json props = s.value("properties", json::object());
        for (const auto& [k, x] : v.items()) {
            if (props.contains(k)) {
                if (!validates(x, props[k])) return false;
            } else if (s.contains("additionalProperties") && !validates(x, s["additionalProperties"])) {
                return false;
            }
        }
    }
    if (v.is_array()) {
        if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
        if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
        if (s.contains("items"))
            for (const auto& x : v)
                if (!validates(x, s["items"])) return false;
    }
    if (v.is_string()) {
        const size_t n = code_points(v.get<std::string>());
        if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return false;
        if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return false;
    }
    return true;
}

// The whole text through a matcher: complete and valid, or refused on the way.
bool matches(const std::shared_ptr<const JsonSchema>& s, const std::string& text) {
    JsonMatcher m(s);
    return m.feed(text) && m.complete();
}

TEST(JsonSchema, hand_picked_texts) {
    const json schema = json::parse(R"({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 4}, "n": {"type": "integer"}, "x": {"type": "number"},
        "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}, "minItems": 1, "maxItems": 2},
        "opt": {"type": ["string", "null"]}}, "required": ["name", "n"], "additionalProperties": false})");
    const auto s = compile_json_schema(schema, "schema");
    EXPECT_TRUE(matches(s, R"({"name":"abcd","n":-12})"));
    EXPECT_TRUE(matches(s, "{\n  \"n\": 0, \"name\": \"\\u00e9\\n\",\n  \"tags\": [\"a\", 3], \"opt\": null}"));
    EXPECT_TRUE(matches(s, R"({"name":"é✓","n":1,"x":-0.5e+3})"));
    EXPECT_FALSE(matches(s, R"({"name":"abcde","n":1})"));        // maxLength
    EXPECT_FALSE(matches(s, R"({"name":"a"})"));                  // required n
    EXPECT_FALSE(matches(s, R"({"name":"a","n":1.5})"));          // integer
    EXPECT_FALSE(matches(s, R"({"name":"a","n":01})"));           // leading zero
    EXPECT_FALSE(matches(s, R"({"name":"a","n":1,"zz":1})"));     // undeclared
    EXPECT_FALSE(matches(s, R"({"name":"a","n":1,"n":2})"));      // twice
    EXPECT_FALSE(matches(s, R"({"name":"a","n":1,"tags":[]})"));  // minItems
    EXPECT_FALSE(matches(s, R"({"name":"a","n":1,"tags":["a","b","a"]})"));  // maxItems
    EXPECT_FALSE(matches(s, R"({"name":"a","n":1,"tags":["c"]})"));          // enum
    EXPECT_FALSE(matches(s, "{\"name\":\"a\tb\",\"n\":1}"));                  // control character
    EXPECT_FALSE(matches(s, "{\"name\":\"\xff\",\"n\":1}"));                  // invalid UTF-8
    EXPECT_FALSE(matches(s, "{   \"name\":\"a\",\"n\":1}"));                   // three spaces
    EXPECT_EQ(JsonMatcher(s).remaining(), int(std::string(R"({"name":"","n":0})").size()));
    EXPECT_TRUE(matches(json_object_schema(), R"({"any": [1, {"deep": null}, "x", true]})"));
    EXPECT_FALSE(matches(json_object_schema(), "[1]"));
}

TEST(JsonSchema, unsupported_keywords_are_named) {
    auto err = [](const char* s) {
        try {
            compile_json_schema(json::parse(s), "response_format.json_schema.schema");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(err(R"({"type": "string", "pattern": "a+"})").find("schema.pattern"), std::string::npos);
    EXPECT_NE(err(R"({"anyOf": [{"type": "object"}, {"type": "object"}]})").find("start differently"),
              std::string::npos);
    EXPECT_NE(err(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})").find("required"),
              std::string::npos);
    EXPECT_EQ(err(R"({"type": "array", "items": {"type": "string"}, "title": "t", "description": "d"})"), "");
}

// A random schema of the supported keywords.
json random_schema(std::mt19937& rng, int depth) {
    auto pick = [&](int n) { return int(rng() % unsigned(n)); };
    const int kind = depth >= 3 ? 3 + pick(7) : pick(10);
    switch (kind) {
        case 0:
        case 1: {
            json s = {{"type", "object"}, {"properties", json::object()}};
            json req = json::array();
            static const char* names[] = {"id", "name", "tags", "a", "value", "ok", "items", "b2"};
            for (int i = 0, n = 1 + pick(4); i < n; ++i) {
                const std::string k = names[pick(8)];
                s["properties"][k] = random_schema(rng, depth + 1);
                if (pick(2) && std::find(req.begin(), req.end(), k) == req.end()) req.push_back(k);
            }
            if (!req.empty()) s["required"] = req;
            if (pick(2)) s["additionalProperties"] = false;
            return s;
        }
        case 2: {
            json s = {{"type", "array"}, {"items", random_schema(rng, depth + 1)}};
            const int lo = pick(3);
            if (pick(2)) s["minItems"] = lo;
            if (pick(2)) s["maxItems"] = lo + pick(3);
            return s;
        }
        case 3: {
            json s = {{"type", "string"}};
            if (pick(2)) s["maxLength"] = 1 + pick(8);
            if (pick(3) == 0) s["minLength"] = pick(2);
            return s;
        }
        case 4: return {{"type", "integer"}};
        case 5: return {{"type", "number"}};
        case 6: return {{"type", "boolean"}};
        case 7: return {{"type", pick(2) ? json("null") : json::array({"string", "null"})}};
        case 8: return {{"enum", json::array({"red", "green", 7, nullptr})}};
        default: return {{"const", pick(2) ? json("fixed") : json(42)}};
    }
}

// The bytes a schema's texts are made of, white space and a few more.
std::string alphabet(const json& schema) {
    std::set<char> cs = {'{', '}', '[', ']', '"', ':', ',', ' ', '\n', '-', '.', 'e', '0', '1', '7', 'x', '\\', 'n'};
    const std::string dump = schema.dump();
    cs.insert(dump.begin(), dump.end());
    for (const char* lit : {"true", "false", "null"}) cs.insert(lit, lit + 4);
    return std::string(cs.begin(), cs.end());
}

TEST(JsonSchema, random_schemas_sound_exact_and_completable) {
    std::mt19937 rng(2024);
    for (int n = 0; n < 300; ++n) {
        const json schema = random_schema(rng, 0);
        const auto s = compile_json_schema(schema, "schema");
        const std::string abc = alphabet(schema);
        JsonMatcher m(s);
        std::string text;
        for (int step = 0; step < 600 && !(m.complete() && (step > 200 || rng() % 8 == 0)); ++step) {
            const int before = m.remaining();
            std::vector<char> any, progress;
            for (char c : abc) {
                JsonMatcher t = m;
                if (!t.feed(c)) continue;
                ASSERT_GE(t.remaining(), before - 1) << schema.dump() << " after " << text << c;
                any.push_back(c);
                if (t.remaining() == before - 1) progress.push_back(c);
            }
            if (before > 0) {
                ASSERT_FALSE(progress.empty()) << schema.dump() << " stuck after " << text;
            }
            if (any.empty()) break;
            const std::vector<char>& from = step > 150 || rng() % 3 == 0 ? progress : any;
            if (from.empty()) break;
            const char c = from[rng() % from.size()];
            ASSERT_TRUE(m.feed(c));
            text += c;
        }
        ASSERT_TRUE(m.complete()) << schema.dump() << "\n" << text;
        const json v = json::parse(text, nullptr, false);
        ASSERT_FALSE(v.is_discarded()) << text;
        EXPECT_TRUE(validates(v, schema)) << schema.dump() << "\n" << text;
        // mutations: whatever the matcher takes whole validates
        for (int k = 0; k < 20; ++k) {
            std::string t = text;
            t[rng() % t.size()] = abc[rng() % abc.size()];
            if (!matches(s, t)) continue;
            const json w = json::parse(t, nullptr, false);
            ASSERT_FALSE(w.is_discarded()) << t;
            EXPECT_TRUE(validates(w, schema)) << schema.dump() << "\n" << t;
        }
    }
}

TEST(JsonConstraint, mask_keeps_valid_and_completable_tokens) {
    const auto v = constraint_vocab({"", "{", "}", "\"", "a", "\":", "1", " ", "{\"a\":1}", "x", "{"},
                                    {true, false, false, false, false, false, false, false, false, false, false});
    const auto s = compile_json_schema(json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}},
                                                       "required": ["a"]})"),
                                       "schema");
    JsonConstraint c(s, v);
    std::vector<float> logits(v->pieces.size(), 0.0f);
    EXPECT_EQ(c.mask(logits.data(), int(logits.size()), 100), 4);  // "{" twice, " ", the whole object
    EXPECT_EQ(logits[1], 0.0f);
    EXPECT_EQ(logits[8], 0.0f);
    EXPECT_EQ(logits[10], 0.0f);
    EXPECT_TRUE(std::isinf(logits[0]) && std::isinf(logits[9]));
    // a budget of 7 tokens: " " would leave 6 for the 7 characters still needed
    std::fill(logits.begin(), logits.end(), 0.0f);
    EXPECT_EQ(c.mask(logits.data(), int(logits.size()), 7), 3);
    EXPECT_TRUE(std::isinf(logits[7]));
    c.accept(8);
    EXPECT_TRUE(c.complete());
    std::fill(logits.begin(), logits.end(), 0.0f);
    EXPECT_EQ(c.mask(logits.data(), int(logits.size()), 5), 2);  // the end token, or a space
    EXPECT_EQ(logits[0], 0.0f);
}

// The mask over a real vocabulary equals the token-by-token definition (each text tried on the
// matcher, the budget kept, end tokens once the value is whole), along random walks of random
// schemas with budgets from loose to exact.
TEST(JsonConstraint, mask_of_a_real_vocabulary_is_the_definition) {
    for (const char* name : {"llama3-npm", "llama-spm"}) {
        auto g = test::open_data_gguf(std::string("testdata/vocab/ggml-vocab-") + name + ".gguf");
        const auto tok = Tokenizer::from_gguf(*g);
        const auto v = constraint_vocab(*tok);
        const int n = tok->n_vocab();
        std::mt19937 rng(7);
        std::vector<double> us;  // the time of each allowed()
        for (int k = 0; k < 8; ++k) {
            const json schema = k == 0 ? json{{"type", "object"}} : random_schema(rng, 0);
            const auto s = k == 0 ? json_object_schema() : compile_json_schema(schema, "schema");
            JsonConstraint c(s, v);
            JsonMatcher m(s);
            std::string text;
            for (int step = 0; step < 14 && !(m.complete() && rng() % 3 == 0); ++step) {
                const int budget = m.remaining() + 1 + (rng() % 2 ? int(rng() % 4) : 1000);
                const auto t0 = std::chrono::steady_clock::now();
                const std::vector<uint32_t>& bits = c.allowed(budget);
                us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
                std::vector<int32_t> ok;
                for (int32_t id = 0; id < n; ++id) {
                    const std::string& p = v->pieces[size_t(id)];
                    JsonMatcher t = m;
                    const bool want = v->eog[size_t(id)] ? m.complete()
                                      : !p.empty() && t.feed(p) && t.remaining() <= budget - 1;
                    const bool got = bits[size_t(id) / 32] >> (id % 32) & 1u;
                    ASSERT_EQ(got, want) << name << " " << schema.dump() << " after '" << text << "' token " << id
                                         << " '" << p << "' budget " << budget;
                    if (want && !v->eog[size_t(id)]) ok.push_back(id);
                }
                ASSERT_EQ(c.n_allowed(), int(ok.size()) + (m.complete() ? int(v->eog_ids.size()) : 0));
                if (ok.empty()) break;
                const int32_t id = ok[rng() % ok.size()];
                c.accept(id);
                ASSERT_TRUE(m.feed(v->pieces[size_t(id)]));
                text += v->pieces[size_t(id)];
            }
        }
        std::sort(us.begin(), us.end());
        std::printf("[mask] %s: %d tokens, %zu masks, median %.0f us, 90th percentile %.0f us\n", name, n,
                    us.size(), us[us.size() / 2], us[us.size() * 9 / 10]);
    }
}

}  // namespace
}  // namespace jitllm
