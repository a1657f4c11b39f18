// Replies split into reasoning, content and tool calls (serve/tool_calls.cpp), whole and streamed
// one character at a time, on replies written in each syntax as the models' documentation and
// chat templates show it; and the request boundary's tools, tool_choice and tool messages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve/api.h"
#include "serve/tool_calls.h"

using namespace jitllm::serve;

namespace {

ReplyOptions opts(ToolSyntax s, std::vector<std::string> names = {"get_weather", "add"}) {
    ReplyOptions o;
    o.syntax = s;
    o.tool_names = std::move(names);
    return o;
}

// The reply pushed one character at a time: the streamed deltas joined, and the calls.
ParsedReply streamed(const ReplyOptions& o, const std::string& text, std::string* all_content = nullptr) {
    ReplyParser p(o);
    ParsedReply r;
    for (char c : text) {
        const ReplyParser::Delta d = p.push(std::string(1, c));
        r.content += d.content;
        r.reasoning += d.reasoning;
    }
    const ReplyParser::Delta d = p.finish(r.calls);
    if (all_content) *all_content = r.content;  // what was shown before the end
    r.content += d.content;
    r.reasoning += d.reasoning;
    return r;
}

// Parsed whole and streamed, with the same result.
ParsedReply both(const ReplyOptions& o, const std::string& text) {
    const ParsedReply w = parse_reply(o, text), s = streamed(o, text);
    EXPECT_EQ(w.content, s.content) << text;
    EXPECT_EQ(w.reasoning, s.reasoning) << text;
    EXPECT_EQ(w.calls.size(), s.calls.size()) << text;
    for (size_t i = 0; i < w.calls.size() && i < s.calls.size(); ++i) {
        EXPECT_EQ(w.calls[i].name, s.calls[i].name);
        EXPECT_EQ(w.calls[i].arguments, s.calls[i].arguments);
    }
    return w;
}

}  // namespace

TEST(ToolCalls, syntax_from_the_template) {
    EXPECT_EQ(tool_syntax_of("{{- '<tool_call>\\n{\"name\": \"' }}"), ToolSyntax::Hermes);
    EXPECT_EQ(tool_syntax_of("{{- \"[TOOL_CALLS] [\" }}"), ToolSyntax::Mistral);
    EXPECT_EQ(tool_syntax_of("{{- \"<|python_tag|>\" + tool_call.name }}"), ToolSyntax::Llama3);
    EXPECT_EQ(tool_syntax_of("<|start_header_id|>{% if tools is not none %}"), ToolSyntax::Llama3);
    EXPECT_EQ(tool_syntax_of("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolSyntax::None);
}

TEST(ToolCalls, hermes_one_and_several_calls) {
    const auto r = both(opts(ToolSyntax::Hermes),
                        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
    EXPECT_EQ(r.content, "");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Paris\"}");
    EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
    EXPECT_EQ(r.calls[0].id.size(), 29u);

    const std::string two =
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n"
        "</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": \"{\\\"a\\\": 2, \\\"b\\\": 3}\"}\n</tool_call>";
    std::string shown;
    const auto s = streamed(opts(ToolSyntax::Hermes), two, &shown);
    EXPECT_EQ(shown, "Let me check.\n");  // no part of the markup reaches the client as text
    const auto w = both(opts(ToolSyntax::Hermes), two);
    EXPECT_EQ(w.content, "Let me check.\n");
    ASSERT_EQ(w.calls.size(), 2u);
    EXPECT_EQ(w.calls[1].name, "add");
    EXPECT_EQ(w.calls[1].arguments, "{\"a\": 2, \"b\": 3}");  // JSON text stays as the model wrote it
    ReplyOptions one = opts(ToolSyntax::Hermes);
    one.parallel_tool_calls = false;
    EXPECT_EQ(parse_reply(one, two).calls.size(), 1u);
}

TEST(ToolCalls, what_does_not_parse_stays_content) {
    const std::string bad = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>";
    const auto r = both(opts(ToolSyntax::Hermes), bad);
    EXPECT_TRUE(r.calls.empty());
    EXPECT_EQ(r.content, bad);
    // without tools the markup is text
    EXPECT_EQ(both(opts(ToolSyntax::None), "<tool_call>{\"name\": \"add\"}</tool_call>").content,
              "<tool_call>{\"name\": \"add\"}</tool_call>");
    // a held-back marker start that turns out to be text is released
    EXPECT_EQ(both(opts(ToolSyntax::Hermes), "a <tool b").content, "a <tool b");
}

TEST(ToolCalls, llama3_json_and_python_tag) {
    const auto r =
        both(opts(ToolSyntax::Llama3), "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Paris\"}");
    // a JSON answer naming no tool of the request is an answer
    const std::string json_answer = "{\"name\": \"Alice\", \"parameters\": {\"age\": 3}}";
    EXPECT_EQ(both(opts(ToolSyntax::Llama3), json_answer).content, json_answer);
    // the built-in tools' form after <|python_tag|> (Llama 3.1's documentation)
    const auto b = both(opts(ToolSyntax::Llama3), "<|python_tag|>brave_search.call(query=\"latest news\", n=3)");
    ASSERT_EQ(b.calls.size(), 1u);
    EXPECT_EQ(b.calls[0].name, "brave_search");
    EXPECT_EQ(b.calls[0].arguments, "{\"query\":\"latest news\",\"n\":3}");
    const auto j =
        both(opts(ToolSyntax::Llama3), "<|python_tag|>{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}");
    ASSERT_EQ(j.calls.size(), 1u);
    EXPECT_EQ(j.calls[0].arguments, "{\"a\":1,\"b\":2}");
    EXPECT_EQ(both(opts(ToolSyntax::Llama3), "  The answer is 4.").content, "  The answer is 4.");
}

TEST(ToolCalls, mistral_array_and_args_forms) {
    const auto r = both(opts(ToolSyntax::Mistral),
                        "[TOOL_CALLS] [{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, "
                        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]");
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[1].name, "get_weather");
    EXPECT_EQ(r.calls[0].id.size(), 9u);  // Mistral's templates check for 9 alphanumerics
    const auto n = both(opts(ToolSyntax::Mistral), "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}");
    ASSERT_EQ(n.calls.size(), 1u);
    EXPECT_EQ(n.calls[0].arguments, "{\"city\":\"Paris\"}");
}

TEST(ToolCalls, thinking_becomes_reasoning) {
    ReplyOptions o;
    o.split_thinking = true;
    const auto r = both(o, "<think>\nThe user greets.\n</think>\n\nHello!");
    EXPECT_EQ(r.reasoning, "The user greets.");
    EXPECT_EQ(r.content, "Hello!");
    EXPECT_EQ(both(o, "No thinking here.").content, "No thinking here.");
    o.starts_thinking = true;  // DeepSeek-R1: the prompt opened the block
    const auto d = both(o, "Let me think.\n</think>\n\nAnswer");
    EXPECT_EQ(d.reasoning, "Let me think.");
    EXPECT_EQ(d.content, "Answer");
    // reasoning, then a call
    ReplyOptions t = opts(ToolSyntax::Hermes);
    t.split_thinking = true;
    const auto c = both(t, "<think>\nNeed weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
                           "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>");
    EXPECT_EQ(c.reasoning, "Need weather.");
    EXPECT_EQ(c.content, "");
    ASSERT_EQ(c.calls.size(), 1u);
}

// tool_choice made binding: the call's opening ends the prompt, the model writes the JSON the
// schema describes, and the reply (with the closing added) is read as one call.
TEST(ToolCalls, forced_call_in_each_syntax) {
    using json = nlohmann::json;
    const json params = json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}})");
    struct Case {
        ToolSyntax s;
        const char* prefix;
        const char* suffix;
        const char* args;
        const char* written;
    };
    for (const Case& c : {Case{ToolSyntax::Hermes, "<tool_call>\n", "\n</tool_call>", "arguments",
                               R"({"name": "get_weather", "arguments": {"city": "Oslo"}})"},
                          Case{ToolSyntax::Llama3, "", "", "parameters",
                               R"({"name": "get_weather", "parameters": {"city": "Oslo"}})"},
                          Case{ToolSyntax::Mistral, "[TOOL_CALLS]", "", "arguments",
                               R"([{"name": "get_weather", "arguments": {"city": "Oslo"}}])"}}) {
        SCOPED_TRACE(tool_syntax_name(c.s));
        const ForcedCall one = forced_call(c.s, {{"get_weather", params}});
        EXPECT_EQ(one.prefix, c.prefix);
        EXPECT_EQ(one.suffix, c.suffix);
        const json& call = c.s == ToolSyntax::Mistral ? one.schema["items"] : one.schema;
        EXPECT_EQ(call["properties"]["name"], json::parse(R"({"const": "get_weather"})"));
        EXPECT_EQ(call["properties"][c.args], params);
        EXPECT_EQ(call["required"], json::array({"name", c.args}));
        if (c.s == ToolSyntax::Mistral) {
            EXPECT_EQ(one.schema["maxItems"], 1);
        }
        // several tools: any of their names, any object
        const json two = forced_call(c.s, {{"get_weather", params}, {"add", json()}}).schema;
        const json& call2 = c.s == ToolSyntax::Mistral ? two["items"] : two;
        EXPECT_EQ(call2["properties"]["name"]["enum"], json::array({"get_weather", "add"}));
        EXPECT_EQ(call2["properties"][c.args], json::parse(R"({"type": "object"})"));
        ReplyOptions o = opts(c.s);
        o.reply_prefix = one.prefix;
        o.reply_suffix = one.suffix;
        const ParsedReply r = both(o, c.written);
        ASSERT_EQ(r.calls.size(), 1u);
        EXPECT_EQ(r.calls[0].name, "get_weather");
        EXPECT_EQ(r.calls[0].arguments, R"({"city":"Oslo"})");
        EXPECT_EQ(r.content, "");
    }
}

TEST(ToolCallsApi, tools_tool_choice_and_tool_messages) {
    const json tools =
        json::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])");
    auto parse = [&](json extra) {
        json b = json::parse(R"({"messages":[{"role":"user","content":"hi"},
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
              "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"21 C"}]})");
        for (auto& [k, v] : extra.items()) b[k] = v;
        CompletionParams p = parse_completion(b, Endpoint::Chat, 512);
        attach_chat_json(ojson::parse(b.dump()), p);
        return p;
    };
    const CompletionParams p = parse({{"tools", tools}, {"tool_choice", "required"}});
    EXPECT_TRUE(p.has_tools);
    EXPECT_EQ(p.tool_choice, ToolChoice::Required);
    ASSERT_EQ(p.chat_messages.size(), 3u);
    // the arguments reach the template as an object, as transformers' templates expect
    EXPECT_TRUE(p.chat_messages[1]["tool_calls"][0]["function"]["arguments"].is_object());
    EXPECT_EQ(p.chat_messages[2]["role"], "tool");
    EXPECT_TRUE(parse({{"tools", tools}, {"tool_choice", "none"}}).tools.is_null());
    const json named = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
    EXPECT_EQ(parse({{"tools", tools}, {"tool_choice", named}}).tool_choice_name, "get_weather");
    auto param = [&](json extra) {
        try {
            parse(std::move(extra));
        } catch (const ApiError& e) {
            return e.param.value_or("");
        }
        return std::string();
    };
    EXPECT_EQ(param({{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}),
              "tool_choice");
    EXPECT_EQ(param({{"tool_choice", "required"}}), "tool_choice");
    EXPECT_EQ(param({{"tools", json::array({{{"type", "function"}, {"function", {{"name", 3}}}}})}}),
              "tools[0].function.name");
    EXPECT_EQ(param({{"tools", json::array({{{"type", "retrieval"}}})}}), "tools[0].type");
    EXPECT_EQ(param({{"chat_template_kwargs", "x"}}), "chat_template_kwargs");
}
