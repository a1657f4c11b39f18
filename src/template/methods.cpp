// Methods of str, dict and list values as Jinja2's immutable sandbox allows them (the mutating
// ones are refused), Python's `%` formatting and str.format (see builtins.h).
#include <algorithm>
#include <map>

#include "template/builtins.h"
#include "template/pystr.h"

namespace jitllm::tmpl {

namespace {

using Method = Value (*)(const Value& self, const std::string& name, CallArgs& a);

std::vector<Value> str_list(const std::vector<std::string>& v) {
    std::vector<Value> out;
    for (const auto& s : v) out.emplace_back(s);
    return out;
}

Value strip_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {"chars"});
    return Value(py_strip(s.str(), p.opt_str(0), name != "rstrip", name != "lstrip"));
}

Value split_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {"sep", "maxsplit"});
    const auto sep = p.opt_str(0);
    if (sep && sep->empty()) failure(name + "(): empty separator");
    return Value::make_list(str_list(py_split(s.str(), sep, p.integer(1, -1), name == "rsplit")));
}

// startswith / endswith: a str or a tuple of them
Value affix_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {"prefix"});
    const Value& arg = p.get(0);
    std::vector<Value> options = arg.is_list() ? arg.list()->items : std::vector<Value>{arg};
    for (const auto& o : options) {
        if (!o.is_string()) failure(name + "() expects a string or a tuple of strings, found a " + type_name(o));
        const std::string& x = o.str();
        const std::string& t = s.str();
        const bool hit = name == "startswith"
                             ? t.compare(0, x.size(), x) == 0
                             : t.size() >= x.size() && t.compare(t.size() - x.size(), x.size(), x) == 0;
        if (hit) return Value(true);
    }
    return Value(false);
}

Value case_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {});
    if (name == "upper") return Value(py_upper(s.str()));
    if (name == "lower") return Value(py_lower(s.str()));
    if (name == "title") return Value(py_title(s.str()));
    return Value(py_capitalize(s.str()));
}

Value is_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {});
    const std::u32string u = utf8_decode(s.str());
    if (u.empty()) return Value(false);
    auto all = [&](auto pred) { return std::all_of(u.begin(), u.end(), pred); };
    auto digit = [](char32_t c) { return c >= '0' && c <= '9'; };
    auto alpha = [](char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0xC0; };
    if (name == "isdigit") return Value(all(digit));
    if (name == "isalpha") return Value(all(alpha));
    if (name == "isalnum") return Value(all([&](char32_t c) { return digit(c) || alpha(c); }));
    if (name == "isspace") return Value(all(py_isspace));
    const std::string up = py_upper(s.str()), low = py_lower(s.str());
    if (name == "islower") return Value(low == s.str() && up != s.str());
    return Value(up == s.str() && low != s.str());  // isupper
}

Value replace_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {"old", "new", "count"});
    return Value(py_replace(s.str(), p.str(0), p.str(1), p.integer(2, -1)));
}

Value find_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {"sub"});
    if (name == "count") return Value(py_count(s.str(), p.str(0)));
    return Value(py_find(s.str(), p.str(0), name == "rfind"));
}

Value join_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {"iterable"});
    std::string out;
    bool first = true;
    for (const auto& v : iterate(p.get(0))) {
        if (!v.is_string()) failure(std::string("str.join() expects strings, found a ") + type_name(v));
        if (!first) out += s.str();
        out += v.str();
        first = false;
    }
    return Value(std::move(out));
}

Value splitlines_m(const Value& s, const std::string& name, CallArgs& a) {
    Params p(name, a, {"keepends"});
    return Value::make_list(str_list(py_splitlines(s.str(), p.flag(0, false))));
}

Value fix_m(const Value& s, const std::string& name, CallArgs& a) {  // removeprefix / removesuffix
    Params p(name, a, {"affix"});
    const std::string x = p.str(0), &t = s.str();
    if (name == "removeprefix" && t.compare(0, x.size(), x) == 0) return Value(t.substr(x.size()));
    if (name == "removesuffix" && !x.empty() && t.size() >= x.size() &&
        t.compare(t.size() - x.size(), x.size(), x) == 0)
        return Value(t.substr(0, t.size() - x.size()));
    return s;
}

Value pad_m(const Value& s, const std::string& name, CallArgs& a) {  // ljust / rjust / center / zfill
    Params p(name, a, {"width", "fillchar"});
    const int64_t width = std::min<int64_t>(p.integer(0, 0), 1 << 20), n = utf8_length(s.str());
    const std::string fill = name == "zfill" ? "0" : p.str(1, " ");
    if (width <= n) return s;
    auto rep = [&](int64_t k) {
        std::string r;
        for (int64_t i = 0; i < k; ++i) r += fill;
        return r;
    };
    const int64_t pad = width - n;
    if (name == "ljust") return Value(s.str() + rep(pad));
    if (name == "center") {
        const int64_t left = pad / 2 + (pad & width & 1);
        return Value(rep(left) + s.str() + rep(pad - left));
    }
    if (name == "zfill" && !s.str().empty() && (s.str()[0] == '-' || s.str()[0] == '+'))
        return Value(s.str().substr(0, 1) + rep(pad) + s.str().substr(1));
    return Value(rep(pad) + s.str());
}

Value format_m(const Value& s, const std::string& name, CallArgs& a);

const std::map<std::string, Method>& str_methods() {
    static const std::map<std::string, Method> m = {
        {"strip", strip_m},      {"lstrip", strip_m},         {"rstrip", strip_m},      {"split", split_m},
        {"rsplit", split_m},     {"startswith", affix_m},     {"endswith", affix_m},    {"upper", case_m},
        {"lower", case_m},       {"title", case_m},           {"capitalize", case_m},   {"isdigit", is_m},
        {"isalpha", is_m},       {"isalnum", is_m},           {"isspace", is_m},        {"islower", is_m},
        {"isupper", is_m},       {"replace", replace_m},      {"find", find_m},         {"rfind", find_m},
        {"count", find_m},       {"join", join_m},            {"splitlines", splitlines_m},
        {"removeprefix", fix_m}, {"removesuffix", fix_m},     {"ljust", pad_m},         {"rjust", pad_m},
        {"center", pad_m},       {"zfill", pad_m},            {"format", format_m},
    };
    return m;
}

std::vector<Value> pairs(const DictData& d) {
    std::vector<Value> out;
    for (const auto& [k, v] : d.items) out.push_back(Value::make_list({k, v}, true));
    return out;
}

Value dict_m(const Value& d, const std::string& name, CallArgs& a) {
    if (name == "get") {
        Params p("get", a, {"key", "default"});
        const Value* v = d.dict()->find(p.get(0));
        return v ? *v : p.has(1) ? p.get(1) : Value::none();
    }
    Params p(name, a, {});
    if (name == "items") return Value::make_list(pairs(*d.dict()));
    if (name == "copy") {
        Value c = Value::make_dict();
        c.dict()->items = d.dict()->items;
        c.dict()->depth = d.dict()->depth;
        return c;
    }
    std::vector<Value> out;
    for (const auto& [k, v] : d.dict()->items) out.push_back(name == "keys" ? k : v);
    return Value::make_list(std::move(out));
}

Value list_m(const Value& l, const std::string& name, CallArgs& a) {
    Params p(name, a, {"value"});
    const auto& items = l.list()->items;
    if (name == "count") return Value(int64_t(std::count_if(items.begin(), items.end(), [&](const Value& v) {
        return equals(v, p.get(0));
    })));
    for (size_t i = 0; i < items.size(); ++i)
        if (equals(items[i], p.get(0))) return Value(int64_t(i));
    failure(py_repr(p.get(0)) + " is not in the list");
}

bool unsafe(const Value& obj, const std::string& name) {
    static const char* const dict_mut[] = {"pop", "popitem", "clear", "update", "setdefault"};
    static const char* const list_mut[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};
    if (obj.is_mapping()) return std::find(std::begin(dict_mut), std::end(dict_mut), name) != std::end(dict_mut);
    if (obj.is_list()) return std::find(std::begin(list_mut), std::end(list_mut), name) != std::end(list_mut);
    return false;
}

Value bind(const Value& obj, const std::string& name, Method m) {
    return Value::make_function(name, [obj, name, m](Interpreter&, CallArgs& a) { return m(obj, name, a); });
}

}  // namespace

Value method(const Value& obj, const std::string& name) {
    if (unsafe(obj, name))
        return Value::undefined(std::string("the template may not modify a ") + type_name(obj) + " ('" + name + "')");
    if (obj.is_string()) {
        auto it = str_methods().find(name);
        if (it != str_methods().end()) return bind(obj, name, it->second);
    } else if (obj.is_mapping()) {
        if (name == "items" || name == "keys" || name == "values" || name == "get" || name == "copy")
            return bind(obj, name, dict_m);
    } else if (obj.is_list() && (name == "index" || name == "count")) {
        return bind(obj, name, list_m);
    }
    return Value();
}

std::string percent_format(const std::string& fmt, const Value& args) {
    std::vector<Value> vals = args.is_list() && args.list()->tuple ? args.list()->items : std::vector<Value>{args};
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) failure("'%' formatting: incomplete format");
        if (fmt[i] == '%') {
            out += '%';
            continue;
        }
        const char c = fmt[i];
        if (c != 's' && c != 'r' && c != 'd' && c != 'i')
            failure(std::string("'%' formatting: only %s, %r, %d and %i are supported, found %") + c);
        if (next >= vals.size()) failure("'%' formatting: not enough arguments for the format string");
        const Value& v = vals[next++];
        if (c == 's') out += py_str(v);
        else if (c == 'r') out += py_repr(v);
        else if (v.is_number()) out += std::to_string(v.is_float() ? int64_t(v.as_float()) : v.as_int());
        else failure(std::string("'%' formatting: %d needs a number, found a ") + type_name(v));
    }
    if (next < vals.size()) failure("'%' formatting: not all arguments converted during string formatting");
    return out;
}

namespace {

Value format_m(const Value& s, const std::string&, CallArgs& a) {
    const std::string& f = s.str();
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        if ((f[i] == '{' || f[i] == '}') && i + 1 < f.size() && f[i + 1] == f[i]) {
            out += f[i++];
            continue;
        }
        if (f[i] == '}') failure("str.format(): single '}' in the format string");
        if (f[i] != '{') {
            out += f[i];
            continue;
        }
        const size_t end = f.find('}', i);
        if (end == std::string::npos) failure("str.format(): single '{' in the format string");
        const std::string field = f.substr(i + 1, end - i - 1);
        if (field.find_first_of(":!.[") != std::string::npos)
            failure("str.format(): conversions, format specs and attribute fields are not supported");
        const Value* v = nullptr;
        if (field.empty() || std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            const size_t k = field.empty() ? auto_index++ : size_t(std::stoul(field.substr(0, 9)));
            if (k < a.pos.size()) v = &a.pos[k];
        } else {
            for (const auto& [name, val] : a.kw)
                if (name == field) v = &val;
        }
        if (!v) failure("str.format(): no argument for the field {" + field + "}");
        out += py_str(*v);
        i = end;
    }
    return Value(std::move(out));
}

}  // namespace

}  // namespace jitllm::tmpl
