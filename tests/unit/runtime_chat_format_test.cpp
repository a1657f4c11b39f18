// Chat formats per family: the exact token ids of a two-turn conversation (system + user +
// assistant + user + generation prompt) tokenized with each family's vocab from tests/data, the
// rendered text where no vocab is here, detection from the vocab and the file's template, and the
// stop tokens being end-of-generation tokens. Expected ids were looked up by token text in each
// vocab (tokenizer.ggml.tokens), never produced by our tokenizer. Where a vocab file carries its
// template, the ids are checked twice: rendered by that template (the Jinja interpreter) and by
// the family's built-in format, the fallback for files without one.
#include <gtest/gtest.h>

#include "fixtures/test_support.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "runtime/chat_format.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {
namespace {

using Ids = std::vector<int32_t>;

struct Vocab {
    std::unique_ptr<GgufReader> g;
    std::unique_ptr<Tokenizer> tok;
};

Vocab load_vocab(const std::string& name) {
    Vocab v;
    v.g = test::open_data_gguf("testdata/vocab/ggml-vocab-" + name + ".gguf");
    v.tok = Tokenizer::from_gguf(*v.g);
    return v;
}

// The conversation every family test renders.
std::vector<ChatMessage> conversation(const std::string& answer = "Hello") {
    return {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", answer}, {"user", "Why?"}};
}

Ids encode(const Vocab& v, const ChatTemplate& t, const std::vector<ChatMessage>& msgs) {
    const std::string text = chat_render(t, msgs, true);
    return v.tok->encode(text, chat_add_special(t, text), true);
}

// `t` without the file's template: the family's built-in format renders.
ChatTemplate builtin(ChatTemplate t) {
    t.jinja.reset();
    return t;
}

void expect_stops_are_eog(const Vocab& v, ChatFormat f) {
    const auto ids = chat_stop_tokens(f, *v.tok);
    EXPECT_FALSE(ids.empty()) << chat_format_name(f);
    for (int32_t id : ids) EXPECT_TRUE(v.tok->is_eog(id)) << v.tok->token_text(id);
}

// --- Llama 3 (llama3-npm: Meta Llama 3's tokenizer_config.json template) ---
// {% for message in messages %}{% set content = '<|start_header_id|>' + message['role'] +
// '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}
// {% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}
// {% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}
TEST(ChatFormatLlama3, two_turns_match_the_published_template_ids) {
    Vocab v = load_vocab("llama3-npm");
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    ASSERT_EQ(t.format, ChatFormat::Llama3);
    // <|begin_of_text|>=128000 <|start_header_id|>=128006 <|end_header_id|>=128007
    // <|eot_id|>=128009 system=9125 user=882 assistant=78191 ĊĊ=271 Be=3513 Ġbrief=10015 .=13
    // Hi=13347 Hello=9906 Why=10445 ?=30
    const Ids expected = {128000, 128006, 9125,  128007, 271,    3513,  10015,  13,     128009,
                          128006, 882,    128007, 271,    13347,  128009, 128006, 78191,  128007,
                          271,    9906,   128009, 128006, 882,    128007, 271,    10445,  30,
                          128009, 128006, 78191,  128007, 271};
    ASSERT_NE(t.jinja, nullptr);
    EXPECT_EQ(encode(v, t, conversation()), expected);
    EXPECT_EQ(encode(v, builtin(t), conversation()), expected);
    // `| trim`: surrounding white space of a message is dropped
    EXPECT_EQ(encode(v, t, conversation(" \nHello\n ")), expected);
    EXPECT_EQ(encode(v, builtin(t), conversation(" \nHello\n ")), expected);
    expect_stops_are_eog(v, t.format);
    EXPECT_TRUE(v.tok->is_eog(128009));  // <|eot_id|>
    EXPECT_TRUE(v.tok->is_eog(128001));  // <|end_of_text|>
}

// --- ChatML: Qwen2.5 (qwen2_5-npm) ---
// {%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\n' + messages[0]['content'] +
// '<|im_end|>\n' }}{%- else %}{{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You
// are a helpful assistant.<|im_end|>\n' }}{%- endif %} ... {{- '<|im_start|>' + message.role + '\n'
// + message.content + '<|im_end|>' + '\n' }} ... {{- '<|im_start|>assistant\n' }}
const Ids kChatMlIds = {
    // <|im_start|>=151644 <|im_end|>=151645 system=8948 user=872 assistant=77091 Ċ=198 Be=3430
    // Ġbrief=9814 .=13 Hi=13048 Hello=9707 Why=10234 ?=30
    151644, 8948,  198,    3430,   9814, 13,     151645, 198, 151644, 872,   198,   13048,
    151645, 198,   151644, 77091,  198,  9707,   151645, 198, 151644, 872,   198,   10234,
    30,     151645, 198,    151644, 77091, 198};

TEST(ChatFormatQwen25, two_turns_match_the_published_template_ids) {
    Vocab v = load_vocab("qwen2_5-npm");
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    ASSERT_EQ(t.format, ChatFormat::ChatML);
    EXPECT_FALSE(t.strip_thinking);
    EXPECT_EQ(encode(v, t, conversation()), kChatMlIds);
    EXPECT_EQ(encode(v, builtin(t), conversation()), kChatMlIds);
    expect_stops_are_eog(v, t.format);
    EXPECT_TRUE(v.tok->is_eog(151645));  // <|im_end|>
}

TEST(ChatFormatQwen25, default_system_prompt_comes_from_the_template) {
    Vocab v = load_vocab("qwen2_5-npm");
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    EXPECT_EQ(t.default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    for (const ChatTemplate& r : {t, builtin(t)})
        EXPECT_EQ(chat_render(r, {{"user", "Hi"}}, true),
                  "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                  "assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

// --- ChatML: Qwen1.5/Qwen2 (qwen2-npm) ---
// {% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}
// {{ '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n' }}{% endif %}...
TEST(ChatFormatQwen2, default_system_prompt_ids) {
    Vocab v = load_vocab("qwen2-npm");
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    ASSERT_EQ(t.format, ChatFormat::ChatML);
    EXPECT_EQ(t.default_system, "You are a helpful assistant");
    // You=2610 Ġare=525 Ġa=264 Ġhelpful=10950 Ġassistant=17847
    const Ids expected = {151644, 8948, 198, 2610, 525, 264, 10950, 17847, 151645, 198, 151644,
                          872,    198,  13048, 151645, 198, 151644, 77091, 198};
    EXPECT_EQ(encode(v, t, {{"user", "Hi"}}), expected);
    EXPECT_EQ(encode(v, builtin(t), {{"user", "Hi"}}), expected);
    EXPECT_EQ(encode(v, t, conversation()), kChatMlIds);
    EXPECT_EQ(encode(v, builtin(t), conversation()), kChatMlIds);
    expect_stops_are_eog(v, t.format);
}

// --- ChatML: Qwen3 (qwen3-npm): no default system; earlier answers lose their <think> part ---
// {%- if '</think>' in message.content %}{%- set content = message.content.split('</think>')[-1]
// .lstrip('\n') %} ... {{- '<|im_start|>' + message.role + '\n' + content }} ... '<|im_end|>\n'
TEST(ChatFormatQwen3, two_turns_drop_earlier_thinking) {
    Vocab v = load_vocab("qwen3-npm");
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    ASSERT_EQ(t.format, ChatFormat::ChatML);
    EXPECT_EQ(t.default_system, "");
    EXPECT_TRUE(t.strip_thinking);
    for (const ChatTemplate& r : {t, builtin(t)}) {
        EXPECT_EQ(encode(v, r, conversation("<think>\nShort greeting.\n</think>\n\nHello")), kChatMlIds);
        EXPECT_EQ(chat_render(r, {{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    }
    expect_stops_are_eog(v, t.format);
}

// --- Mistral V3-Tekken (tekken-npm: Mistral NeMo's template) ---
// {{- bos_token }} ... {%- if loop.last and system_message is defined %}{{- "[INST]" +
// system_message + "\n\n" + message["content"] + "[/INST]" }}{%- else %}{{- "[INST]" +
// message["content"] + "[/INST]" }} ... {%- elif message["role"] == "assistant" %}
// {{- message["content"] + eos_token}}
TEST(ChatFormatMistral, tekken_two_turns_put_the_system_prompt_in_the_last_user_turn) {
    Vocab v = load_vocab("tekken-npm");
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    ASSERT_EQ(t.format, ChatFormat::MistralTekken);
    for (const ChatTemplate& r : {t, builtin(t)})
        EXPECT_EQ(chat_render(r, conversation(), true), "<s>[INST]Hi[/INST]Hello</s>[INST]Be brief.\n\nWhy?[/INST]");
    // <s>=1 </s>=2 [INST]=3 [/INST]=4 Hi=37133 Hello=22177 Be=5934 Ġbrief=13426 .ĊĊ=1338
    // Why=19429 ?=1063 (the Tekken regex's punctuation run " ?[^\s\p{L}\p{N}]+[\r\n/]*" keeps
    // the newlines that follow "." in one piece)
    const Ids expected = {1, 3, 37133, 4, 22177, 2, 3, 5934, 13426, 1338, 19429, 1063, 4};
    EXPECT_EQ(encode(v, t, conversation()), expected);
    EXPECT_EQ(encode(v, builtin(t), conversation()), expected);
    expect_stops_are_eog(v, t.format);
    EXPECT_TRUE(v.tok->is_eog(2));
}

// --- Mistral V7-Tekken (Ministral 3, Devstral 2, Mistral Small 3.x: architecture mistral3) ---
// {{- bos_token }} ... {{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }} ...
// {{- '[INST]' + message['content'] + '[/INST]' }} ... {{- message['content'] + eos_token }}
// Their Tekken vocabulary is Mistral NeMo's (tekken-npm) with control tokens 17 and 18 spelled
// [SYSTEM_PROMPT] and [/SYSTEM_PROMPT] (NeMo leaves them <SPECIAL_17>, <SPECIAL_18>).
Vocab mistral3_vocab(bool v7_markers) {
    Vocab nemo = load_vocab("tekken-npm");
    GgufWriter w;
    w.set_string("general.architecture", "mistral3");
    for (const GgufKv& kv : nemo.g->kvs())
        if (kv.key.rfind("tokenizer.", 0) == 0 && kv.key != "tokenizer.chat_template") w.set(kv.key, kv.value);
    auto tokens = *nemo.g->get_string_array_opt("tokenizer.ggml.tokens");
    EXPECT_EQ(tokens[17], "<SPECIAL_17>");
    if (v7_markers) {
        tokens[17] = "[SYSTEM_PROMPT]";
        tokens[18] = "[/SYSTEM_PROMPT]";
    }
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    Vocab v;
    v.g = GgufReader::from_bytes(w.to_bytes(), "mistral3-vocab.gguf");
    v.tok = Tokenizer::from_gguf(*v.g);
    return v;
}

TEST(ChatFormatMistral, v7_tekken_for_mistral3) {
    Vocab v = mistral3_vocab(true);
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    ASSERT_EQ(t.format, ChatFormat::MistralV7);
    EXPECT_EQ(chat_render(t, conversation(), true),
              "<s>[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Hi[/INST]Hello</s>[INST]Why?[/INST]");
    // <s>=1 </s>=2 [INST]=3 [/INST]=4 [SYSTEM_PROMPT]=17 [/SYSTEM_PROMPT]=18 Be=5934 Ġbrief=13426
    // .=1046 Hi=37133 Hello=22177 Why=19429 ?=1063
    const Ids expected = {1, 17, 5934, 13426, 1046, 18, 3, 37133, 4, 22177, 2, 3, 19429, 1063, 4};
    EXPECT_EQ(encode(v, t, conversation()), expected);
    expect_stops_are_eog(v, t.format);
    // the architecture alone chooses it too (a mistral3 file whose vocabulary lacks the markers)
    Vocab bare = mistral3_vocab(false);
    EXPECT_EQ(chat_template_for(*bare.tok, *bare.g).format, ChatFormat::MistralV7);
}

// Qwen MoE files (qwen2moe: Qwen1.5-MoE's template and vocabulary, Qwen2's; qwen3moe: Qwen3's)
// take the ChatML of their dense family: the architecture does not change it.
TEST(ChatFormatQwenMoe, chatml_of_the_dense_family) {
    Vocab q2 = load_vocab("qwen2-npm");
    const std::string jinja2 = q2.g->get_string_opt("tokenizer.chat_template").value_or("");
    const ChatTemplate t2 = chat_template_detect(*q2.tok, "qwen2moe", jinja2);
    EXPECT_EQ(t2.format, ChatFormat::ChatML);
    EXPECT_EQ(t2.default_system, "You are a helpful assistant");
    EXPECT_EQ(encode(q2, t2, conversation()), kChatMlIds);
    Vocab q3 = load_vocab("qwen3-npm");
    const ChatTemplate t3 =
        chat_template_detect(*q3.tok, "qwen3moe", q3.g->get_string_opt("tokenizer.chat_template").value_or(""));
    EXPECT_EQ(t3.format, ChatFormat::ChatML);
    EXPECT_TRUE(t3.strip_thinking);
    EXPECT_EQ(encode(q3, t3, conversation("<think>\nShort.\n</think>\n\nHello")), kChatMlIds);
    expect_stops_are_eog(q3, t3.format);
}

// Mistral's tokenizer-version table (docs.mistral.ai, "Tokenization / Templates"):
//   V1: <s> [INST] Hello, how are you? [/INST] Fine, and you?</s> [INST] I'm doing great! [/INST]
//   V3: <s>[INST] Hello, how are you?[/INST] Fine, and you?</s>[INST] I'm doing great![/INST]
// V1 prepends the system prompt to the first user message, V3 to the last.
TEST(ChatFormatMistral, v1_and_v3_spacing_and_system_placement) {
    EXPECT_EQ(chat_render(ChatFormat::MistralV1, conversation(), true),
              "<s> [INST] Be brief.\n\nHi [/INST] Hello</s> [INST] Why? [/INST]");
    EXPECT_EQ(chat_render(ChatFormat::MistralV3, conversation(), true),
              "<s>[INST] Hi[/INST] Hello</s>[INST] Be brief.\n\nWhy?[/INST]");
    EXPECT_EQ(chat_render(ChatFormat::MistralV7, conversation(), true),
              "<s>[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Hi[/INST]Hello</s>[INST]Why?[/INST]");
}

// Llama 2 chat: {{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }} for users,
// {{ ' ' + content.strip() + ' ' + eos_token }} for answers, <<SYS>> in the first turn.
TEST(ChatFormatLlama2, sys_block_in_the_first_turn) {
    EXPECT_EQ(chat_render(ChatFormat::Llama2, conversation(), true),
              "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Why? [/INST]");
    Vocab v = load_vocab("llama-spm");  // Llama 2's vocab, no template: Llama 2 chat
    EXPECT_EQ(chat_template_for(*v.tok, *v.g).format, ChatFormat::Llama2);
    expect_stops_are_eog(v, ChatFormat::Llama2);
}

// --- Phi-3 (phi-3 vocab; its template is Phi-3-mini's first one, which has no system role) ---
// {{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' +
// '\n' + message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif
// (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}
// Phi-3.5-mini's template adds {{'<|system|>\n' + message['content'] + '<|end|>\n'}}; the built-in
// format renders that one (so --system-prompt works where a file has no template), while the
// file's own template drops the system message. llama.cpp gives every Phi-3 special token rstrip,
// so the "\n" after each is dropped and the following text gets SentencePiece's "▁" prefix.
TEST(ChatFormatPhi3, two_turns_match_the_published_template_ids) {
    Vocab v = load_vocab("phi-3");
    const ChatTemplate file = chat_template_for(*v.tok, *v.g);
    ASSERT_NE(file.jinja, nullptr);
    const ChatTemplate t = builtin(file);
    ASSERT_EQ(t.format, ChatFormat::Phi3);
    EXPECT_EQ(chat_render(t, conversation(), true),
              "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello<|end|>\n"
              "<|user|>\nWhy?<|end|>\n<|assistant|>\n");
    // <s>=1 (add_bos_token) <|system|>=32006 <|end|>=32007 <|user|>=32010 <|assistant|>=32001
    // ▁Be=1522 ▁brief=11473 .=29889 ▁Hi=6324 ▁Hello=15043 ▁Why=3750 ?=29973
    const Ids expected = {1,     32006, 1522,  11473, 29889, 32007, 32010, 6324,  32007,
                          32001, 15043, 32007, 32010, 3750,  29973, 32007, 32001};
    EXPECT_EQ(encode(v, t, conversation()), expected);
    // Without a system message the ids are those of the vocab's own template (user/assistant only).
    auto no_sys = conversation();
    no_sys.erase(no_sys.begin());
    const Ids expected_no_sys(expected.begin() + 6, expected.end());
    Ids got = encode(v, t, no_sys);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got[0], 1);
    EXPECT_EQ(Ids(got.begin() + 1, got.end()), expected_no_sys);
    // the file's template: its {{ bos_token }} is the one BOS, and the system message is dropped
    Ids from_file = expected_no_sys;
    from_file.insert(from_file.begin(), 1);
    EXPECT_EQ(encode(v, file, conversation()), from_file);
    EXPECT_EQ(encode(v, file, no_sys), from_file);
    expect_stops_are_eog(v, t.format);
    EXPECT_TRUE(v.tok->is_eog(32007));  // <|end|>
}

TEST(ChatFormatPhi4, im_sep_headers) {
    EXPECT_EQ(chat_render(ChatFormat::Phi4, conversation(), true),
              "<|im_start|>system<|im_sep|>Be brief.<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|>"
              "<|im_start|>assistant<|im_sep|>Hello<|im_end|><|im_start|>user<|im_sep|>Why?<|im_end|>"
              "<|im_start|>assistant<|im_sep|>");
}

// --- Families without a vocab file here: the rendered text, and a small BPE vocab holding
// their special tokens (written below) for the ids and the end-of-generation set. ---

// GPT-2 byte-level alphabet: byte b -> one code point (printable bytes map to themselves).
std::vector<std::string> byte_level_tokens() {
    std::vector<std::string> t(256);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        const int cp = printable ? b : 256 + n++;
        std::string s;
        if (cp < 0x80) {
            s += char(cp);
        } else {
            s += char(0xC0 | (cp >> 6));
            s += char(0x80 | (cp & 0x3F));
        }
        t[size_t(b)] = s;
    }
    return t;
}

// A vocab of `specials` (ids 0..n-1, control tokens) followed by the 256 byte tokens (id n + b).
Vocab special_vocab(const std::string& pre, const std::vector<std::string>& specials, int bos, int eos) {
    std::vector<std::string> tokens = specials;
    std::vector<int32_t> types(specials.size(), 3);
    for (const auto& b : byte_level_tokens()) {
        tokens.push_back(b);
        types.push_back(1);
    }
    GgufWriter w;
    w.set_string("general.architecture", "qwen2");
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", {});
    w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(bos));
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(eos));
    Vocab v;
    v.g = GgufReader::from_bytes(w.to_bytes(), pre + "-vocab");
    v.tok = Tokenizer::from_gguf(*v.g);
    return v;
}

// Granite 3.x (ibm-granite/granite-3.0-*-instruct):
// {{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' + message['content'] +
// '<|end_of_text|>\n' }} ... {{- '<|start_of_role|>assistant<|end_of_role|>' }}
TEST(ChatFormatGranite, two_turns_rendered_and_tokenized) {
    const std::string text =
        "<|start_of_role|>system<|end_of_role|>Be brief.<|end_of_text|>\n"
        "<|start_of_role|>user<|end_of_role|>Hi<|end_of_text|>\n"
        "<|start_of_role|>assistant<|end_of_role|>Hello<|end_of_text|>\n"
        "<|start_of_role|>user<|end_of_role|>Why?<|end_of_text|>\n"
        "<|start_of_role|>assistant<|end_of_role|>";
    EXPECT_EQ(chat_render(ChatFormat::Granite, conversation(), true), text);

    // Granite's <|end_of_text|> is id 0 and is both BOS and EOS.
    Vocab v = special_vocab("refact", {"<|end_of_text|>", "<|start_of_role|>", "<|end_of_role|>"}, 0, 0);
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    ASSERT_EQ(t.format, ChatFormat::Granite);
    EXPECT_FALSE(chat_format_has_bos(t.format));
    const Ids ids = v.tok->encode(chat_render(t, {{"user", "Hi"}}, true), false, true);
    const int32_t b = 3;  // first byte token
    const Ids expected = {1, b + 'u', b + 's', b + 'e', b + 'r', 2, b + 'H', b + 'i', 0, b + '\n',
                          1, b + 'a', b + 's', b + 's', b + 'i', b + 's', b + 't', b + 'a', b + 'n',
                          b + 't', 2};
    EXPECT_EQ(ids, expected);
    expect_stops_are_eog(v, t.format);
}

// DeepSeek-R1-Distill-Qwen (tokenizer_config.json, the revision whose generation prompt opens
// the think block): {{bos_token}}{{ns.system_prompt}} ... {{'<｜User｜>' + message['content']}} ...
// {% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}
// {{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}} ... {{'<｜Assistant｜><think>\n'}}
TEST(ChatFormatDeepSeekR1, two_turns_rendered_and_tokenized) {
    const std::string bos = "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
    const std::string eos = "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
    const std::string user = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>";
    const std::string assistant = "<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>";
    EXPECT_EQ(chat_render(ChatFormat::DeepSeekR1, conversation("<think>\nok\n</think>\n\nHello"), true),
              bos + "Be brief." + user + "Hi" + assistant + "\n\nHello" + eos + user + "Why?" +
                  assistant + "<think>\n");

    Vocab v = special_vocab("deepseek-r1-qwen", {bos, eos, user, assistant}, 0, 1);
    const ChatTemplate t = chat_template_for(*v.tok, *v.g);
    ASSERT_EQ(t.format, ChatFormat::DeepSeekR1);
    EXPECT_TRUE(chat_format_has_bos(t.format));
    const Ids ids = v.tok->encode(chat_render(t, {{"user", "Hi"}, {"assistant", "Yo"}}, false),
                                  !chat_format_has_bos(t.format), true);
    const int32_t b = 4;
    EXPECT_EQ(ids, (Ids{0, 2, b + 'H', b + 'i', 3, b + 'Y', b + 'o', 1}));
    expect_stops_are_eog(v, t.format);
}

TEST(ChatFormatDetect, unknown_template_of_a_sentencepiece_vocab) {
    Vocab v = load_vocab("llama-spm");
    EXPECT_EQ(chat_template_detect(*v.tok, "llama", "{{ bos_token }}{% for m in messages %}"
                                   "{{ ' [INST] ' + m['content'] + ' [/INST]' }}{% endfor %}").format,
              ChatFormat::MistralV1);
    EXPECT_EQ(chat_template_detect(*v.tok, "llama", "[INST] <<SYS>>").format, ChatFormat::Llama2);
    EXPECT_EQ(chat_template_detect(*v.tok, "phi3", "").format, ChatFormat::Phi3);
    EXPECT_EQ(chat_template_detect(*v.tok, "granite", "").format, ChatFormat::Granite);
}

}  // namespace
}  // namespace jitllm
