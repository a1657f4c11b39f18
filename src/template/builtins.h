// The template's built-in names: global functions (range, namespace, dict, raise_exception,
// strftime_now, cycler, joiner), filters, tests, and the methods of str, dict and list values
// that Jinja2's immutable sandbox allows.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "template/interpreter.h"
#include "template/value.h"

namespace jitllm::tmpl {

// Binds call arguments to a Python-like signature: positional first, then keywords by name.
// Fails on an unknown keyword, a parameter given twice, or too many positional arguments.
class Params {
public:
    Params(const std::string& fname, const CallArgs& args, std::initializer_list<const char*> names);
    bool has(size_t i) const { return !vals_[i].is_undefined(); }
    const Value& get(size_t i) const { return vals_[i]; }
    Value get_or(size_t i, Value dflt) const { return has(i) ? vals_[i] : dflt; }
    std::string str(size_t i, const std::string& dflt = "") const;  // a str argument
    int64_t integer(size_t i, int64_t dflt) const;                    // an int argument
    std::optional<std::string> opt_str(size_t i) const;              // a str or none argument
    bool flag(size_t i, bool dflt) const { return has(i) ? truthy(vals_[i]) : dflt; }

private:
    std::string fname_;
    std::vector<Value> vals_;
};

Value global_function(const std::string& name);  // undefined where there is none
Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args);
bool has_test(const std::string& name);
// obj.name as a bound method; undefined where the type has no such (allowed) method.
Value method(const Value& obj, const std::string& name);
// Python's `fmt % args` for str.
std::string percent_format(const std::string& fmt, const Value& args);

}  // namespace jitllm::tmpl
