// Unit tests of the server's request boundary (serve/api.cpp) and stop-string matcher
// (serve/stop_matcher.cpp): hand-written inputs and expectations, no model, no sockets.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "serve/api.h"
#include "serve/stop_matcher.h"

using namespace jitllm::serve;

namespace {

// The param named by the ApiError a parse throws ("" when it does not throw).
template <typename F>
std::string param_of(F&& f) {
    try {
        f();
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(e.type, "invalid_request_error");
        return e.param.value_or("<none>");
    }
    return "";
}

json chat(json extra = json::object()) {
    json b = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
}

std::string chat_param(const std::string& body) {
    return param_of([&] { parse_completion(parse_body(body), Endpoint::Chat, 512); });
}

}  // namespace

TEST(StopMatcher, releases_everything_without_stop_strings) {
    StopMatcher m;
    EXPECT_EQ(m.push("Once"), "Once");
    EXPECT_EQ(m.push(" upon"), " upon");
    EXPECT_FALSE(m.stopped());
    EXPECT_EQ(m.released_bytes(), 9u);
}

TEST(StopMatcher, holds_back_a_possible_start_until_the_next_piece_decides) {
    StopMatcher m({"END"});
    EXPECT_EQ(m.push("the E"), "the ");  // "E" may begin "END"
    EXPECT_EQ(m.push("N"), "");          // "EN" still may
    EXPECT_EQ(m.push("jOY"), "ENjOY");   // it did not
    EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, cuts_before_a_stop_string_spanning_pieces) {
    StopMatcher m({"cat sat"});
    EXPECT_EQ(m.push("The ca"), "The ");
    EXPECT_EQ(m.push("t s"), "");
    EXPECT_EQ(m.push("at down"), "");
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(m.released_bytes(), 4u);
    EXPECT_EQ(m.push("more"), "");
    EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, earliest_of_several_stop_strings_wins) {
    StopMatcher m({"dog", "a d"});
    EXPECT_EQ(m.push("I saw a dog"), "I saw ");  // "a d" starts at 6, "dog" at 8
    EXPECT_TRUE(m.stopped());
}

TEST(StopMatcher, flush_releases_held_text_at_the_end) {
    StopMatcher m({"\n\n"});
    EXPECT_EQ(m.push("line\n"), "line");
    EXPECT_EQ(m.flush(), "\n");
    EXPECT_EQ(m.released_bytes(), 5u);
}

TEST(StopMatcher, empty_stop_strings_are_ignored) {
    StopMatcher m(std::vector<std::string>{""});
    EXPECT_EQ(m.push("abc"), "abc");
    EXPECT_FALSE(m.stopped());
}

TEST(Api, rejects_out_of_range_integers_without_wrapping) {
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":-1})"), "max_tokens");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})"), "max_tokens");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":2147483648})"), "max_tokens");
    // above INT64_MAX parses as unsigned; above UINT64_MAX as a float: both refused
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":18446744073709551615})"),
              "max_tokens");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":99999999999999999999})"),
              "max_tokens");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":3.0})"), "max_tokens");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"n":-1})"), "n");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"top_k":-2})"), "top_k");
}

TEST(Api, rejects_numbers_out_of_range_or_of_the_wrong_type) {
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"temperature":2.0001})"), "temperature");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"temperature":"0.5"})"), "temperature");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"top_p":-0.5})"), "top_p");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"repeat_penalty":0})"), "repeat_penalty");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"presence_penalty":2.5})"),
              "presence_penalty");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"seed":true})"), "seed");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x"}],"stream":1})"), "stream");
}

TEST(Api, accepts_boundaries_and_maps_extensions) {
    const auto p = parse_completion(chat({{"max_tokens", 2147483647}, {"temperature", 0}, {"top_p", 0},
                                          {"top_k", -1}, {"seed", -7}, {"stop", "\n"}, {"n", 1}}),
                                    Endpoint::Chat, 512);
    EXPECT_EQ(*p.max_tokens, 2147483647);
    EXPECT_EQ(p.sp.temperature, 0.0f);
    EXPECT_GT(p.sp.top_p, 0.0f);  // 0 is kept as "the most likely token only"
    EXPECT_LT(p.sp.top_p, 1e-6f);
    EXPECT_EQ(p.sp.top_k, 0);     // -1: off, as in llama-server
    EXPECT_TRUE(p.has_seed);
    EXPECT_EQ(p.sp.seed, uint64_t(-7));
    ASSERT_EQ(p.stop.size(), 1u);
    EXPECT_EQ(p.stop[0], "\n");
}

TEST(Api, absent_and_null_fields_take_the_defaults) {
    const auto p = parse_completion(chat({{"temperature", nullptr}, {"max_tokens", nullptr}}), Endpoint::Chat, 512);
    EXPECT_FALSE(p.max_tokens.has_value());
    EXPECT_EQ(p.sp.temperature, 0.8f);
    EXPECT_EQ(p.sp.top_k, 40);
    EXPECT_FALSE(p.has_seed);
    EXPECT_FALSE(p.stream);
}

TEST(Api, messages_roles_and_text_parts) {
    const auto p = parse_completion(
        parse_body(R"({"messages":[{"role":"developer","content":"be brief"},
                                   {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
                                   {"role":"assistant","content":null}]})"),
        Endpoint::Chat, 512);
    ASSERT_EQ(p.messages.size(), 3u);
    EXPECT_EQ(p.messages[0].role, "system");
    EXPECT_EQ(p.messages[1].content, "ab");
    EXPECT_EQ(p.messages[2].content, "");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"function","content":"x"}]})"), "messages[0].role");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"tool"}]})"), "messages[0].content");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user","content":"x","tool_calls":[{}]}]})"),
              "messages[0].tool_calls");
    EXPECT_EQ(chat_param(R"({"messages":[{"content":"x"}]})"), "messages[0].role");
    EXPECT_EQ(chat_param(R"({"messages":[{"role":"user"}]})"), "messages[0].content");
    EXPECT_EQ(chat_param(R"({"messages":{}})"), "messages");
}

TEST(Api, completion_prompts_text_or_token_ids) {
    auto param = [](const std::string& body) {
        return param_of([&] { parse_completion(parse_body(body), Endpoint::Completion, 512); });
    };
    const auto p = parse_completion(parse_body(R"({"prompt":[1, 511]})"), Endpoint::Completion, 512);
    EXPECT_TRUE(p.prompt_is_ids);
    EXPECT_EQ(p.prompt_ids, (std::vector<int32_t>{1, 511}));
    EXPECT_EQ(param(R"({"prompt":[1, 512]})"), "prompt[1]");
    EXPECT_EQ(param(R"({"prompt":[[3, -1]]})"), "prompt[0][1]");
    EXPECT_EQ(param(R"({"prompt":["a","b"]})"), "prompt");
    EXPECT_EQ(param(R"({"prompt":""})"), "prompt");
    EXPECT_EQ(param(R"({"prompt":"x","logprobs":6})"), "logprobs");
    EXPECT_EQ(param(R"({"prompt":"x","logit_bias":{"-1":1}})"), "logit_bias.-1");
    EXPECT_EQ(param(R"({"prompt":"x","logit_bias":{"7":-101}})"), "logit_bias.7");
}

TEST(Api, body_must_be_one_json_object_of_bounded_depth) {
    EXPECT_EQ(param_of([] { parse_body(""); }), "body");
    EXPECT_EQ(param_of([] { parse_body("{\"a\":"); }), "body");
    EXPECT_EQ(param_of([] { parse_body("[]"); }), "body");
    EXPECT_EQ(param_of([] { parse_body("{\"a\":1e400}"); }), "body");
    EXPECT_EQ(param_of([] { parse_body("{\"a\":\"\xff\"}"); }), "body");
    const std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
    EXPECT_EQ(param_of([&] { parse_body(deep); }), "body");
    const std::string ok = "{\"a\":" + std::string(10, '[') + std::string(10, ']') + "}";
    EXPECT_EQ(param_of([&] { parse_body(ok); }), "");
}

TEST(Api, error_body_is_openai_shaped_with_the_status_as_code) {
    ApiError e(400, "exceed_context_size_error", "too long", std::string("messages"));
    e.extra["n_ctx"] = 256;
    const json j = json::parse(error_body(e));
    EXPECT_EQ(j["error"]["message"], "too long");
    EXPECT_EQ(j["error"]["type"], "exceed_context_size_error");
    EXPECT_EQ(j["error"]["param"], "messages");
    EXPECT_EQ(j["error"]["code"], 400);
    EXPECT_EQ(j["error"]["n_ctx"], 256);
    const json k = json::parse(error_body(ApiError(401, "authentication_error", "no key")));
    EXPECT_TRUE(k["error"]["param"].is_null());
}

TEST(Api, utf8_validation) {
    EXPECT_TRUE(valid_utf8("h\xc3\xa9llo \xe4\xbd\xa0"));
    EXPECT_FALSE(valid_utf8("\xe4\xbd"));     // cut in the middle of a character
    EXPECT_FALSE(valid_utf8("\xc0\xaf"));     // overlong
    EXPECT_FALSE(valid_utf8("\x80"));
}
