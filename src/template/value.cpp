// Python semantics on template values (see value.h).
#include "template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/utf8.h"
#include "template/pystr.h"

namespace jitllm::tmpl {

void failure(const std::string& msg) { throw TemplateFailure(0, msg); }

void failure_at(int line, const std::string& msg) { throw TemplateFailure(line, msg); }

const Value* DictData::find(const Value& key) const {
    if (key.is_string()) return find(std::string_view(key.str()));
    for (const auto& [k, v] : items)
        if (equals(k, key)) return &v;
    return nullptr;
}

const Value* DictData::find(std::string_view key) const {
    for (const auto& [k, v] : items)
        if (k.is_string() && k.str() == key) return &v;
    return nullptr;
}

int nesting(const Value& v) { return v.is_list() ? v.list()->depth : v.is_dict() ? v.dict()->depth : 0; }

namespace {
bool is_or_holds_namespace(const Value& v) {
    if (v.is_list()) return v.list()->holds_namespace;
    return v.is_dict() && (v.dict_kind() == DictData::Kind::Namespace || v.dict()->holds_namespace);
}
}  // namespace

bool holds(const Value& v, const DictData* ns) {
    if (v.is_dict() && v.dict().get() == ns) return true;
    if (!is_or_holds_namespace(v)) return false;
    if (v.is_list()) {
        for (const auto& x : v.list()->items)
            if (holds(x, ns)) return true;
        return false;
    }
    for (const auto& [k, x] : v.dict()->items)
        if (holds(x, ns)) return true;
    return false;
}

void check_nesting(int depth) {
    if (depth > kMaxNesting) failure("a value nests deeper than " + std::to_string(kMaxNesting) + " levels");
}

namespace {

// Bounds the recursion of the walks below: a namespace can come to hold itself.
struct WalkDepth {
    WalkDepth() {
        if (++level > kMaxNesting + 8) {
            level = 0;
            failure("a value nests deeper than " + std::to_string(kMaxNesting) + " levels (or holds itself)");
        }
    }
    ~WalkDepth() {
        if (level > 0) --level;
    }
    static thread_local int level;
};
thread_local int WalkDepth::level = 0;

}  // namespace

void DictData::set(const Value& key, Value v) {
    const int d = 1 + std::max(nesting(key), nesting(v));
    check_nesting(d);
    depth = std::max(depth, d);
    holds_namespace = holds_namespace || is_or_holds_namespace(v);
    if (auto* at = const_cast<Value*>(find(key))) *at = std::move(v);
    else items.emplace_back(key, std::move(v));
}

Value Value::make_list(std::vector<Value> items, bool tuple) {
    auto l = std::make_shared<ListData>();
    for (const auto& v : items) {
        l->depth = std::max(l->depth, 1 + nesting(v));
        l->holds_namespace = l->holds_namespace || is_or_holds_namespace(v);
    }
    check_nesting(l->depth);
    l->items = std::move(items);
    l->tuple = tuple;
    return Value(std::move(l));
}

Value Value::make_dict(DictData::Kind kind) {
    auto d = std::make_shared<DictData>();
    d->kind = kind;
    return Value(std::move(d));
}

Value Value::make_function(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn) {
    return Value(std::make_shared<FunctionData>(FunctionData{std::move(name), std::move(fn)}));
}

namespace {

Value json_to_value(const nlohmann::ordered_json& j, int depth) {
    if (depth > kMaxNesting) failure("a JSON value nests deeper than " + std::to_string(kMaxNesting) + " levels");
    using T = nlohmann::ordered_json::value_t;
    switch (j.type()) {
        case T::null: return Value::none();
        case T::boolean: return Value(j.get<bool>());
        case T::number_integer: return Value(j.get<int64_t>());
        case T::number_unsigned: {
            const uint64_t u = j.get<uint64_t>();
            if (u > uint64_t(INT64_MAX)) failure("a JSON integer above 2^63-1 cannot be used in a template");
            return Value(int64_t(u));
        }
        case T::number_float: return Value(j.get<double>());
        case T::string: return Value(j.get<std::string>());
        case T::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& e : j) items.push_back(json_to_value(e, depth + 1));
            return Value::make_list(std::move(items));
        }
        case T::object: {
            Value d = Value::make_dict();
            auto& dd = *d.dict();
            dd.items.reserve(j.size());
            for (const auto& [k, e] : j.items()) {
                dd.items.emplace_back(Value(k), json_to_value(e, depth + 1));
                dd.depth = std::max(dd.depth, 1 + nesting(dd.items.back().second));
            }
            check_nesting(dd.depth);
            return d;
        }
        default: failure("binary JSON values cannot be used in a template");
    }
}

}  // namespace

Value Value::from_json(const nlohmann::ordered_json& j) { return json_to_value(j, 1); }

int64_t Value::as_int() const { return is_bool() ? int64_t(as_bool()) : std::get<int64_t>(v_); }

double Value::as_float() const { return is_float() ? std::get<double>(v_) : double(as_int()); }

bool truthy(const Value& v) {
    switch (v.type()) {
        case Value::Type::Undefined:
        case Value::Type::None: return false;
        case Value::Type::Bool: return v.as_bool();
        case Value::Type::Int: return v.as_int() != 0;
        case Value::Type::Float: return v.as_float() != 0.0;
        case Value::Type::String: return !v.str().empty();
        case Value::Type::List: return !v.list()->items.empty();
        case Value::Type::Dict: return v.dict_kind() != DictData::Kind::Dict || !v.dict()->items.empty();
        case Value::Type::Function: return true;
    }
    return false;
}

bool equals(const Value& a, const Value& b) {
    const WalkDepth guard;
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.type() != b.type()) return false;
    switch (a.type()) {
        case Value::Type::Undefined:
        case Value::Type::None: return true;
        case Value::Type::String: return a.str() == b.str();
        case Value::Type::List: {
            const auto &x = a.list()->items, &y = b.list()->items;
            if (x.size() != y.size() || a.list()->tuple != b.list()->tuple) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!equals(x[i], y[i])) return false;
            return true;
        }
        case Value::Type::Dict: {
            if (a.dict_kind() != DictData::Kind::Dict || b.dict_kind() != DictData::Kind::Dict)
                return a.dict() == b.dict();
            const auto &x = a.dict()->items, &y = b.dict()->items;
            if (x.size() != y.size()) return false;
            for (const auto& [k, v] : x) {
                const Value* o = b.dict()->find(k);
                if (!o || !equals(v, *o)) return false;
            }
            return true;
        }
        case Value::Type::Function: return a.function() == b.function();
        default: return false;
    }
}

int compare(const Value& a, const Value& b) {
    const WalkDepth guard;
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) {
            const double x = a.as_float(), y = b.as_float();
            return x < y ? -1 : x > y ? 1 : 0;
        }
        return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) {
        // UTF-8 byte order is code point order
        const int c = a.str().compare(b.str());
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.is_list() && b.is_list() && a.list()->tuple == b.list()->tuple) {
        const auto &x = a.list()->items, &y = b.list()->items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!equals(x[i], y[i])) return compare(x[i], y[i]);
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    failure(std::string("cannot order a ") + type_name(a) + " and a " + type_name(b));
}

const char* type_name(const Value& v) {
    switch (v.type()) {
        case Value::Type::Undefined: return "undefined";
        case Value::Type::None: return "NoneType";
        case Value::Type::Bool: return "bool";
        case Value::Type::Int: return "int";
        case Value::Type::Float: return "float";
        case Value::Type::String: return "str";
        case Value::Type::List: return v.list()->tuple ? "tuple" : "list";
        case Value::Type::Dict:
            return v.dict_kind() == DictData::Kind::Dict ? "dict"
                   : v.dict_kind() == DictData::Kind::Namespace ? "Namespace" : "LoopContext";
        case Value::Type::Function: return "function";
    }
    return "?";
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    const std::string sci(buf, r.ptr);  // [-]D[.DDD]e[+-]XX
    const size_t e = sci.find('e');
    const bool neg = sci[0] == '-';
    std::string digits;
    for (size_t i = neg ? 1 : 0; i < e; ++i)
        if (sci[i] != '.') digits += sci[i];
    const int exp = std::stoi(sci.substr(e + 1));
    std::string out = neg ? "-" : "";
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out += "0." + std::string(size_t(-exp - 1), '0') + digits;
        } else if (size_t(exp) + 1 >= digits.size()) {
            out += digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + eb;
}

namespace {

bool printable(char32_t c) {
    if (c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0xA0) || c == 0xAD) return false;
    if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x2060 && c <= 0x206F)) return false;
    return !(c == 0x3000 || c == 0xFEFF || (c >= 0xD800 && c <= 0xDFFF) || (c >= 0xE000 && c <= 0xF8FF));
}

std::string repr_string(const std::string& s) {
    const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char q = dq ? '"' : '\'';
    std::string out(1, q);
    for (char32_t c : utf8_decode(s)) {
        if (c == char32_t(q) || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (!printable(c)) {
            char b[16];
            if (c < 0x100) std::snprintf(b, sizeof b, "\\x%02x", unsigned(c));
            else if (c < 0x10000) std::snprintf(b, sizeof b, "\\u%04x", unsigned(c));
            else std::snprintf(b, sizeof b, "\\U%08x", unsigned(c));
            out += b;
        } else {
            utf8_append(out, c);
        }
    }
    return out + q;
}

std::string repr_list(const ListData& l) {
    const WalkDepth guard;
    std::string out = l.tuple ? "(" : "[";
    for (size_t i = 0; i < l.items.size(); ++i) out += (i ? ", " : "") + py_repr(l.items[i]);
    if (l.tuple && l.items.size() == 1) out += ",";
    return out + (l.tuple ? ")" : "]");
}

std::string repr_dict(const DictData& d) {
    const WalkDepth guard;
    std::string out = "{";
    for (size_t i = 0; i < d.items.size(); ++i)
        out += (i ? ", " : "") + py_repr(d.items[i].first) + ": " + py_repr(d.items[i].second);
    return out + "}";
}

}  // namespace

std::string py_repr(const Value& v) {
    if (v.is_string()) return repr_string(v.str());
    if (v.is_undefined()) return "Undefined";
    return py_str(v);
}

std::string py_str(const Value& v) {
    switch (v.type()) {
        case Value::Type::Undefined: return "";
        case Value::Type::None: return "None";
        case Value::Type::Bool: return v.as_bool() ? "True" : "False";
        case Value::Type::Int: return std::to_string(v.as_int());
        case Value::Type::Float: return float_repr(v.as_float());
        case Value::Type::String: return v.str();
        case Value::Type::List: return repr_list(*v.list());
        case Value::Type::Dict:
            if (v.dict_kind() == DictData::Kind::Namespace) return "<Namespace " + repr_dict(*v.dict()) + ">";
            if (v.dict_kind() == DictData::Kind::Loop) return "<LoopContext>";
            return repr_dict(*v.dict());
        case Value::Type::Function: return "<function " + v.function()->name + ">";
    }
    return "";
}

namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    static constexpr CharEscape kEscapes[] = {{'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\r', "\\r"},
                                              {'\t', "\\t"},  {'\b', "\\b"},   {'\f', "\\f"}};
    for (char32_t c : utf8_decode(s)) {
        char b[16];
        if (const char* e = escape_of(c, kEscapes)) {
            out += e;
            continue;
        }
        if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
            if (c >= 0x10000) {
                const char32_t v = c - 0x10000;
                std::snprintf(b, sizeof b, "\\u%04x\\u%04x", unsigned(0xD800 + (v >> 10)),
                              unsigned(0xDC00 + (v & 0x3FF)));
            } else {
                std::snprintf(b, sizeof b, "\\u%04x", unsigned(c));
            }
            out += b;
        } else {
            utf8_append(out, c);
        }
    }
    out += '"';
}

std::string json_key(const Value& k) {
    if (k.is_string()) return k.str();
    if (k.is_bool()) return k.as_bool() ? "true" : "false";
    if (k.is_none()) return "null";
    if (k.is_int()) return std::to_string(k.as_int());
    if (k.is_float()) return float_repr(k.as_float());
    failure(std::string("tojson: keys must be str, int, float, bool or None, not ") + type_name(k));
}

void json_newline(std::string& out, const JsonStyle& st, int depth) {
    if (st.indent >= 0) out += "\n" + std::string(size_t(st.indent) * size_t(depth), ' ');
}

// [a, b] / {"k": v}: n items, item(i) writes the i-th, one per line with an indent.
template <typename F>
void json_items(std::string& out, const char* brackets, size_t n, const JsonStyle& st, int depth, F item) {
    out += brackets[0];
    for (size_t i = 0; i < n; ++i) {
        if (i) out += st.item_sep;
        json_newline(out, st, depth + 1);
        item(i);
    }
    if (n) json_newline(out, st, depth);
    out += brackets[1];
}

void json_value(std::string& out, const Value& v, const JsonStyle& st, int depth) {
    const WalkDepth guard;
    switch (v.type()) {
        case Value::Type::None: out += "null"; return;
        case Value::Type::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Value::Type::Int: out += std::to_string(v.as_int()); return;
        case Value::Type::Float: {
            const double d = v.as_float();
            out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : float_repr(d);
            return;
        }
        case Value::Type::String: json_string(out, v.str(), st.ensure_ascii); return;
        case Value::Type::List: {
            const auto& items = v.list()->items;
            json_items(out, "[]", items.size(), st, depth, [&](size_t i) { json_value(out, items[i], st, depth + 1); });
            return;
        }
        case Value::Type::Dict: {
            if (v.dict_kind() != DictData::Kind::Dict) break;
            std::vector<std::pair<std::string, const Value*>> items;
            for (const auto& [k, e] : v.dict()->items) items.emplace_back(json_key(k), &e);
            if (st.sort_keys)
                std::stable_sort(items.begin(), items.end(), [](auto& a, auto& b) { return a.first < b.first; });
            json_items(out, "{}", items.size(), st, depth, [&](size_t i) {
                json_string(out, items[i].first, st.ensure_ascii);
                out += st.key_sep;
                json_value(out, *items[i].second, st, depth + 1);
            });
            return;
        }
        default: break;
    }
    failure(std::string("tojson: a ") + type_name(v) + " is not JSON serializable");
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
    std::string out;
    json_value(out, v, style, 0);
    return out;
}

std::vector<Value> iterate(const Value& v) {
    switch (v.type()) {
        case Value::Type::Undefined: return {};
        case Value::Type::String: {
            std::vector<Value> out;
            for (char32_t c : utf8_decode(v.str())) {
                std::string s;
                utf8_append(s, c);
                out.emplace_back(std::move(s));
            }
            return out;
        }
        case Value::Type::List: return v.list()->items;
        case Value::Type::Dict:
            if (v.dict_kind() == DictData::Kind::Dict) {
                std::vector<Value> out;
                for (const auto& kv : v.dict()->items) out.push_back(kv.first);
                return out;
            }
            break;
        default: break;
    }
    failure(std::string("a ") + type_name(v) + " is not iterable");
}

int64_t length(const Value& v) {
    switch (v.type()) {
        case Value::Type::Undefined: return 0;
        case Value::Type::String: return utf8_length(v.str());
        case Value::Type::List: return int64_t(v.list()->items.size());
        case Value::Type::Dict:
            if (v.dict_kind() == DictData::Kind::Dict) return int64_t(v.dict()->items.size());
            break;
        default: break;
    }
    failure(std::string("a ") + type_name(v) + " has no length");
}

}  // namespace jitllm::tmpl
