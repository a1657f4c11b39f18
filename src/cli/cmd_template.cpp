// jitllm template: renders a conversation with the model's chat template (or a template file)
// and prints the prompt exactly as the model would get it, with no newline added.
#include <cstdio>

#include "cli/cli_util.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "runtime/chat_format_jinja.h"
#include "tokenizer/tokenizer.h"

namespace jitllm::cli {

namespace {

nlohmann::ordered_json read_json(const std::string& path, const char* what) {
    std::FILE* fp = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
    if (!fp) fail("{}: cannot read the {}: {}", path, what, std::strerror(errno));
    std::string text;
    char buf[1 << 16];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, fp)) > 0;) {
        text.append(buf, n);
        if (text.size() > (size_t(256) << 20)) fail("{}: the {} is larger than 256 MiB", path, what);
    }
    const bool read_error = std::ferror(fp);
    if (fp != stdin) std::fclose(fp);
    if (read_error) fail("{}: cannot read the {}", path, what);
    try {
        return nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        fail("{}: the {} is not valid JSON (byte {})", path, what, e.byte);
    }
}

// KEY=JSON
std::pair<std::string, nlohmann::ordered_json> parse_var(const std::string& arg) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) fail_usage("--var {}: expected KEY=JSON", arg);
    try {
        return {arg.substr(0, eq), nlohmann::ordered_json::parse(arg.substr(eq + 1))};
    } catch (const nlohmann::json::parse_error&) {
        fail_usage("--var {}: the value is not JSON (a string needs quotes: KEY='\"text\"')", arg);
    }
}

}  // namespace

int cmd_template(const Args& args) {
    CLI::App app{"jitllm template: render a conversation with the model's chat template", "jitllm template"};
    std::string model = default_model_path(), messages_path, tools_path, template_path, template_name;
    std::vector<std::string> vars;
    bool no_gen = false, list = false;
    app.add_option("-m,--model", model, "GGUF model or vocab file (its template, BOS and EOS texts)");
    app.add_option("--messages", messages_path, "JSON file: the messages array ('-': standard input)");
    app.add_option("--tools", tools_path, "JSON file: the tools array (OpenAI's function definitions)");
    auto* tf = app.add_option("--template", template_path, "render this Jinja file instead of the model's template");
    app.add_option("--template-name", template_name, "the model's template tokenizer.chat_template.NAME")
        ->excludes(tf);
    app.add_flag("--no-generation-prompt", no_gen, "add_generation_prompt = false");
    app.add_option("--var", vars, "KEY=JSON: a further template variable (e.g. enable_thinking=false)");
    app.add_flag("--list", list, "list the model's template names and exit");
    if (!parse_args(app, args)) return 0;

    auto g = GgufReader::open(model);
    if (list) {
        for (const auto& n : chat_template_names(*g)) std::printf("%s\n", n.empty() ? "(default)" : n.c_str());
        return 0;
    }
    if (messages_path.empty()) fail_usage("jitllm template: expected --messages FILE");
    auto tok = Tokenizer::from_gguf(*g);
    std::string source, name = template_path;
    if (!template_path.empty()) {
        source = read_prompt_file(template_path);
    } else {
        source = chat_template_source(*g, template_name);
        name = template_name.empty() ? "tokenizer.chat_template" : "tokenizer.chat_template." + template_name;
        if (source.empty()) fail("{}: the file has no {}", model, name);
    }
    ChatVars cv;
    cv.messages = read_json(messages_path, "messages");
    if (!tools_path.empty()) cv.tools = read_json(tools_path, "tools");
    cv.add_generation_prompt = !no_gen;
    for (const auto& v : vars) {
        auto [k, j] = parse_var(v);
        cv.extra[k] = std::move(j);
    }
    const tmpl::Template t(source, name);
    const std::string out = chat_render_jinja(t, cv, chat_special_tokens(*tok, *g));
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

}  // namespace jitllm::cli
