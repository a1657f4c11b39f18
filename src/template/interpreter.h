// Evaluates a parsed template over values: scopes (a for loop's body and a macro's get their
// own; if does not), loops with `loop`, macros and {% call %}, filters, tests and attribute
// look-up as Jinja2's sandbox does them. Bounded: total work, output size, macro recursion.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace jitllm::tmpl {

struct Limits {
    int64_t max_steps = 20'000'000;       // expression and statement evaluations
    size_t max_output = 64u << 20;        // bytes of output, and of any one string built
    int max_call_depth = 100;             // nested macro calls
};

class Interpreter {
public:
    explicit Interpreter(const Limits& limits) : limits_(limits) {}

    // Renders `body` with `vars` as the template's variables.
    std::string render(const Body& body, const std::vector<std::pair<std::string, Value>>& vars);

    // For filters and functions.
    Value call(const Value& fn, CallArgs& args);
    Value filter(const std::string& name, const Value& v, CallArgs& args);
    bool test(const std::string& name, const Value& v, CallArgs& args);
    Value get_attr(const Value& obj, const std::string& name);
    Value get_item(const Value& obj, const Value& key);
    void step();                     // one unit of work; fails past the limit
    void check_size(size_t bytes) const;  // fails when a string would exceed the output limit

private:
    struct Frame {
        std::unordered_map<std::string, Value> vars;
        std::shared_ptr<Frame> parent;
    };
    using FramePtr = std::shared_ptr<Frame>;
    enum class Flow { Normal, Break, Continue };

    Flow exec(const Body& body);
    Flow exec_stmt(const Stmt& s);
    Flow exec_for(const Stmt& s);
    void exec_set(const Stmt& s);
    static FramePtr scope_of(const std::weak_ptr<Frame>& w);
    Value make_macro(const Stmt& s);
    Value make_caller(const Stmt& s);
    std::string render_body(const Body& body, const FramePtr& frame);

    Value eval(const Expr& e);
    Value eval_call(const Expr& e, const Value* caller);
    Value eval_binary(const Expr& e);
    Value eval_compare(const Expr& e);
    Value eval_slice(const Expr& e);
    CallArgs eval_args(const Expr& e, size_t first);

    Value lookup(const std::string& name) const;
    void assign(const std::vector<std::string>& names, const Value& v, int line);

    Limits limits_;
    int64_t steps_ = 0;
    int call_depth_ = 0;
    FramePtr frame_;
    std::string* out_ = nullptr;
    std::string block_text_;
    int line_ = 0;
};

}  // namespace jitllm::tmpl
