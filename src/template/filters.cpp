// Jinja2's built-in filters, with Hugging Face's tojson (json.dumps without HTML escaping, key
// order kept, indent / separators / sort_keys / ensure_ascii as keywords). See builtins.h.
#include <algorithm>
#include <cmath>
#include <map>

#include "core/utf8.h"
#include "template/builtins.h"
#include "template/pystr.h"

namespace jitllm::tmpl {

namespace {

using FilterFn = Value (*)(Interpreter& in, const Value& v, CallArgs& a);

// Jinja's attribute getter: "a.b.0" looked up part by part as items (numbers as indices).
Value attr_path(Interpreter& in, const Value& v, const std::string& path) {
    Value cur = v;
    for (const auto& part : py_split(path, std::string("."), -1, false)) {
        const bool num =
            !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        cur = in.get_item(cur, num ? Value(int64_t(std::stoll(part.substr(0, 18)))) : Value(part));
        if (cur.is_undefined()) break;
    }
    return cur;
}

std::string need_str(const Value& v) { return py_str(v); }

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
    Params p("default", a, {"default_value", "boolean"});
    const bool use = v.is_undefined() || (p.flag(1, false) && !truthy(v));
    return use ? p.get_or(0, Value(std::string())) : v;
}

Value f_length(Interpreter&, const Value& v, CallArgs& a) {
    Params p("length", a, {});
    return Value(length(v));
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& a) {
    Params p("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonStyle st;
    st.ensure_ascii = p.flag(0, false);
    if (p.has(1) && !p.get(1).is_none()) {
        if (p.get(1).is_string()) failure("tojson(): indent as a string is not supported");
        st.indent = int(std::clamp<int64_t>(p.integer(1, 0), 0, 64));
    }
    st.item_sep = st.indent >= 0 ? "," : ", ";
    st.key_sep = ": ";
    if (p.has(2) && !p.get(2).is_none()) {
        const Value& s = p.get(2);
        if (!s.is_list() || s.list()->items.size() != 2 || !s.list()->items[0].is_string() ||
            !s.list()->items[1].is_string())
            failure("tojson(): separators must be a pair of strings");
        st.item_sep = s.list()->items[0].str();
        st.key_sep = s.list()->items[1].str();
    }
    st.sort_keys = p.flag(3, false);
    return Value(to_json(v, st));
}

Value f_string_op(Interpreter&, const Value& v, CallArgs& a, const char* name) {
    const std::string n = name;
    if (n == "trim") {
        Params p("trim", a, {"chars"});
        return Value(py_strip(need_str(v), p.opt_str(0), true, true));
    }
    Params p(n, a, {});
    const std::string s = need_str(v);
    if (n == "upper") return Value(py_upper(s));
    if (n == "lower") return Value(py_lower(s));
    if (n == "title") return Value(py_title(s));
    if (n == "capitalize") return Value(py_capitalize(s));
    if (n == "string") return v.is_string() ? v : Value(s);
    if (n == "wordcount") return Value(int64_t(py_split(s, std::nullopt, -1, false).size()));
    // escape
    static constexpr CharEscape kHtml[] = {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&#34;"}, {'\'', "&#39;"}};
    std::string out;
    for (char c : s) {
        if (const char* e = escape_of(c, kHtml)) out += e;
        else out += c;
    }
    return Value(std::move(out));
}

#define STRING_FILTER(n) \
    [](Interpreter & in, const Value& v, CallArgs& a) { return f_string_op(in, v, a, n); }

Value f_safe(Interpreter&, const Value& v, CallArgs& a) {
    Params p("safe", a, {});
    return v;
}

Value f_join(Interpreter& in, const Value& v, CallArgs& a) {
    Params p("join", a, {"d", "attribute"});
    const std::string sep = p.str(0, "");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
        if (!first) out += sep;
        out += py_str(p.has(1) ? attr_path(in, item, p.str(1)) : item);
        in.check_size(out.size());
        first = false;
    }
    return Value(std::move(out));
}

Value f_replace(Interpreter& in, const Value& v, CallArgs& a) {
    Params p("replace", a, {"old", "new", "count"});
    std::string r = py_replace(need_str(v), p.str(0), p.str(1), p.integer(2, -1));
    in.check_size(r.size());
    return Value(std::move(r));
}

Value f_first_last(const Value& v, CallArgs& a, bool last) {
    Params p(last ? "last" : "first", a, {});
    std::vector<Value> items = iterate(v);
    if (items.empty())
        return Value::undefined(std::string("the ") + (last ? "last" : "first") +
                                " item of an empty sequence is undefined");
    return last ? items.back() : items.front();
}

Value f_list(Interpreter&, const Value& v, CallArgs& a) {
    Params p("list", a, {});
    return Value::make_list(iterate(v));
}

Value f_items(Interpreter&, const Value& v, CallArgs& a) {
    Params p("items", a, {});
    if (v.is_undefined()) return Value::make_list({});
    if (!v.is_mapping()) failure(std::string("items() expects a dict, found a ") + type_name(v));
    std::vector<Value> out;
    for (const auto& [k, x] : v.dict()->items) out.push_back(Value::make_list({k, x}, true));
    return Value::make_list(std::move(out));
}

Value f_int(Interpreter&, const Value& v, CallArgs& a) {
    Params p("int", a, {"default", "base"});
    const Value dflt = p.get_or(0, Value(int64_t(0)));
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float()) {
        const double d = v.as_float();
        return std::isfinite(d) && std::fabs(d) < 9.2e18 ? Value(int64_t(d)) : dflt;
    }
    if (!v.is_string()) return dflt;
    const std::string s = py_strip(v.str(), std::nullopt, true, true);
    std::string digits;
    for (char c : s)
        if (c != '_') digits += c;
    size_t used = 0;
    try {
        const long long n = std::stoll(digits, &used, int(p.integer(1, 10)));
        if (used == digits.size()) return Value(int64_t(n));
    } catch (const std::exception&) {
    }
    try {
        const double d = std::stod(digits, &used);
        if (used == digits.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(int64_t(d));
    } catch (const std::exception&) {
    }
    return dflt;
}

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
    Params p("float", a, {"default"});
    if (v.is_number()) return Value(v.as_float());
    if (v.is_string()) {
        const std::string s = py_strip(v.str(), std::nullopt, true, true);
        size_t used = 0;
        try {
            const double d = std::stod(s, &used);
            if (used == s.size()) return Value(d);
        } catch (const std::exception&) {
        }
    }
    return p.get_or(0, Value(0.0));
}

Value f_abs(Interpreter&, const Value& v, CallArgs& a) {
    Params p("abs", a, {});
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    failure(std::string("abs() expects a number, found a ") + type_name(v));
}

Value f_round(Interpreter&, const Value& v, CallArgs& a) {
    Params p("round", a, {"precision", "method"});
    if (!v.is_number()) failure(std::string("round() expects a number, found a ") + type_name(v));
    const double scale = std::pow(10.0, double(p.integer(0, 0)));
    const std::string method = p.str(1, "common");
    const double x = v.as_float() * scale;
    double r;
    if (method == "ceil") r = std::ceil(x);
    else if (method == "floor") r = std::floor(x);
    else if (method == "common") r = std::nearbyint(x);  // Python's round: half to even
    else failure("round(): the method must be common, ceil or floor");
    return Value(r / scale);
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& a) {
    Params p("reverse", a, {});
    if (v.is_string()) {
        std::u32string u = utf8_decode(v.str());
        std::reverse(u.begin(), u.end());
        return Value(utf8_encode(u));
    }
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
}

Value f_indent(Interpreter& in, const Value& v, CallArgs& a) {
    Params p("indent", a, {"width", "first", "blank"});
    const std::string pad = p.has(0) && p.get(0).is_string()
                                ? p.str(0)
                                : std::string(size_t(std::clamp<int64_t>(p.integer(0, 4), 0, 1024)), ' ');
    const std::vector<std::string> lines = py_splitlines(py_str(v) + "\n", false);
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += "\n";
        const bool indent = (i > 0 || p.flag(1, false)) && (p.flag(2, false) || !lines[i].empty());
        out += (indent ? pad : "") + lines[i];
        in.check_size(out.size());
    }
    return Value(std::move(out));
}

Value f_center(Interpreter& in, const Value& v, CallArgs& a) {
    Params p("center", a, {"width"});
    CallArgs m{{Value(p.integer(0, 80))}, {}};
    return in.call(method(Value(py_str(v)), "center"), m);
}

Value f_format(Interpreter&, const Value& v, CallArgs& a) {
    if (!a.kw.empty()) failure("format(): keyword arguments are not supported");
    return Value(percent_format(py_str(v), Value::make_list(a.pos, true)));
}

Value f_attr(Interpreter& in, const Value& v, CallArgs& a) {
    Params p("attr", a, {"name"});
    return in.get_attr(v, p.str(0));
}

// select / reject / selectattr / rejectattr
Value select(Interpreter& in, const Value& v, CallArgs& a, bool by_attr, bool keep) {
    const char* fname = by_attr ? (keep ? "selectattr" : "rejectattr") : (keep ? "select" : "reject");
    size_t k = 0;
    std::string attr;
    if (by_attr) {
        if (a.pos.empty() || !a.pos[0].is_string()) failure(std::string(fname) + "() needs an attribute name");
        attr = a.pos[k++].str();
    }
    std::string test;
    if (k < a.pos.size()) {
        if (!a.pos[k].is_string()) failure(std::string(fname) + "() needs a test name");
        test = a.pos[k++].str();
    }
    CallArgs targs{std::vector<Value>(a.pos.begin() + std::ptrdiff_t(k), a.pos.end()), a.kw};
    std::vector<Value> out;
    for (const auto& item : iterate(v)) {
        in.step();
        const Value x = by_attr ? attr_path(in, item, attr) : item;
        const bool hit = test.empty() ? truthy(x) : in.test(test, x, targs);
        if (hit == keep) out.push_back(item);
    }
    return Value::make_list(std::move(out));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
    std::vector<Value> out;
    if (a.pos.empty()) {
        Params p("map", a, {"attribute", "default"});
        const std::string attr = p.str(0);
        for (const auto& item : iterate(v)) {
            Value x = attr_path(in, item, attr);
            out.push_back(x.is_undefined() && p.has(1) ? p.get(1) : x);
        }
        return Value::make_list(std::move(out));
    }
    if (!a.pos[0].is_string()) failure("map() needs a filter name or attribute=");
    const std::string name = a.pos[0].str();
    CallArgs fargs{std::vector<Value>(a.pos.begin() + 1, a.pos.end()), a.kw};
    for (const auto& item : iterate(v)) {
        in.step();
        CallArgs copy = fargs;
        out.push_back(in.filter(name, item, copy));
    }
    return Value::make_list(std::move(out));
}

// The key a sort / unique / min / max compares: the attribute, lower-cased strings unless
// case_sensitive.
Value sort_key(Interpreter& in, const Value& item, const Params& p, size_t attr_i, size_t case_i) {
    Value k = p.has(attr_i) ? attr_path(in, item, p.str(attr_i)) : item;
    if (k.is_string() && !p.flag(case_i, false)) return Value(py_lower(k.str()));
    return k;
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
    Params p("sort", a, {"reverse", "case_sensitive", "attribute"});
    std::vector<std::pair<Value, Value>> keyed;
    for (const auto& item : iterate(v)) keyed.emplace_back(sort_key(in, item, p, 2, 1), item);
    const bool rev = p.flag(0, false);
    std::stable_sort(keyed.begin(), keyed.end(), [rev](const auto& x, const auto& y) {
        return rev ? compare(y.first, x.first) < 0 : compare(x.first, y.first) < 0;
    });
    std::vector<Value> out;
    for (auto& kv : keyed) out.push_back(std::move(kv.second));
    return Value::make_list(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& a) {
    Params p("dictsort", a, {"case_sensitive", "by", "reverse"});
    if (!v.is_mapping()) failure(std::string("dictsort() expects a dict, found a ") + type_name(v));
    const bool by_value = p.str(1, "key") == "value", cs = p.flag(0, false), rev = p.flag(2, false);
    std::vector<std::pair<Value, Value>> items = v.dict()->items;
    auto key = [&](const std::pair<Value, Value>& kv) {
        const Value& k = by_value ? kv.second : kv.first;
        return k.is_string() && !cs ? Value(py_lower(k.str())) : k;
    };
    std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
        return rev ? compare(key(y), key(x)) < 0 : compare(key(x), key(y)) < 0;
    });
    std::vector<Value> out;
    for (auto& [k, x] : items) out.push_back(Value::make_list({k, x}, true));
    return Value::make_list(std::move(out));
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& a) {
    Params p("unique", a, {"case_sensitive", "attribute"});
    std::vector<Value> out, seen;
    for (const auto& item : iterate(v)) {
        in.step();
        Value k = sort_key(in, item, p, 1, 0);
        if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) {
            seen.push_back(k);
            out.push_back(item);
        }
    }
    return Value::make_list(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& a, bool max) {
    Params p(max ? "max" : "min", a, {"case_sensitive", "attribute"});
    Value best, best_key;
    for (const auto& item : iterate(v)) {
        Value k = sort_key(in, item, p, 1, 0);
        if (best.is_undefined() || (max ? compare(k, best_key) > 0 : compare(k, best_key) < 0)) {
            best = item;
            best_key = k;
        }
    }
    if (best.is_undefined())
        return Value::undefined(std::string("the ") + (max ? "max" : "min") + " of an empty sequence is undefined");
    return best;
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
    Params p("sum", a, {"attribute", "start"});
    Value total = p.get_or(1, Value(int64_t(0)));
    for (const auto& item : iterate(v)) {
        const Value x = p.has(0) ? attr_path(in, item, p.str(0)) : item;
        if (!x.is_number() || !total.is_number())
            failure(std::string("sum() adds numbers, found a ") + type_name(x.is_number() ? total : x));
        total = total.is_float() || x.is_float() ? Value(total.as_float() + x.as_float())
                                                  : Value(total.as_int() + x.as_int());
    }
    return total;
}

const std::map<std::string, FilterFn>& filters() {
    static const std::map<std::string, FilterFn> f = {
        {"default", f_default},
        {"d", f_default},
        {"length", f_length},
        {"count", f_length},
        {"tojson", f_tojson},
        {"trim", STRING_FILTER("trim")},
        {"upper", STRING_FILTER("upper")},
        {"lower", STRING_FILTER("lower")},
        {"title", STRING_FILTER("title")},
        {"capitalize", STRING_FILTER("capitalize")},
        {"string", STRING_FILTER("string")},
        {"wordcount", STRING_FILTER("wordcount")},
        {"escape", STRING_FILTER("escape")},
        {"e", STRING_FILTER("escape")},
        {"forceescape", STRING_FILTER("escape")},
        {"safe", f_safe},
        {"join", f_join},
        {"replace", f_replace},
        {"first", [](Interpreter&, const Value& v, CallArgs& a) { return f_first_last(v, a, false); }},
        {"last", [](Interpreter&, const Value& v, CallArgs& a) { return f_first_last(v, a, true); }},
        {"list", f_list},
        {"items", f_items},
        {"int", f_int},
        {"float", f_float},
        {"abs", f_abs},
        {"round", f_round},
        {"reverse", f_reverse},
        {"indent", f_indent},
        {"center", f_center},
        {"format", f_format},
        {"attr", f_attr},
        {"select", [](Interpreter& in, const Value& v, CallArgs& a) { return select(in, v, a, false, true); }},
        {"reject", [](Interpreter& in, const Value& v, CallArgs& a) { return select(in, v, a, false, false); }},
        {"selectattr", [](Interpreter& in, const Value& v, CallArgs& a) { return select(in, v, a, true, true); }},
        {"rejectattr", [](Interpreter& in, const Value& v, CallArgs& a) { return select(in, v, a, true, false); }},
        {"map", f_map},
        {"sort", f_sort},
        {"dictsort", f_dictsort},
        {"unique", f_unique},
        {"min", [](Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }},
        {"max", [](Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }},
        {"sum", f_sum},
    };
    return f;
}

}  // namespace

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
    auto it = filters().find(name);
    if (it == filters().end()) failure("no filter named '" + name + "'");
    if (v.is_undefined() && (name == "tojson" || name == "abs" || name == "round"))
        failure(name + "(): " + v.undefined_name());
    return it->second(in, v, args);
}

}  // namespace jitllm::tmpl
