// The JSON the completion endpoints answer with: OpenAI's chat.completion, chat.completion.chunk
// and text_completion objects (usage, logprobs in the chat and the legacy completions shape) and
// llama-server's timings. Pure functions of the request's metadata, the tokenizer and what the
// scheduler produced; the handlers (completion.cpp) decide when each is sent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/api.h"
#include "serve/scheduler.h"
#include "serve/tool_calls.h"

namespace jitllm {
class Tokenizer;
}

namespace jitllm::serve {

// What every object of one response repeats.
struct ResponseMeta {
    Endpoint kind = Endpoint::Chat;
    std::string id;            // chatcmpl-... / cmpl-...
    int64_t created = 0;       // unix seconds
    std::string model;
    bool include_usage = false;  // a stream ends with a usage chunk (other chunks: usage null)
    bool logprobs = false;
    bool split_reply = false;    // chat: the reply is split into reasoning, content and tool calls
    ReplyOptions reply;
};

// Compact JSON; invalid UTF-8 in generated text is replaced rather than thrown on.
std::string dump(const ojson& j);
// "chatcmpl-" + 24 random hex digits.
std::string random_id(const char* prefix);
// A string's bytes as an array of integers (OpenAI's logprobs `bytes`).
ojson byte_array(const std::string& s);

ojson usage_json(const JobDelta& d);
// One choice's logprobs: {content:[...]} for chat, {tokens, token_logprobs, top_logprobs,
// text_offset} for completions.
ojson logprobs_json(const Tokenizer& tok, const ResponseMeta& m, const std::vector<TokenLogprob>& lps);
// One stream chunk with one choice: text (chat: delta.content; `first` adds delta.role),
// logprobs when asked for, finish_reason when given.
ojson chunk_json(const Tokenizer& tok, const ResponseMeta& m, const std::string& text,
                 const std::vector<TokenLogprob>* lps, const char* finish, bool first);
// The last chunk of a stream with include_usage: no choices, the usage.
ojson usage_chunk_json(const ResponseMeta& m, const JobDelta& d);
// A chat stream chunk whose delta is `delta` (reasoning_content, tool_calls), no logprobs.
ojson delta_chunk_json(const ResponseMeta& m, ojson delta, const char* finish);
// OpenAI's tool_calls array ("index" on each call when streaming).
ojson tool_calls_json(const std::vector<ToolCall>& calls, bool streaming);
// A whole (non-streaming) response: the text, logprobs, finish_reason of d, usage and timings.
// For a split chat reply (m.split_reply) the message has reasoning_content and tool_calls too,
// content null when there are calls and no text, and finish_reason "tool_calls" when it called.
ojson whole_json(const Tokenizer& tok, const ResponseMeta& m, const std::string& text,
                 const std::vector<TokenLogprob>& lps, const JobDelta& d);

}  // namespace jitllm::serve
