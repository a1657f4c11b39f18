// Expression evaluation (see interpreter.h): Python's operators on values, Jinja2's attribute and
// item look-up (a missing key or index is undefined, not an error), calls, filters and tests.
#include <cmath>

#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/pystr.h"

namespace jitllm::tmpl {

namespace {

[[noreturn]] void fail_undefined(const Value& v) { failure(v.undefined_name()); }

[[noreturn]] void fail_operands(const std::string& op, const Value& a, const Value& b) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    failure("unsupported operand types for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

int64_t checked(bool overflow, int64_t v) {
    if (overflow) failure("an integer result does not fit in 64 bits");
    return v;
}

// Python's floor division and modulo on ints.
int64_t floor_div(int64_t a, int64_t b) {
    if (b == -1) return -checked(a == INT64_MIN, a);
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    const int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

Value repeat(const Value& seq, int64_t n, const Interpreter& in) {
    if (n <= 0) return seq.is_string() ? Value(std::string()) : Value::make_list({}, seq.list()->tuple);
    if (seq.is_string()) {
        in.check_size(seq.str().size() * size_t(std::min<int64_t>(n, int64_t(1) << 40)));
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += seq.str();
        return Value(std::move(out));
    }
    const auto& items = seq.list()->items;
    in.check_size(items.size() * size_t(std::min<int64_t>(n, int64_t(1) << 40)) * 8);
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::make_list(std::move(out), seq.list()->tuple);
}

Value arithmetic(const std::string& op, const Value& a, const Value& b, const Interpreter& in) {
    const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
    if (a.is_number() && b.is_number()) {
        if (op == "/") {
            if (b.as_float() == 0) failure("division by zero");
            return Value(a.as_float() / b.as_float());
        }
        if (ints) {
            const int64_t x = a.as_int(), y = b.as_int();
            int64_t r = 0;
            bool overflow = false;
            if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
            else if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
            else if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
            if (op == "+" || op == "-" || op == "*") return Value(checked(overflow, r));
            if ((op == "//" || op == "%") && y == 0) failure("integer division or modulo by zero");
            if (op == "//") return Value(floor_div(x, y));
            if (op == "%") return Value(floor_mod(x, y));
            if (op == "**") {
                if (y < 0) return Value(std::pow(double(x), double(y)));
                if (x == 0 || x == 1) return Value(y == 0 ? int64_t(1) : x);
                if (x == -1) return Value(y % 2 ? int64_t(-1) : int64_t(1));
                int64_t p = 1;  // |x| >= 2: overflows within 63 steps
                for (int64_t i = 0; i < y; ++i) {
                    overflow = __builtin_mul_overflow(p, x, &p);
                    checked(overflow, p);
                }
                return Value(p);
            }
        } else {
            const double x = a.as_float(), y = b.as_float();
            if (op == "+") return Value(x + y);
            if (op == "-") return Value(x - y);
            if (op == "*") return Value(x * y);
            if ((op == "//" || op == "%") && y == 0) failure("float division or modulo by zero");
            if (op == "//") return Value(std::floor(x / y));
            if (op == "%") {
                const double m = std::fmod(x, y);
                return Value(m != 0 && ((m < 0) != (y < 0)) ? m + y : m);
            }
            if (op == "**") return Value(std::pow(x, y));
        }
    }
    if (op == "+" && a.is_string() && b.is_string()) {
        in.check_size(a.str().size() + b.str().size());
        return Value(a.str() + b.str());
    }
    if (op == "+" && a.is_list() && b.is_list() && a.list()->tuple == b.list()->tuple) {
        std::vector<Value> items = a.list()->items;
        items.insert(items.end(), b.list()->items.begin(), b.list()->items.end());
        return Value::make_list(std::move(items), a.list()->tuple);
    }
    if (op == "*" && (a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), in);
    if (op == "*" && (b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), in);
    if (op == "%" && a.is_string()) return Value(percent_format(a.str(), b));
    fail_operands(op, a, b);
}

bool contains(const Value& container, const Value& item) {
    switch (container.type()) {
        case Value::Type::Undefined: return false;
        case Value::Type::String:
            if (!item.is_string())
                failure(std::string("'in <string>' requires a string on the left, not a ") + type_name(item));
            return container.str().find(item.str()) != std::string::npos;
        case Value::Type::List:
            for (const auto& v : container.list()->items)
                if (equals(v, item)) return true;
            return false;
        case Value::Type::Dict: return container.dict()->find(item) != nullptr;
        default: failure(std::string("a ") + type_name(container) + " does not support 'in'");
    }
}

std::optional<int64_t> slice_bound(const Value& v) {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.is_int() || v.is_bool()) return v.as_int();
    failure(std::string("slice indices must be integers or none, not ") + type_name(v));
}

}  // namespace

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) fail_undefined(obj);
    const std::string missing = std::string("'") + type_name(obj) + " object' has no attribute '" + name + "'";
    // a method (or the undefined a refused one gives) comes first, as Python's getattr
    auto is_method = [](const Value& m) { return !m.is_undefined() || !m.undefined_name().empty(); };
    if (obj.is_dict()) {
        if (obj.dict_kind() == DictData::Kind::Dict) {
            Value m = method(obj, name);
            if (is_method(m)) return m;
        }
        if (const Value* v = obj.dict()->find(std::string_view(name))) return *v;
        return Value::undefined(missing);
    }
    if (obj.is_string() || obj.is_list()) {
        Value m = method(obj, name);
        if (is_method(m)) return m;
    }
    return Value::undefined(missing);
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) fail_undefined(obj);
    if (obj.is_dict()) {
        if (const Value* v = obj.dict()->find(key)) return *v;
    } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
        const int64_t n = length(obj);
        int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
            if (obj.is_list()) return obj.list()->items[size_t(i)];
            std::string s;
            utf8_append(s, utf8_decode(obj.str())[size_t(i)]);
            return Value(std::move(s));
        }
        return Value::undefined(std::string(type_name(obj)) + " index " + std::to_string(key.as_int()) +
                                " is out of range");
    }
    if (key.is_string()) return get_attr(obj, key.str());
    return Value::undefined(std::string("'") + type_name(obj) + " object' has no item " + py_repr(key));
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
    if (fn.is_undefined()) fail_undefined(fn);
    if (!fn.is_function()) failure(std::string("a ") + type_name(fn) + " is not callable");
    return fn.function()->call(*this, args);
}

Value Interpreter::filter(const std::string& name, const Value& v, CallArgs& args) {
    return apply_filter(*this, name, v, args);
}

bool Interpreter::test(const std::string& name, const Value& v, CallArgs& args) {
    return apply_test(*this, name, v, args);
}

CallArgs Interpreter::eval_args(const Expr& e, size_t first) {
    CallArgs a;
    for (size_t i = first; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs) a.kw.emplace_back(k, eval(*v));
    return a;
}

Value Interpreter::eval_call(const Expr& e, const Value* caller) {
    const Value fn = eval(*e.args[0]);
    CallArgs a = eval_args(e, 1);
    if (caller) a.kw.emplace_back("caller", *caller);
    line_ = e.line;
    return call(fn, a);
}

Value Interpreter::eval_binary(const Expr& e) {
    const std::string& op = e.name;
    Value a = eval(*e.args[0]);
    if (op == "and") return truthy(a) ? eval(*e.args[1]) : a;
    if (op == "or") return truthy(a) ? a : eval(*e.args[1]);
    Value b = eval(*e.args[1]);
    line_ = e.line;
    if (op == "~") {
        std::string s = py_str(a);
        s += py_str(b);
        check_size(s.size());
        return Value(std::move(s));
    }
    return arithmetic(op, a, b, *this);
}

Value Interpreter::eval_compare(const Expr& e) {
    Value left = eval(*e.args[0]);
    for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.args[i + 1]);
        line_ = e.line;
        const std::string& op = e.ops[i];
        bool r;
        if (op == "==") r = equals(left, right);
        else if (op == "!=") r = !equals(left, right);
        else if (op == "in") r = contains(right, left);
        else if (op == "not in") r = !contains(right, left);
        else {
            if (left.is_undefined()) fail_undefined(left);
            if (right.is_undefined()) fail_undefined(right);
            const int c = compare(left, right);
            r = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
        }
        if (!r) return Value(false);
        left = std::move(right);
    }
    return Value(true);
}

Value Interpreter::eval_slice(const Expr& e) {
    const Value obj = eval(*e.args[0]);
    std::optional<int64_t> b[3];
    for (int k = 0; k < 3; ++k)
        if (e.args[size_t(k) + 1]) b[k] = slice_bound(eval(*e.args[size_t(k) + 1]));
    line_ = e.line;
    if (obj.is_undefined()) fail_undefined(obj);
    if (b[2] && *b[2] == 0) failure("slice step cannot be zero");
    if (obj.is_string()) {
        const std::u32string u = utf8_decode(obj.str());
        std::u32string out;
        for (int64_t i : slice_indices(int64_t(u.size()), b[0], b[1], b[2])) out += u[size_t(i)];
        return Value(utf8_encode(out));
    }
    if (obj.is_list()) {
        std::vector<Value> out;
        for (int64_t i : slice_indices(int64_t(obj.list()->items.size()), b[0], b[1], b[2]))
            out.push_back(obj.list()->items[size_t(i)]);
        return Value::make_list(std::move(out), obj.list()->tuple);
    }
    return Value::undefined(std::string("a ") + type_name(obj) + " cannot be sliced");
}

Value Interpreter::eval(const Expr& e) {
    step();
    line_ = e.line;
    switch (e.kind) {
        case Expr::Kind::Literal: return e.value;
        case Expr::Kind::Name: return lookup(e.name);
        case Expr::Kind::Attr: {
            const Value obj = eval(*e.args[0]);
            line_ = e.line;
            return get_attr(obj, e.name);
        }
        case Expr::Kind::Item: {
            const Value obj = eval(*e.args[0]);
            const Value key = eval(*e.args[1]);
            line_ = e.line;
            return get_item(obj, key);
        }
        case Expr::Kind::Slice: return eval_slice(e);
        case Expr::Kind::Call: return eval_call(e, nullptr);
        case Expr::Kind::Filter: {
            const Value v = eval(*e.args[0]);
            CallArgs a = eval_args(e, 1);
            line_ = e.line;
            return filter(e.name, v, a);
        }
        case Expr::Kind::Test: {
            const Value v = eval(*e.args[0]);
            CallArgs a = eval_args(e, 1);
            line_ = e.line;
            return Value(test(e.name, v, a) != e.negated);
        }
        case Expr::Kind::Unary: {
            const Value v = eval(*e.args[0]);
            line_ = e.line;
            if (e.name == "not") return Value(!truthy(v));
            if (v.is_undefined()) fail_undefined(v);
            if (!v.is_number())
                failure(std::string("bad operand type for unary ") + e.name + ": '" + type_name(v) + "'");
            if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
            if (v.is_float()) return Value(-v.as_float());
            return Value(-checked(v.as_int() == INT64_MIN, v.as_int()));
        }
        case Expr::Kind::Binary: return eval_binary(e);
        case Expr::Kind::Compare: return eval_compare(e);
        case Expr::Kind::Cond:
            if (truthy(eval(*e.args[1]))) return eval(*e.args[0]);
            return e.args[2] ? eval(*e.args[2]) : Value::undefined("the conditional expression has no else branch");
        case Expr::Kind::List:
        case Expr::Kind::Tuple: {
            std::vector<Value> items;
            for (const auto& a : e.args) items.push_back(eval(*a));
            return Value::make_list(std::move(items), e.kind == Expr::Kind::Tuple);
        }
        case Expr::Kind::Dict: {
            Value d = Value::make_dict();
            for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                Value k = eval(*e.args[i]);
                if (k.is_list() && !k.list()->tuple) failure("a list cannot be a dict key");
                if (k.is_dict() || k.is_undefined())
                    failure(std::string("a ") + type_name(k) + " cannot be a dict key");
                d.dict()->set(k, eval(*e.args[i + 1]));
            }
            return d;
        }
        case Expr::Kind::BlockText: return Value(block_text_);
    }
    return Value();
}

}  // namespace jitllm::tmpl
