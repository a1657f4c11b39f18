// The assistant's reply split as OpenAI clients expect it: reasoning (a <think> block: Qwen3,
// DeepSeek-R1) into reasoning_content, tool calls into tool_calls, the rest into content. Tool
// calls are read in the syntax the model's template teaches it:
//   Hermes / Qwen:  <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>  (one or more)
//   Llama 3.x:      {"name": "f", "parameters": {...}}  (the whole reply), or <|python_tag|>
//                   followed by that JSON or by f.call(key="value", ...)  (built-in tools)
//   Mistral:        [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...], or
//                   [TOOL_CALLS]f[ARGS]{...}  (the newer Tekken form)
// Works on a stream: push() returns what can be shown now, holding back text that may be the
// start of a marker; finish() returns the rest and the calls. Text that looks like a call but
// does not parse stays content.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace jitllm::serve {

enum class ToolSyntax { None, Hermes, Llama3, Mistral };

// The syntax a chat template teaches, from the markers its source writes (None: no tool markup).
ToolSyntax tool_syntax_of(std::string_view template_source);
const char* tool_syntax_name(ToolSyntax s);

struct ToolCall {
    std::string id;         // call_<24 alphanumerics>; Mistral: 9 alphanumerics (its templates check)
    std::string name;
    std::string arguments;  // JSON text of an object
};

struct ReplyOptions {
    ToolSyntax syntax = ToolSyntax::None;  // None: no tool calls are looked for
    std::vector<std::string> tool_names;   // the request's tools (a bare Llama 3 JSON reply must name one)
    bool split_thinking = false;           // a leading <think>...</think> is reasoning
    bool starts_thinking = false;          // the prompt opened the <think> block (DeepSeek-R1)
    bool parallel_tool_calls = true;       // false: the first call only
    // a forced call (ForcedCall): the text before and after what the model writes
    std::string reply_prefix, reply_suffix;
};

// tool_choice "required" or a named function, made binding: the reply is one call whose JSON the
// model writes under constrained output (runtime/token_constraint.h). The prompt ends with the
// call's opening, so the model starts inside it; its closing is added to the reply before the
// reply is read. `tools`: those the model sees, as (name, parameters schema; null: none).
struct ForcedCall {
    std::string prefix;     // <tool_call>\n (Hermes), [TOOL_CALLS] (Mistral), nothing (Llama 3)
    std::string suffix;     // \n</tool_call> (Hermes)
    nlohmann::json schema;  // the call: {"name": one of the tools, "arguments" | "parameters": its
                            // parameters (any object where there are several tools)}; Mistral: [that]
};
ForcedCall forced_call(ToolSyntax s, const std::vector<std::pair<std::string, nlohmann::json>>& tools);

class ReplyParser {
public:
    explicit ReplyParser(ReplyOptions o);

    struct Delta {
        std::string content, reasoning;
        bool empty() const { return content.empty() && reasoning.empty(); }
    };
    Delta push(std::string_view text);
    Delta finish(std::vector<ToolCall>& calls);

private:
    enum class State { Start, Thinking, Content, ToolText };
    void step(Delta& out);
    bool parse_calls(std::vector<ToolCall>& calls) const;

    ReplyOptions opt_;
    State state_;
    std::string buf_;        // text not yet classified
    std::string tool_text_;  // from the first marker on
    bool strip_newlines_ = false;  // after </think>: the separating newlines are not content
    bool content_seen_ = false;    // some non-space content was emitted
};

// Parses `text` as a whole (a non-streaming reply).
struct ParsedReply {
    std::string content, reasoning;
    std::vector<ToolCall> calls;
};
ParsedReply parse_reply(const ReplyOptions& o, std::string_view text);

}  // namespace jitllm::serve
