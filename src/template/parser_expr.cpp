// Jinja2's expression grammar (jinja2/parser.py's precedence, from loosest to tightest):
// conditional expression, or, and, not, comparisons (== != < > <= >= in, not in), + -, ~,
// * / // %, **, unary - +, then postfix (.attr, [item], [a:b:c], call), filters (|f) and
// tests (is f).
#include "template/parser.h"

namespace jitllm::tmpl {

ExprPtr Parser::make(Expr::Kind k, int line, ExprPtr a, ExprPtr b) {
    auto e = std::make_unique<Expr>(k, line);
    if (a) e->add(std::move(a));
    if (b) e->add(std::move(b));
    return e;
}

// expression [, expression ...]: a tuple where there is a comma
ExprPtr Parser::parse_tuple(bool with_condexpr) {
    const int line = cur().line;
    ExprPtr first = parse_expression(with_condexpr);
    if (!at_op(",")) return first;
    auto t = make(Expr::Kind::Tuple, line, std::move(first));
    while (at_op(",")) {
        next();
        if (cur().kind == Token::Kind::VarEnd || cur().kind == Token::Kind::BlockEnd || at_op(")")) break;
        t->add(parse_expression(with_condexpr));
    }
    return t;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
    Deeper d(*this);
    ExprPtr e = parse_or();
    while (with_condexpr && at_name("if")) {
        const int line = next().line;
        ExprPtr cond = parse_or();
        ExprPtr other;
        if (at_name("else")) {
            next();
            other = parse_expression(true);
        }
        auto c = make(Expr::Kind::Cond, line, std::move(e), std::move(cond));
        c->add(std::move(other));
        e = std::move(c);
    }
    return e;
}

ExprPtr Parser::binary(ExprPtr l, const std::string& op, ExprPtr r, int line) {
    auto e = make(Expr::Kind::Binary, line, std::move(l), std::move(r));
    e->name = op;
    return e;
}

// A left-associative chain of `next` operands joined by one of `ops` (names such as "or" are
// Name tokens, the others operators).
ExprPtr Parser::chain(ExprPtr (Parser::*operand)(), std::initializer_list<const char*> ops) {
    ExprPtr e = (this->*operand)();
    while (true) {
        const char* op = nullptr;
        for (const char* o : ops)
            if ((o[0] >= 'a' && o[0] <= 'z') ? at_name(o) : at_op(o)) op = o;
        if (!op) return e;
        const int line = next().line;
        e = binary(std::move(e), op, (this->*operand)(), line);
    }
}

ExprPtr Parser::parse_or() { return chain(&Parser::parse_and, {"or"}); }
ExprPtr Parser::parse_and() { return chain(&Parser::parse_not, {"and"}); }

ExprPtr Parser::parse_not() {
    if (at_name("not")) {
        Deeper d(*this);
        const int line = next().line;
        auto e = make(Expr::Kind::Unary, line, parse_not());
        e->name = "not";
        return e;
    }
    return parse_compare();
}

ExprPtr Parser::parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
        std::string op;
        if (cur().kind == Token::Kind::Op &&
            (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
             cur().text == "<=" || cur().text == ">=")) {
            op = next().text;
        } else if (at_name("in")) {
            next();
            op = "in";
        } else if (at_name("not") && peek().kind == Token::Kind::Name && peek().text == "in") {
            next();
            next();
            op = "not in";
        } else {
            break;
        }
        if (!cmp) cmp = make(Expr::Kind::Compare, line, std::move(first));
        cmp->ops.push_back(op);
        cmp->add(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parse_math1() { return chain(&Parser::parse_concat, {"+", "-"}); }
ExprPtr Parser::parse_concat() { return chain(&Parser::parse_math2, {"~"}); }
ExprPtr Parser::parse_math2() { return chain(&Parser::parse_pow, {"*", "/", "//", "%"}); }
ExprPtr Parser::parse_pow() { return chain(&Parser::parse_filtered_unary, {"**"}); }
ExprPtr Parser::parse_filtered_unary() { return parse_unary(true); }

ExprPtr Parser::parse_unary(bool with_filter) {
    Deeper d(*this);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
        const Token op = next();
        e = make(Expr::Kind::Unary, op.line, parse_unary(false));
        e->name = op.text;
    } else {
        e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
}

ExprPtr Parser::parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    if (t.kind == Token::Kind::Name) {
        const std::string n = next().text;
        auto lit = make(Expr::Kind::Literal, line);
        if (n == "true" || n == "True") lit->value = Value(true);
        else if (n == "false" || n == "False") lit->value = Value(false);
        else if (n == "none" || n == "None") lit->value = Value::none();
        else {
            lit->kind = Expr::Kind::Name;
            lit->name = n;
        }
        return lit;
    }
    if (t.kind == Token::Kind::String) {
        std::string s;
        while (cur().kind == Token::Kind::String) s += next().text;  // adjacent literals join
        auto lit = make(Expr::Kind::Literal, line);
        lit->value = Value(std::move(s));
        return lit;
    }
    if (t.kind == Token::Kind::Int || t.kind == Token::Kind::Float) {
        auto lit = make(Expr::Kind::Literal, line);
        lit->value = t.kind == Token::Kind::Int ? Value(t.int_value) : Value(t.float_value);
        next();
        return lit;
    }
    if (at_op("(")) {
        next();
        if (at_op(")")) {
            next();
            return make(Expr::Kind::Tuple, line);
        }
        ExprPtr e = parse_tuple(true);
        expect_op(")");
        return e;
    }
    if (at_op("[") || at_op("{")) {
        const bool dict = at_op("{");
        next();
        auto e = make(dict ? Expr::Kind::Dict : Expr::Kind::List, line);
        const char* close = dict ? "}" : "]";
        while (!at_op(close)) {
            if (!e->args.empty()) expect_op(",");
            if (at_op(close)) break;
            e->add(parse_expression(true));
            if (dict) {
                expect_op(":");
                e->add(parse_expression(true));
            }
        }
        next();
        return e;
    }
    unexpected("an expression");
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
    while (true) {
        if (at_op(".")) {
            const int line = next().line;
            if (cur().kind == Token::Kind::Int) {  // foo.0 is foo[0]
                auto idx = make(Expr::Kind::Literal, line);
                idx->value = Value(next().int_value);
                e = make(Expr::Kind::Item, line, std::move(e), std::move(idx));
                continue;
            }
            auto a = make(Expr::Kind::Attr, line, std::move(e));
            a->name = expect_name();
            e = std::move(a);
        } else if (at_op("[")) {
            e = parse_subscript(std::move(e));
        } else if (at_op("(")) {
            e = parse_call(std::move(e));
        } else {
            return e;
        }
    }
}

ExprPtr Parser::parse_subscript(ExprPtr e) {
    const int line = next().line;  // '['
    ExprPtr parts[3];
    int colons = 0;
    while (!at_op("]")) {
        if (at_op(":")) {
            if (++colons > 2) unexpected("']'");
            next();
            continue;
        }
        if (parts[colons]) unexpected("':' or ']'");
        parts[colons] = parse_expression(true);
    }
    next();
    if (colons == 0) {
        if (!parts[0]) failure_at(line, "an empty subscript []");
        return make(Expr::Kind::Item, line, std::move(e), std::move(parts[0]));
    }
    auto s = make(Expr::Kind::Slice, line, std::move(e));
    for (auto& p : parts) s->add(std::move(p));
    return s;
}

ExprPtr Parser::parse_call(ExprPtr callee) {
    auto c = make(Expr::Kind::Call, cur().line, std::move(callee));
    parse_call_args(*c);
    return c;
}

void Parser::parse_call_args(Expr& call) {
    expect_op("(");
    while (!at_op(")")) {
        if (call.args.size() > 1 || !call.kwargs.empty()) expect_op(",");
        if (at_op(")")) break;
        if (at_op("*") || at_op("**")) failure_at(cur().line, "*args and **kwargs in calls are not supported");
        if (cur().kind == Token::Kind::Name && peek().kind == Token::Kind::Op && peek().text == "=") {
            std::string key = next().text;
            next();
            call.add_kw(std::move(key), parse_expression(true));
        } else {
            if (!call.kwargs.empty()) failure_at(cur().line, "a positional argument after keyword arguments");
            call.add(parse_expression(true));
        }
    }
    next();
}

ExprPtr Parser::parse_filter_expr(ExprPtr e) {
    while (true) {
        if (at_op("|")) {
            next();
            e = parse_filter(std::move(e));
        } else if (at_name("is")) {
            e = parse_test(std::move(e));
        } else if (at_op("(")) {
            e = parse_call(std::move(e));
        } else {
            return e;
        }
    }
}

ExprPtr Parser::parse_filter(ExprPtr e) {
    const int line = cur().line;
    auto f = make(Expr::Kind::Filter, line, std::move(e));
    f->name = expect_name();
    while (at_op(".")) {
        next();
        f->name += "." + expect_name();
    }
    if (at_op("(")) parse_call_args(*f);
    return f;
}

ExprPtr Parser::parse_test(ExprPtr e) {
    const int line = next().line;  // 'is'
    auto t = make(Expr::Kind::Test, line, std::move(e));
    if (at_name("not")) {
        next();
        t->negated = true;
    }
    t->name = expect_name();
    const Token& c = cur();
    if (at_op("(")) {
        parse_call_args(*t);
    } else if ((c.kind == Token::Kind::Name || c.kind == Token::Kind::String || c.kind == Token::Kind::Int ||
                c.kind == Token::Kind::Float || at_op("[") || at_op("{")) &&
               !at_name("else") && !at_name("or") && !at_name("and")) {
        if (at_name("is")) failure_at(c.line, "tests cannot be chained with 'is'");
        t->add(parse_postfix(parse_primary()));
    }
    return t;
}

}  // namespace jitllm::tmpl
