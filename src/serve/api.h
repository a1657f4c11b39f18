// The OpenAI-compatible request boundary: JSON body parsing (depth-limited), every field type- and
// range-checked before any cast, and errors as ApiError that become OpenAI-shaped bodies
// ({"error":{"message","type","param","code"}}, llama-server's type strings, code = HTTP status).
// Nothing here touches the model except the vocabulary size used to check token ids.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/chat_format.h"
#include "runtime/json_schema.h"
#include "runtime/sampler.h"

namespace jitllm::serve {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

struct ApiError : std::exception {
    int status = 400;
    std::string type = "invalid_request_error";
    std::string message;
    std::optional<std::string> param;
    ojson extra = ojson::object();  // more fields inside "error" (n_prompt_tokens, n_ctx)
    ApiError(int s, std::string t, std::string m, std::optional<std::string> p = std::nullopt)
        : status(s), type(std::move(t)), message(std::move(m)), param(std::move(p)) {}
    const char* what() const noexcept override { return message.c_str(); }
};

// 400 invalid_request_error naming the field.
[[noreturn]] void invalid(const std::string& param, const std::string& message);
// The body of an error response.
std::string error_body(const ApiError& e);

constexpr int kMaxJsonDepth = 64;
// Parses a request body as one JSON object; 400 on empty, malformed, invalid UTF-8, a NUL byte,
// too deep, or more than max_values values (checked while parsing, before the document grows).
json parse_body(std::string_view body, size_t max_values = size_t(-1));

enum class Endpoint { Chat, Completion };

enum class ToolChoice { Auto, None, Required, Function };

struct CompletionParams {
    Endpoint kind = Endpoint::Chat;
    std::string model;                    // empty when absent
    std::vector<ChatMessage> messages;    // chat: role and text (for the built-in formats)
    // chat, for the model's template (attach_chat_json): the messages in OpenAI's shape (tool calls'
    // arguments as objects, text parts joined), the tools it shows (null: none) and
    // chat_template_kwargs; keys in the client's order.
    ojson chat_messages;
    ojson tools;
    ojson template_kwargs = ojson::object();
    bool has_tools = false;               // the request has tools
    std::vector<std::string> tool_names;
    ToolChoice tool_choice = ToolChoice::Auto;
    std::string tool_choice_name;         // ToolChoice::Function
    bool parallel_tool_calls = true;
    std::shared_ptr<const JsonSchema> schema;  // response_format json_object / json_schema
    bool prompt_is_ids = false;           // completions: token ids instead of text
    std::string prompt_text;
    std::vector<int32_t> prompt_ids;
    std::optional<int64_t> max_tokens;    // in [1, INT32_MAX] when present
    SamplerParams sp;
    bool has_seed = false;
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;
    bool logprobs = false;                // chat: logprobs; completions: logprobs present
    int top_logprobs = 0;                 // chat: top_logprobs (0..20); completions: logprobs (0..5)
    bool ignore_eos = false;              // extension (llama-server): generate past end tokens
    std::vector<std::pair<int32_t, float>> logit_bias;
};

// Sampling defaults when a field is absent (llama-server's).
SamplerParams default_sampler_params();

// Validates a /v1/chat/completions or /v1/completions body. n_vocab bounds token ids.
CompletionParams parse_completion(const json& body, Endpoint kind, int n_vocab);

// Fills a chat request's chat_messages, tools and template_kwargs from the body parsed with its
// keys in order (parse_completion validated the same body).
void attach_chat_json(const ojson& body, CompletionParams& p);

struct TokenizeParams {
    std::string content;
    bool add_special = false;
    bool parse_special = true;
    bool with_pieces = false;
};
TokenizeParams parse_tokenize(const json& body);
std::vector<int32_t> parse_detokenize(const json& body, int n_vocab);

// UTF-8 check (text given to JSON output must be valid or be repaired).
bool valid_utf8(std::string_view s);

}  // namespace jitllm::serve
