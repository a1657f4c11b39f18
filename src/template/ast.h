// The parsed template: statements (text, output, if, for, set, macro, call, filter blocks) and
// expressions, each with the source line it starts on.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace jitllm::tmpl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
using KwArgs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
    enum class Kind {
        Literal,      // value
        Name,         // name
        Attr,         // args[0].name
        Item,         // args[0][args[1]]
        Slice,        // args[0][args[1]:args[2]:args[3]] (null: omitted)
        Call,         // args[0](args[1..], kwargs)
        Filter,       // args[0] | name(args[1..], kwargs)
        Test,         // args[0] is [not] name(args[1..], kwargs)
        Unary,        // name ("-", "+", "not") args[0]
        Binary,       // args[0] name args[1]: + - * / // % ** ~ and or
        Compare,      // args[0] ops[0] args[1] ops[1] args[2] ...
        Cond,         // args[0] if args[1] else args[2] (null: undefined)
        List,         // [args...]
        Tuple,        // (args...)
        Dict,         // {args[0]: args[1], ...}
        BlockText,    // the rendered body of a {% filter %} or {% set %} block
    };
    Kind kind;
    int line = 0;
    Value value;
    std::string name;
    std::vector<ExprPtr> args;
    KwArgs kwargs;
    std::vector<std::string> ops;
    bool negated = false;

    int height = 1;  // of the tree below: bounded, so that evaluating it never recurses deeply

    Expr(Kind k, int l) : kind(k), line(l) {}
    // Appends an operand (null: an omitted slice bound or else branch).
    void add(ExprPtr e) {
        grow(e.get());
        args.push_back(std::move(e));
    }
    void add_kw(std::string key, ExprPtr e) {
        grow(e.get());
        kwargs.emplace_back(std::move(key), std::move(e));
    }

private:
    void grow(const Expr* e) {
        if (!e || e->height + 1 <= height) return;
        height = e->height + 1;
        if (height > kMaxHeight)
            failure_at(line, "an expression nests deeper than " + std::to_string(kMaxHeight) + " levels");
    }
    static constexpr int kMaxHeight = 256;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // null: none given
};

struct Stmt {
    enum class Kind {
        Text,         // text
        Output,       // {{ expr }}
        If,           // branches: (condition, body); the else branch has a null condition
        For,          // for targets in expr [if cond] body [else else_body]
        Set,          // set targets = expr; set targets[0].attr = expr
        SetBlock,     // set targets[0] [| filters] body endset: expr applies the filters to BlockText
        Macro,        // macro name(params) body
        CallBlock,    // call(params) expr body: the call expr gets `caller`
        FilterBlock,  // filter ... body: expr applies the filters to BlockText
        Break,
        Continue,
        Generation,   // Hugging Face's {% generation %} body: rendered as it is
    };
    Kind kind;
    int line = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr cond;
    std::vector<std::pair<ExprPtr, Body>> branches;
    std::vector<std::string> targets;
    std::string attr;
    std::string name;
    std::vector<MacroParam> params;
    Body body, else_body;

    Stmt(Kind k, int l) : kind(k), line(l) {}
};

// Parses the template; fails (TemplateFailure with the line) on a syntax error or nesting deeper
// than the parser's limit.
Body parse_template(std::string_view source);

}  // namespace jitllm::tmpl
