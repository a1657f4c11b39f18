// Statement execution and name look-up (see interpreter.h); expressions are in eval.cpp.
#include "template/interpreter.h"

#include "core/error.h"
#include "template/builtins.h"

namespace jitllm::tmpl {

namespace {

// Restores a member on scope exit.
template <typename T>
struct Restore {
    Restore(T& ref, T v) : ref_(ref), old_(std::move(ref)) { ref_ = std::move(v); }
    ~Restore() { ref_ = std::move(old_); }
    T& ref_;
    T old_;
};

}  // namespace

void Interpreter::step() {
    if (++steps_ > limits_.max_steps)
        failure("the template did more than " + std::to_string(limits_.max_steps) + " steps of work");
}

void Interpreter::check_size(size_t bytes) const {
    if (bytes > limits_.max_output)
        failure("the template built a text of more than " + std::to_string(limits_.max_output) + " bytes");
}

std::string Interpreter::render(const Body& body, const std::vector<std::pair<std::string, Value>>& vars) {
    frame_ = std::make_shared<Frame>();
    for (const auto& [k, v] : vars) frame_->vars[k] = v;
    std::string out;
    out_ = &out;
    try {
        exec(body);
    } catch (TemplateFailure& f) {
        if (f.line == 0) f.line = line_;
        throw;
    }
    return out;
}

Value Interpreter::lookup(const std::string& name) const {
    for (const Frame* f = frame_.get(); f; f = f->parent.get()) {
        auto it = f->vars.find(name);
        if (it != f->vars.end()) return it->second;
    }
    Value g = global_function(name);
    return g.is_undefined() ? Value::undefined("'" + name + "' is undefined") : g;
}

void Interpreter::assign(const std::vector<std::string>& names, const Value& v, int line) {
    if (names.size() == 1) {
        frame_->vars[names[0]] = v;
        return;
    }
    std::vector<Value> items = v.is_dict() || v.is_list() || v.is_string() ? iterate(v) : std::vector<Value>{};
    if (!(v.is_dict() || v.is_list() || v.is_string()))
        failure_at(line, std::string("cannot unpack a ") + type_name(v) + " into " + std::to_string(names.size()) +
                             " names");
    if (items.size() != names.size())
        failure_at(line, "cannot unpack " + std::to_string(items.size()) + " values into " +
                             std::to_string(names.size()) + " names");
    for (size_t i = 0; i < names.size(); ++i) frame_->vars[names[i]] = items[i];
}

Interpreter::Flow Interpreter::exec(const Body& body) {
    for (const auto& s : body) {
        const Flow f = exec_stmt(*s);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

std::string Interpreter::render_body(const Body& body, const FramePtr& frame) {
    std::string text;
    Restore<std::string*> out(out_, &text);
    Restore<FramePtr> fr(frame_, frame);
    exec(body);
    return text;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& s) {
    step();
    line_ = s.line;
    switch (s.kind) {
        case Stmt::Kind::Text: *out_ += s.text; break;
        case Stmt::Kind::Output: *out_ += py_str(eval(*s.expr)); break;
        case Stmt::Kind::If:
            for (const auto& [cond, body] : s.branches)
                if (!cond || truthy(eval(*cond))) return exec(body);
            break;
        case Stmt::Kind::For: return exec_for(s);
        case Stmt::Kind::Set: exec_set(s); break;
        case Stmt::Kind::SetBlock:
        case Stmt::Kind::FilterBlock: {
            std::string text = render_body(s.body, std::make_shared<Frame>(Frame{{}, frame_}));
            Restore<std::string> bt(block_text_, std::move(text));
            Value v = eval(*s.expr);
            if (s.kind == Stmt::Kind::SetBlock) frame_->vars[s.targets[0]] = v;
            else *out_ += py_str(v);
            break;
        }
        case Stmt::Kind::Macro: frame_->vars[s.name] = make_macro(s); break;
        case Stmt::Kind::CallBlock: {
            const Value caller = make_caller(s);
            *out_ += py_str(eval_call(*s.expr, &caller));
            break;
        }
        case Stmt::Kind::Break: return Flow::Break;
        case Stmt::Kind::Continue: return Flow::Continue;
        case Stmt::Kind::Generation: return exec(s.body);
    }
    if (out_->size() > limits_.max_output) check_size(out_->size());
    return Flow::Normal;
}

void Interpreter::exec_set(const Stmt& s) {
    Value v = eval(*s.expr);
    if (s.attr.empty()) {
        assign(s.targets, v, s.line);
        return;
    }
    Value ns = lookup(s.targets[0]);
    if (!ns.is_dict() || ns.dict_kind() != DictData::Kind::Namespace)
        failure_at(s.line, "cannot assign an attribute of '" + s.targets[0] + "', a " + type_name(ns) +
                               " (only a namespace() takes attributes)");
    if (holds(v, ns.dict().get()))
        failure_at(s.line, "a namespace cannot hold itself ('" + s.targets[0] + "." + s.attr + "')");
    ns.dict()->set(Value(s.attr), std::move(v));
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s) {
    const Value seq = eval(*s.expr);
    if (!(seq.is_undefined() || seq.is_string() || seq.is_list() || seq.is_mapping()))
        failure_at(s.line, std::string("cannot loop over a ") + type_name(seq));
    std::vector<Value> items = iterate(seq);
    const FramePtr outer = frame_;
    if (s.cond) {  // for x in xs if cond: the filtered items are the loop
        std::vector<Value> kept;
        for (auto& it : items) {
            Restore<FramePtr> fr(frame_, std::make_shared<Frame>(Frame{{}, outer}));
            assign(s.targets, it, s.line);
            if (truthy(eval(*s.cond))) kept.push_back(std::move(it));
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        Restore<FramePtr> fr(frame_, std::make_shared<Frame>(Frame{{}, outer}));
        exec(s.else_body);
        return Flow::Normal;
    }
    const int64_t n = int64_t(items.size());
    for (int64_t i = 0; i < n; ++i) {
        step();
        Value loop = Value::make_dict(DictData::Kind::Loop);
        auto& d = *loop.dict();
        d.set("index", Value(i + 1));
        d.set("index0", Value(i));
        d.set("revindex", Value(n - i));
        d.set("revindex0", Value(n - i - 1));
        d.set("first", Value(i == 0));
        d.set("last", Value(i == n - 1));
        d.set("length", Value(n));
        d.set("depth", Value(1));
        d.set("depth0", Value(0));
        d.set("previtem", i > 0 ? items[size_t(i - 1)] : Value::undefined("there is no previous item"));
        d.set("nextitem", i + 1 < n ? items[size_t(i + 1)] : Value::undefined("there is no next item"));
        d.set("cycle", Value::make_function("loop.cycle", [i](Interpreter&, CallArgs& a) {
                  if (a.pos.empty()) failure("loop.cycle() needs at least one argument");
                  return a.pos[size_t(i) % a.pos.size()];
              }));
        Restore<FramePtr> fr(frame_, std::make_shared<Frame>(Frame{{}, outer}));
        assign(s.targets, items[size_t(i)], s.line);
        frame_->vars["loop"] = loop;
        if (exec(s.body) == Flow::Break) break;
    }
    return Flow::Normal;
}

// A macro (and a {% call %} body) sees the scope it was defined in; it holds that scope weakly,
// as the scope holds the macro (the scope outlives every call: values do not leave a render).
Interpreter::FramePtr Interpreter::scope_of(const std::weak_ptr<Frame>& w) {
    FramePtr f = w.lock();
    JITLLM_CHECK(f != nullptr, "a macro outlived the scope it was defined in");
    return f;
}

Value Interpreter::make_macro(const Stmt& s) {
    const Stmt* def = &s;
    const std::weak_ptr<Frame> scope = frame_;
    return Value::make_function(s.name, [def, scope](Interpreter& in, CallArgs& a) {
        if (a.pos.size() > def->params.size())
            failure("macro '" + def->name + "' takes at most " + std::to_string(def->params.size()) +
                    " arguments, given " + std::to_string(a.pos.size()));
        auto frame = std::make_shared<Frame>(Frame{{}, scope_of(scope)});
        std::vector<bool> given(def->params.size(), false);
        for (size_t i = 0; i < a.pos.size(); ++i) {
            frame->vars[def->params[i].name] = a.pos[i];
            given[i] = true;
        }
        for (auto& [k, v] : a.kw) {
            size_t i = 0;
            while (i < def->params.size() && def->params[i].name != k) ++i;
            if (i == def->params.size()) {
                if (k != "caller") failure("macro '" + def->name + "' takes no argument '" + k + "'");
            } else if (given[i]) {
                failure("macro '" + def->name + "' got argument '" + k + "' twice");
            } else {
                given[i] = true;
            }
            frame->vars[k] = v;
        }
        Restore<int> depth(in.call_depth_, in.call_depth_ + 1);
        if (in.call_depth_ > in.limits_.max_call_depth)
            failure("macro calls nest deeper than " + std::to_string(in.limits_.max_call_depth) + " levels");
        Restore<FramePtr> fr(in.frame_, frame);
        for (size_t i = 0; i < def->params.size(); ++i)
            if (!given[i])
                frame->vars[def->params[i].name] =
                    def->params[i].default_value ? in.eval(*def->params[i].default_value)
                                                 : Value::undefined("'" + def->params[i].name + "' is undefined");
        return Value(in.render_body(def->body, frame));
    });
}

Value Interpreter::make_caller(const Stmt& s) {
    const Stmt* def = &s;
    const std::weak_ptr<Frame> scope = frame_;
    return Value::make_function("caller", [def, scope](Interpreter& in, CallArgs& a) {
        auto frame = std::make_shared<Frame>(Frame{{}, scope_of(scope)});
        for (size_t i = 0; i < def->params.size(); ++i)
            frame->vars[def->params[i].name] =
                i < a.pos.size() ? a.pos[i]
                : def->params[i].default_value ? in.eval(*def->params[i].default_value)
                                               : Value::undefined("'" + def->params[i].name + "' is undefined");
        return Value(in.render_body(def->body, frame));
    });
}

}  // namespace jitllm::tmpl
