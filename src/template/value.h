// The values a template computes with: Python's (None, bool, int, float, str, list/tuple, dict)
// plus Jinja's undefined and callables (filters' arguments, macros, bound methods). Operations
// follow Python: truthiness, equality, ordering, str() and repr(), so that output matches Jinja2's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace jitllm::tmpl {

// A failure inside the template: line 0 where the thrower does not know it (the interpreter then
// adds the line of the node it was evaluating).
struct TemplateFailure : std::runtime_error {
    TemplateFailure(int line_, const std::string& msg) : std::runtime_error(msg), line(line_) {}
    int line;
};
[[noreturn]] void failure(const std::string& msg);
[[noreturn]] void failure_at(int line, const std::string& msg);

class Value;
class Interpreter;

struct Undefined {
    std::string name;  // what was looked up, for the message when it is used
};

// Containers nest at most kMaxNesting levels: deeper input is refused where it is built, so
// that walking (printing, comparing) and destroying a value never recurses without bound.
constexpr int kMaxNesting = 512;

struct ListData {
    std::vector<Value> items;
    bool tuple = false;  // prints as (a, b)
    int depth = 1;       // nesting: 1 + the deepest item's
    bool holds_namespace = false;
};

// An ordered dict; also the namespace() object and the loop variable (attribute access only).
struct DictData {
    enum class Kind { Dict, Namespace, Loop };
    std::vector<std::pair<Value, Value>> items;
    Kind kind = Kind::Dict;
    int depth = 1;  // nesting: 1 + the deepest item's
    bool holds_namespace = false;  // some item is (or holds) a namespace

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    void set(const Value& key, Value v);
};

struct CallArgs {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
};

struct FunctionData {
    std::string name;
    std::function<Value(Interpreter&, CallArgs&)> call;
};

using ListPtr = std::shared_ptr<ListData>;
using DictPtr = std::shared_ptr<DictData>;
using FunctionPtr = std::shared_ptr<FunctionData>;

class Value {
public:
    enum class Type { Undefined, None, Bool, Int, Float, String, List, Dict, Function };

    Value() : v_(Undefined{}) {}
    static Value undefined(std::string name) { return Value(Storage(Undefined{std::move(name)})); }
    static Value none() { return Value(Storage(nullptr)); }
    Value(bool b) : v_(b) {}
    Value(int64_t i) : v_(i) {}
    Value(int i) : v_(int64_t(i)) {}
    Value(double d) : v_(d) {}
    Value(std::string s) : v_(std::move(s)) {}
    Value(const char* s) : v_(std::string(s)) {}
    Value(ListPtr l) : v_(std::move(l)) {}
    Value(DictPtr d) : v_(std::move(d)) {}
    Value(FunctionPtr f) : v_(std::move(f)) {}
    static Value make_list(std::vector<Value> items, bool tuple = false);
    static Value make_dict(DictData::Kind kind = DictData::Kind::Dict);
    static Value make_function(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn);
    static Value from_json(const nlohmann::ordered_json& j);

    Type type() const { return Type(v_.index()); }
    bool is_undefined() const { return type() == Type::Undefined; }
    bool is_none() const { return type() == Type::None; }
    bool is_bool() const { return type() == Type::Bool; }
    bool is_int() const { return type() == Type::Int; }
    bool is_float() const { return type() == Type::Float; }
    bool is_number() const { return is_int() || is_float() || is_bool(); }
    bool is_string() const { return type() == Type::String; }
    bool is_list() const { return type() == Type::List; }
    bool is_dict() const { return type() == Type::Dict; }
    bool is_mapping() const { return is_dict() && dict_kind() == DictData::Kind::Dict; }
    bool is_function() const { return type() == Type::Function; }

    bool as_bool() const { return std::get<bool>(v_); }
    int64_t as_int() const;  // bool and int
    double as_float() const;  // bool, int and float
    const std::string& str() const { return std::get<std::string>(v_); }
    const ListPtr& list() const { return std::get<ListPtr>(v_); }
    const DictPtr& dict() const { return std::get<DictPtr>(v_); }
    DictData::Kind dict_kind() const { return dict()->kind; }
    const FunctionPtr& function() const { return std::get<FunctionPtr>(v_); }
    const std::string& undefined_name() const { return std::get<Undefined>(v_).name; }

private:
    using Storage = std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string, ListPtr,
                                 DictPtr, FunctionPtr>;
    explicit Value(Storage s) : v_(std::move(s)) {}
    Storage v_;
};

int nesting(const Value& v);  // a container's depth; 0 for the others
void check_nesting(int depth);  // fails past kMaxNesting
// Whether `v` is or holds the namespace `ns` (storing it there would make a cycle).
bool holds(const Value& v, const DictData* ns);

// Python's semantics on values.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
int compare(const Value& a, const Value& b);  // <0, 0, >0; fails where Python raises TypeError
std::string py_str(const Value& v);            // str(v); undefined is ""
std::string py_repr(const Value& v);           // repr(v)
std::string float_repr(double d);              // repr(float): shortest round-trip digits
const char* type_name(const Value& v);         // "str", "int", "dict", ...

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as Hugging Face's tojson filter
// calls it. indent < 0: none. The separators default as Python's: (", ", ": "), or (",", ": ") with
// an indent.
struct JsonStyle {
    bool ensure_ascii = false;
    int indent = -1;
    std::string item_sep, key_sep;
    bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style);

// The items a for loop or a filter walks: a list's, a dict's keys, a string's characters; an
// undefined gives none. Fails for anything else.
std::vector<Value> iterate(const Value& v);
// len(v): str (code points), list, dict; an undefined is 0.
int64_t length(const Value& v);

}  // namespace jitllm::tmpl
