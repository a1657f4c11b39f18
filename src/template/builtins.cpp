// Global functions, tests, and the methods of str, dict and list (see builtins.h); filters are in
// filters.cpp.
#include "template/builtins.h"

#include <ctime>
#include <map>

#include "template/pystr.h"

namespace jitllm::tmpl {

Params::Params(const std::string& fname, const CallArgs& args, std::initializer_list<const char*> names)
    : fname_(fname), vals_(names.size()) {
    if (args.pos.size() > names.size())
        failure(fname + "() takes at most " + std::to_string(names.size()) + " arguments, given " +
                std::to_string(args.pos.size()));
    for (size_t i = 0; i < args.pos.size(); ++i) vals_[i] = args.pos[i];
    for (const auto& [k, v] : args.kw) {
        size_t i = 0;
        for (const char* n : names) {
            if (k == n) break;
            ++i;
        }
        if (i == names.size()) failure(fname + "() got an unexpected argument '" + k + "'");
        if (i < args.pos.size()) failure(fname + "() got argument '" + k + "' twice");
        vals_[i] = v;
    }
}

std::string Params::str(size_t i, const std::string& dflt) const {
    if (!has(i)) return dflt;
    if (!vals_[i].is_string())
        failure(fname_ + "() expects a string argument, found a " + type_name(vals_[i]));
    return vals_[i].str();
}

std::optional<std::string> Params::opt_str(size_t i) const {
    if (!has(i) || vals_[i].is_none()) return std::nullopt;
    return str(i);
}

int64_t Params::integer(size_t i, int64_t dflt) const {
    if (!has(i) || vals_[i].is_none()) return dflt;
    if (!vals_[i].is_int() && !vals_[i].is_bool())
        failure(fname_ + "() expects an integer argument, found a " + type_name(vals_[i]));
    return vals_[i].as_int();
}

namespace {

using Fn = std::function<Value(Interpreter&, CallArgs&)>;

Value range_fn(Interpreter&, CallArgs& a) {
    if (!a.kw.empty() || a.pos.empty() || a.pos.size() > 3) failure("range() takes 1 to 3 integer arguments");
    std::vector<int64_t> n;
    for (const auto& v : a.pos) {
        if (!v.is_int() && !v.is_bool()) failure(std::string("range() expects integers, found a ") + type_name(v));
        n.push_back(v.as_int());
    }
    const int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
    if (step == 0) failure("range() step must not be zero");
    const int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                   : (start > stop ? (start - stop - step - 1) / -step : 0);
    if (count > 100000) failure("range() of more than 100000 items");  // as Jinja2's sandbox
    std::vector<Value> out;
    for (int64_t i = 0; i < count; ++i) out.emplace_back(start + i * step);
    return Value::make_list(std::move(out));
}

Value dict_from(CallArgs& a, DictData::Kind kind, const char* fname) {
    Value d = Value::make_dict(kind);
    if (a.pos.size() > 1) failure(std::string(fname) + "() takes at most one positional argument");
    if (!a.pos.empty()) {
        if (!a.pos[0].is_mapping()) failure(std::string(fname) + "() expects a dict, found a " + type_name(a.pos[0]));
        d.dict()->items = a.pos[0].dict()->items;
        d.dict()->depth = a.pos[0].dict()->depth;
    }
    for (auto& [k, v] : a.kw) d.dict()->set(Value(k), v);
    return d;
}

Value strftime_fn(Interpreter&, CallArgs& a) {
    Params p("strftime_now", a, {"format"});
    const std::string fmt = p.str(0);
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[512];
    const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
    if (n == 0 && !fmt.empty()) failure("strftime_now(): the format gives no text or more than 511 bytes");
    return Value(std::string(buf, n));
}

Value joiner_fn(Interpreter&, CallArgs& a) {
    Params p("joiner", a, {"sep"});
    auto used = std::make_shared<bool>(false);
    const std::string sep = p.str(0, ", ");
    return Value::make_function("joiner", [used, sep](Interpreter&, CallArgs&) {
        if (!*used) {
            *used = true;
            return Value(std::string());
        }
        return Value(sep);
    });
}

const std::map<std::string, Fn>& globals() {
    static const std::map<std::string, Fn> g = {
        {"range", range_fn},
        {"namespace", [](Interpreter&, CallArgs& a) { return dict_from(a, DictData::Kind::Namespace, "namespace"); }},
        {"dict", [](Interpreter&, CallArgs& a) { return dict_from(a, DictData::Kind::Dict, "dict"); }},
        {"raise_exception",
         [](Interpreter&, CallArgs& a) -> Value {
             Params p("raise_exception", a, {"message"});
             failure("the template raised an error: " + py_str(p.get(0)));
         }},
        {"strftime_now", strftime_fn},
        {"joiner", joiner_fn},
    };
    return g;
}

bool sameas(const Value& a, const Value& b) {
    if (a.type() != b.type()) return false;
    switch (a.type()) {
        case Value::Type::List: return a.list() == b.list();
        case Value::Type::Dict: return a.dict() == b.dict();
        case Value::Type::Function: return a.function() == b.function();
        default: return equals(a, b);
    }
}

// A test's comparison argument.
const Value& other(const std::string& name, const CallArgs& a) {
    if (a.pos.size() != 1 || !a.kw.empty()) failure("the test '" + name + "' takes one argument");
    return a.pos[0];
}

int cmp_test(const std::string& name, const Value& v, const CallArgs& a) { return compare(v, other(name, a)); }

using TestFn = bool (*)(Interpreter&, const std::string&, const Value&, CallArgs&);

const std::map<std::string, TestFn>& tests() {
#define T(body) [](Interpreter & in, const std::string& name, const Value& v, CallArgs& a) -> bool { \
    (void)in; (void)name; (void)a; body; }
    static const std::map<std::string, TestFn> t = {
        {"defined", T(return !v.is_undefined())},
        {"undefined", T(return v.is_undefined())},
        {"none", T(return v.is_none())},
        {"boolean", T(return v.is_bool())},
        {"true", T(return v.is_bool() && v.as_bool())},
        {"false", T(return v.is_bool() && !v.as_bool())},
        {"integer", T(return v.is_int())},
        {"float", T(return v.is_float())},
        {"number", T(return v.is_number())},
        {"string", T(return v.is_string())},
        {"mapping", T(return v.is_mapping())},
        {"sequence", T(return v.is_string() || v.is_list() || v.is_mapping())},
        {"iterable", T(return v.is_string() || v.is_list() || v.is_mapping())},
        {"callable", T(return v.is_function())},
        {"lower", T(const std::string s = py_str(v); return py_lower(s) == s && py_upper(s) != s)},
        {"upper", T(const std::string s = py_str(v); return py_upper(s) == s && py_lower(s) != s)},
        {"odd", T(if (!v.is_int()) failure("the test 'odd' needs an integer"); return v.as_int() % 2 != 0)},
        {"even", T(if (!v.is_int()) failure("the test 'even' needs an integer"); return v.as_int() % 2 == 0)},
        {"divisibleby", T(const Value& d = other(name, a);
                          if (!v.is_int() || !d.is_int() || d.as_int() == 0)
                              failure("the test 'divisibleby' needs integers and a non-zero divisor");
                          return v.as_int() % d.as_int() == 0)},
        {"eq", T(return equals(v, other(name, a)))},
        {"ne", T(return !equals(v, other(name, a)))},
        {"lt", T(return cmp_test(name, v, a) < 0)},
        {"le", T(return cmp_test(name, v, a) <= 0)},
        {"gt", T(return cmp_test(name, v, a) > 0)},
        {"ge", T(return cmp_test(name, v, a) >= 0)},
        {"in", T(Value seq = other(name, a); for (const auto& x : iterate(seq)) if (equals(x, v)) return true;
                 return seq.is_string() && v.is_string() && seq.str().find(v.str()) != std::string::npos)},
        {"sameas", T(return sameas(v, other(name, a)))},
        {"escaped", T(return false)},
    };
#undef T
    return t;
}

const std::map<std::string, std::string>& test_aliases() {
    static const std::map<std::string, std::string> m = {
        {"equalto", "eq"}, {"==", "eq"}, {"!=", "ne"}, {"lessthan", "lt"}, {"<", "lt"}, {"<=", "le"},
        {"greaterthan", "gt"}, {">", "gt"}, {">=", "ge"}};
    return m;
}

const std::string& test_name(const std::string& name) {
    auto it = test_aliases().find(name);
    return it == test_aliases().end() ? name : it->second;
}

}  // namespace

Value global_function(const std::string& name) {
    auto it = globals().find(name);
    if (it == globals().end()) return Value();
    return Value::make_function(name, it->second);
}

bool has_test(const std::string& name) { return tests().count(test_name(name)) != 0; }

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
    auto it = tests().find(test_name(name));
    if (it == tests().end()) failure("no test named '" + name + "'");
    return it->second(in, name, v, args);
}

}  // namespace jitllm::tmpl
