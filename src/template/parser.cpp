// Jinja2's statements: {% if %}, {% for %}, {% set %}, {% macro %}, {% call %}, {% filter %},
// {% break %} / {% continue %} (the loop controls transformers enables) and {% generation %}.
#include "template/parser.h"

namespace jitllm::tmpl {

// Statements up to a {% tag %} whose name is one of `ends`; the name is read (left in
// `which`), the rest of that tag is the caller's.
Body Parser::parse_until(Ends ends, std::string& which) {
    Deeper d(*this);
    Body body;
    while (true) {
        const Token& t = cur();
        if (t.kind == Token::Kind::Eof) {
            if (ends.size() == 0) return body;
            std::string want;
            for (const char* e : ends) want += std::string(want.empty() ? "" : " or ") + "{% " + e + " %}";
            unexpected(want);
        }
        if (t.kind == Token::Kind::Text) {
            auto s = std::make_unique<Stmt>(Stmt::Kind::Text, t.line);
            s->text = next().text;
            body.push_back(std::move(s));
        } else if (t.kind == Token::Kind::VarBegin) {
            next();
            auto s = std::make_unique<Stmt>(Stmt::Kind::Output, t.line);
            s->expr = parse_tuple(true);
            expect_kind(Token::Kind::VarEnd, "'}}'");
            body.push_back(std::move(s));
        } else if (t.kind == Token::Kind::BlockBegin) {
            next();
            if (cur().kind != Token::Kind::Name) unexpected("a tag name");
            for (const char* e : ends)
                if (cur().text == e) {
                    which = next().text;
                    return body;
                }
            body.push_back(statement());
        } else {
            unexpected("text or a tag");
        }
    }
}

StmtPtr Parser::statement() {
    const int line = cur().line;
    const std::string tag = next().text;
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "call") return parse_call_block(line);
    if (tag == "filter") {
        auto s = std::make_unique<Stmt>(Stmt::Kind::FilterBlock, line);
        s->expr = parse_filter_chain(line);
        expect_block_end();
        s->body = body_until("endfilter");
        return s;
    }
    if (tag == "break" || tag == "continue") {
        if (loops_ == 0) failure_at(line, "{% " + tag + " %} outside a for loop");
        expect_block_end();
        return std::make_unique<Stmt>(tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line);
    }
    if (tag == "generation") {
        expect_block_end();
        auto s = std::make_unique<Stmt>(Stmt::Kind::Generation, line);
        s->body = body_until("endgeneration");
        return s;
    }
    failure_at(line, "unknown tag {% " + tag + " %}");
}

Body Parser::body_until(const char* end) {
    std::string which;
    Body b = parse_until({end}, which);
    expect_block_end();
    return b;
}

StmtPtr Parser::parse_if(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::If, line);
    ExprPtr cond = parse_expression(true);
    while (true) {
        expect_block_end();
        std::string which;
        Body body = parse_until({"elif", "else", "endif"}, which);
        s->branches.emplace_back(std::move(cond), std::move(body));
        if (which == "elif") {
            cond = parse_expression(true);
        } else if (which == "else") {
            expect_block_end();
            s->branches.emplace_back(nullptr, body_until("endif"));
            return s;
        } else {
            expect_block_end();
            return s;
        }
    }
}

StmtPtr Parser::parse_for(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::For, line);
    s->targets = assign_names();
    if (!at_name("in")) unexpected("'in'");
    next();
    s->expr = parse_tuple(false);
    if (at_name("if")) {
        next();
        s->cond = parse_expression(true);
    }
    if (at_name("recursive")) failure_at(cur().line, "recursive for loops are not supported");
    expect_block_end();
    ++loops_;
    std::string which;
    s->body = parse_until({"else", "endfor"}, which);
    --loops_;
    expect_block_end();
    if (which == "else") s->else_body = body_until("endfor");
    return s;
}

// name, or names separated by commas (optionally in parentheses)
std::vector<std::string> Parser::assign_names() {
    std::vector<std::string> names;
    const bool paren = at_op("(");
    if (paren) next();
    do {
        names.push_back(expect_name());
        if (!at_op(",")) break;
        next();
    } while (cur().kind == Token::Kind::Name && !at_name("in"));
    if (paren) expect_op(")");
    return names;
}

StmtPtr Parser::parse_set(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::Set, line);
    if (cur().kind == Token::Kind::Name && peek().kind == Token::Kind::Op && peek().text == ".") {
        s->targets.push_back(next().text);
        next();
        s->attr = expect_name();
    } else {
        s->targets = assign_names();
    }
    if (at_op("=")) {
        next();
        s->expr = parse_tuple(true);
        expect_block_end();
        return s;
    }
    if (s->targets.size() != 1 || !s->attr.empty()) unexpected("'='");
    s->kind = Stmt::Kind::SetBlock;
    s->expr = std::make_unique<Expr>(Expr::Kind::BlockText, line);
    if (at_op("|")) {
        next();
        s->expr = parse_filter_chain(line);
    }
    expect_block_end();
    s->body = body_until("endset");
    return s;
}

// name[(args)] (| name[(args)])* applied to the block's text
ExprPtr Parser::parse_filter_chain(int line) {
    ExprPtr e = std::make_unique<Expr>(Expr::Kind::BlockText, line);
    while (true) {
        e = parse_filter(std::move(e));
        if (!at_op("|")) return e;
        next();
    }
}

std::vector<MacroParam> Parser::parse_params() {
    std::vector<MacroParam> params;
    expect_op("(");
    while (!at_op(")")) {
        if (!params.empty()) expect_op(",");
        if (at_op(")")) break;
        MacroParam p{expect_name(), nullptr};
        if (at_op("=")) {
            next();
            p.default_value = parse_expression(true);
        }
        params.push_back(std::move(p));
    }
    next();
    return params;
}

StmtPtr Parser::parse_macro(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::Macro, line);
    s->name = expect_name();
    s->params = parse_params();
    expect_block_end();
    const int saved = loops_;
    loops_ = 0;
    s->body = body_until("endmacro");
    loops_ = saved;
    return s;
}

StmtPtr Parser::parse_call_block(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Kind::CallBlock, line);
    if (at_op("(")) s->params = parse_params();
    s->expr = parse_expression(true);
    if (s->expr->kind != Expr::Kind::Call) failure_at(line, "{% call %} needs a call expression");
    expect_block_end();
    s->body = body_until("endcall");
    return s;
}

Body parse_template(std::string_view source) {
    Parser p(lex(source));
    return p.parse_all();
}

}  // namespace jitllm::tmpl
