// JSON schema -> node graph (see json_schema.h); the matcher is json_matcher.cpp.
#include "runtime/json_schema.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace jitllm {

namespace {

using json = nlohmann::json;
using Kind = SchemaNode::Kind;

constexpr int kMaxProperties = 64;  // an object's declared properties (the matcher's bit set)
constexpr int kMaxNodes = 4096;
constexpr int kMaxDepth = 32;

// The characters a node's text can start with.
std::set<char> first_chars(const JsonSchema& s, int n) {
    const SchemaNode& x = s.nodes[size_t(n)];
    switch (x.kind) {
        case Kind::Object: return {'{'};
        case Kind::Array: return {'['};
        case Kind::String: return {'"'};
        case Kind::Number:
        case Kind::Integer: return {'-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'};
        case Kind::Boolean: return {'t', 'f'};
        case Kind::Null: return {'n'};
        case Kind::Literals: {
            std::set<char> out;
            for (const auto& t : x.texts) out.insert(t[0]);
            return out;
        }
        case Kind::Union: {
            std::set<char> out;
            for (int a : x.alternatives) {
                const auto f = first_chars(s, a);
                out.insert(f.begin(), f.end());
            }
            return out;
        }
    }
    return {};
}

class Compiler {
public:
    explicit Compiler(std::string where) : where_(std::move(where)) {}

    std::shared_ptr<const JsonSchema> run(const json& schema) {
        s_->root = compile(schema, where_, 0);
        min_lengths();
        return s_;
    }

    // The node of any JSON value (a union of every kind; objects and arrays of any values).
    int any() {
        if (any_ >= 0) return any_;
        any_ = add(SchemaNode{});
        SchemaNode obj, arr, str, num, lit;
        obj.kind = Kind::Object;
        obj.additional = any_;
        arr.kind = Kind::Array;
        arr.items = any_;
        str.kind = Kind::String;
        num.kind = Kind::Number;
        lit.kind = Kind::Literals;
        lit.texts = {"true", "false", "null"};
        const std::vector<int> alts = {add(obj), add(arr), add(str), add(num), add(lit)};
        s_->nodes[size_t(any_)].kind = Kind::Union;
        s_->nodes[size_t(any_)].alternatives = alts;
        return any_;
    }

private:
    [[noreturn]] void fail_at(const std::string& where, const std::string& what) { fail("{}: {}", where, what); }

    int add(SchemaNode n) {
        if (s_->nodes.size() >= size_t(kMaxNodes)) fail_at(where_, "the schema is too large");
        s_->nodes.push_back(std::move(n));
        return int(s_->nodes.size()) - 1;
    }

    static bool annotation(const std::string& k) {
        static const std::set<std::string> a = {"title", "description", "default", "examples", "$schema", "$id",
                                                "$comment", "format", "strict", "name"};
        return a.count(k) != 0;
    }

    int count(const json& v, const std::string& where) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 100000)
            fail_at(where, "expected an integer in [0, 100000]");
        return int(v.get<int64_t>());
    }

    int compile(const json& x, const std::string& where, int depth) {
        if (depth > kMaxDepth) fail_at(where, "the schema nests deeper than 32 levels");
        if (x.is_boolean() && x.get<bool>()) return any();
        if (!x.is_object()) fail_at(where, "expected a schema object");
        for (const auto& [k, v] : x.items()) {
            static const std::set<std::string> known = {"type", "properties", "required", "additionalProperties",
                                                        "items", "minItems", "maxItems", "enum", "const", "anyOf",
                                                        "oneOf", "minLength", "maxLength"};
            if (!known.count(k) && !annotation(k))
                fail_at(where + "." + k, "this keyword is not supported by constrained output");
        }
        if (x.contains("const")) return literals({x["const"]});
        if (x.contains("enum")) {
            if (!x["enum"].is_array() || x["enum"].empty()) fail_at(where + ".enum", "expected a non-empty array");
            return literals(x["enum"]);
        }
        for (const char* k : {"anyOf", "oneOf"})
            if (x.contains(k)) {
                if (!x[k].is_array() || x[k].empty()) fail_at(where + "." + k, "expected a non-empty array");
                std::vector<int> alts;
                for (size_t i = 0; i < x[k].size(); ++i)
                    alts.push_back(compile(x[k][i], where + "." + k + "[" + std::to_string(i) + "]", depth + 1));
                return union_of(alts, where + "." + k);
            }
        if (!x.contains("type")) {
            if (x.contains("properties")) return typed(x, "object", where, depth);
            if (x.contains("items")) return typed(x, "array", where, depth);
            return any();
        }
        const json& t = x["type"];
        if (t.is_string()) return typed(x, t.get<std::string>(), where, depth);
        if (!t.is_array() || t.empty()) fail_at(where + ".type", "expected a type name or a list of them");
        std::vector<int> alts;
        for (const auto& name : t) {
            if (!name.is_string()) fail_at(where + ".type", "expected type names");
            alts.push_back(typed(x, name.get<std::string>(), where, depth));
        }
        return union_of(alts, where + ".type");
    }

    int literals(const json& values) {
        SchemaNode n;
        n.kind = Kind::Literals;
        for (const auto& v : values) n.texts.push_back(v.dump(-1, ' ', false, json::error_handler_t::replace));
        return add(std::move(n));
    }

    int union_of(const std::vector<int>& alts, const std::string& where) {
        std::set<char> seen;
        for (int a : alts)
            for (char c : first_chars(*s_, a))
                if (!seen.insert(c).second)
                    fail_at(where, "alternatives must start differently (be of different types) for "
                                   "constrained output");
        SchemaNode n;
        n.kind = Kind::Union;
        n.alternatives = alts;
        return add(std::move(n));
    }

    int typed(const json& x, const std::string& type, const std::string& where, int depth) {
        SchemaNode n;
        if (type == "object") return object(x, where, depth);
        if (type == "array") {
            n.kind = Kind::Array;
            n.items = x.contains("items") ? compile(x["items"], where + ".items", depth + 1) : any();
            if (x.contains("minItems")) n.min_items = count(x["minItems"], where + ".minItems");
            if (x.contains("maxItems")) n.max_items = count(x["maxItems"], where + ".maxItems");
            if (n.max_items >= 0 && n.max_items < n.min_items) fail_at(where + ".maxItems", "below minItems");
        } else if (type == "string") {
            n.kind = Kind::String;
            if (x.contains("minLength")) n.min_length = count(x["minLength"], where + ".minLength");
            if (x.contains("maxLength")) n.max_length = count(x["maxLength"], where + ".maxLength");
            if (n.max_length >= 0 && n.max_length < n.min_length) fail_at(where + ".maxLength", "below minLength");
        } else if (type == "number" || type == "integer") {
            n.kind = type == "number" ? Kind::Number : Kind::Integer;
        } else if (type == "boolean") {
            return literals(json::array({true, false}));
        } else if (type == "null") {
            return literals(json::array({nullptr}));
        } else {
            fail_at(where + ".type", "unknown type \"" + type + "\"");
        }
        return add(std::move(n));
    }

    int object(const json& x, const std::string& where, int depth) {
        SchemaNode n;
        n.kind = Kind::Object;
        if (x.contains("properties")) {
            const json& ps = x["properties"];
            if (!ps.is_object()) fail_at(where + ".properties", "expected an object");
            if (ps.size() > size_t(kMaxProperties)) fail_at(where + ".properties", "more than 64 properties");
            for (const auto& [k, v] : ps.items()) {
                if (k.find_first_of("\"\\") != std::string::npos ||
                    std::any_of(k.begin(), k.end(), [](char c) { return uint8_t(c) < 0x20; }))
                    fail_at(where + ".properties", "property names with quotes, backslashes or control characters "
                                                   "are not supported");
                n.keys.push_back(k);
                n.values.push_back(compile(v, where + ".properties." + k, depth + 1));
            }
        }
        n.required.assign(n.keys.size(), false);
        if (x.contains("required")) {
            if (!x["required"].is_array()) fail_at(where + ".required", "expected an array of names");
            for (const auto& r : x["required"]) {
                const auto it = r.is_string() ? std::find(n.keys.begin(), n.keys.end(), r.get<std::string>())
                                              : n.keys.end();
                if (it == n.keys.end()) fail_at(where + ".required", "names a property the schema does not declare");
                n.required[size_t(it - n.keys.begin())] = true;
            }
        }
        const json ap = x.value("additionalProperties", json(!x.contains("properties")));
        if (ap.is_boolean()) n.additional = ap.get<bool>() && !x.contains("properties") ? any() : -1;
        else n.additional = compile(ap, where + ".additionalProperties", depth + 1);
        return add(std::move(n));
    }

    // The shortest text of each node, by relaxation (the graph may be cyclic).
    void min_lengths() {
        auto& ns = s_->nodes;
        for (auto& n : ns) n.min_len = 1 << 24;
        for (bool changed = true; changed;) {
            changed = false;
            for (auto& n : ns) {
                int m = n.min_len;
                switch (n.kind) {
                    case Kind::Object: {
                        int req = 0, sum = 2;
                        for (size_t i = 0; i < n.keys.size(); ++i)
                            if (n.required[i]) {
                                sum += int(n.keys[i].size()) + 3 + ns[size_t(n.values[i])].min_len + (req++ ? 1 : 0);
                            }
                        m = sum;
                        break;
                    }
                    case Kind::Array:
                        m = 2 + (n.min_items ? n.min_items * ns[size_t(n.items)].min_len + n.min_items - 1 : 0);
                        break;
                    case Kind::String: m = 2 + n.min_length; break;
                    case Kind::Number:
                    case Kind::Integer: m = 1; break;
                    case Kind::Boolean: m = 4; break;
                    case Kind::Null: m = 4; break;
                    case Kind::Literals:
                        for (const auto& t : n.texts) m = std::min(m, int(t.size()));
                        break;
                    case Kind::Union:
                        for (int a : n.alternatives) m = std::min(m, ns[size_t(a)].min_len);
                        break;
                }
                m = std::min(m, 1 << 24);
                if (m < n.min_len) {
                    n.min_len = m;
                    changed = true;
                }
            }
        }
    }

    std::string where_;
    std::shared_ptr<JsonSchema> s_ = std::make_shared<JsonSchema>();
    int any_ = -1;
};

}  // namespace

std::shared_ptr<const JsonSchema> compile_json_schema(const nlohmann::json& schema, const std::string& where) {
    return Compiler(where).run(schema);
}

std::shared_ptr<const JsonSchema> json_object_schema() {
    return Compiler("response_format").run(json{{"type", "object"}});
}

}  // namespace jitllm
