// The parser's state and its parts: statements in parser.cpp, expressions in parser_expr.cpp.
// Internal to the template library.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace jitllm::tmpl {

constexpr int kMaxParseDepth = 200;  // nesting of expressions and statements

class Parser {
public:
    explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

    Body parse_all() {
        std::string end;
        Body b = parse_until({}, end);
        return b;
    }

private:
    using Ends = std::initializer_list<const char*>;

    // Depth guard for the recursive descent.
    struct Deeper {
        explicit Deeper(Parser& p) : p_(p) {
            if (++p_.depth_ > kMaxParseDepth)
                failure_at(p_.cur().line,
                           "the template nests deeper than " + std::to_string(kMaxParseDepth) + " levels");
        }
        ~Deeper() { --p_.depth_; }
        Parser& p_;
    };

    const Token& cur() const { return t_[i_]; }
    const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
    bool at_op(const char* op) const { return cur().kind == Token::Kind::Op && cur().text == op; }
    bool at_name(const char* n) const { return cur().kind == Token::Kind::Name && cur().text == n; }
    Token next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }

    static std::string describe(const Token& t) {
        switch (t.kind) {
            case Token::Kind::Text: return "text";
            case Token::Kind::VarBegin: return "'{{'";
            case Token::Kind::VarEnd: return "'}}'";
            case Token::Kind::BlockBegin: return "'{%'";
            case Token::Kind::BlockEnd: return "'%}'";
            case Token::Kind::Eof: return "the end of the template";
            case Token::Kind::String: return "a string";
            default: return "'" + t.text + "'";
        }
    }
    [[noreturn]] void unexpected(const std::string& expected) const {
        failure_at(cur().line, "expected " + expected + ", found " + describe(cur()));
    }
    void expect_op(const char* op) {
        if (!at_op(op)) unexpected(std::string("'") + op + "'");
        next();
    }
    void expect_kind(Token::Kind k, const char* what) {
        if (cur().kind != k) unexpected(what);
        next();
    }
    std::string expect_name() {
        if (cur().kind != Token::Kind::Name) unexpected("a name");
        return next().text;
    }
    void expect_block_end() { expect_kind(Token::Kind::BlockEnd, "'%}'"); }

    // statements (parser.cpp)
    Body parse_until(Ends ends, std::string& which);
    StmtPtr statement();
    Body body_until(const char* end);
    StmtPtr parse_if(int line);
    StmtPtr parse_for(int line);
    std::vector<std::string> assign_names();
    StmtPtr parse_set(int line);
    ExprPtr parse_filter_chain(int line);
    std::vector<MacroParam> parse_params();
    StmtPtr parse_macro(int line);
    StmtPtr parse_call_block(int line);

    // expressions (parser_expr.cpp)
    static ExprPtr make(Expr::Kind k, int line, ExprPtr a = nullptr, ExprPtr b = nullptr);
    ExprPtr parse_tuple(bool with_condexpr);
    ExprPtr parse_expression(bool with_condexpr);
    ExprPtr binary(ExprPtr l, const std::string& op, ExprPtr r, int line);
    ExprPtr chain(ExprPtr (Parser::*operand)(), std::initializer_list<const char*> ops);
    ExprPtr parse_or();
    ExprPtr parse_and();
    ExprPtr parse_not();
    ExprPtr parse_compare();
    ExprPtr parse_math1();
    ExprPtr parse_concat();
    ExprPtr parse_math2();
    ExprPtr parse_pow();
    ExprPtr parse_unary(bool with_filter);
    ExprPtr parse_filtered_unary();
    ExprPtr parse_primary();
    ExprPtr parse_postfix(ExprPtr e);
    ExprPtr parse_subscript(ExprPtr e);
    ExprPtr parse_filter_expr(ExprPtr e);
    ExprPtr parse_filter(ExprPtr e);
    ExprPtr parse_test(ExprPtr e);
    ExprPtr parse_call(ExprPtr callee);
    void parse_call_args(Expr& call);

    std::vector<Token> t_;
    size_t i_ = 0;
    int depth_ = 0;
    int loops_ = 0;
};

}  // namespace jitllm::tmpl
