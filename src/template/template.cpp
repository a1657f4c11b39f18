// Template: parse once, render many times (see template.h).
#include "template/template.h"

#include "core/error.h"
#include "core/utf8.h"

namespace jitllm::tmpl {

namespace {

// The message on one line: control characters as \xNN, at most about 400 bytes (the text may
// quote a template's own strings).
std::string one_line(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size() && out.size() < 400; ++i) {
        const auto c = uint8_t(s[i]);
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
        else out += char(c);
    }
    if (out.size() >= 400) {
        while (!out.empty() && (uint8_t(out.back()) & 0xC0) == 0x80) out.pop_back();  // whole characters
        if (!out.empty() && uint8_t(out.back()) >= 0xC0) out.pop_back();
        out += "...";
    }
    return out;
}

[[noreturn]] void rethrow(const std::string& name, const TemplateFailure& f) {
    if (f.line <= 0) fail("{}: {}", name, one_line(f.what()));
    fail("{} line {}: {}", name, f.line, one_line(f.what()));
}

}  // namespace

Template::Template(std::string_view source, std::string name, Limits limits)
    : name_(std::move(name)), source_(source), limits_(limits) {
    const size_t bad = utf8_invalid_at(source);
    if (bad != std::string_view::npos) {
        int line = 1;
        for (size_t i = 0; i < bad; ++i) line += source[i] == '\n';
        fail("{} line {}: the template is not valid UTF-8 (byte {})", name_, line, bad);
    }
    try {
        body_ = std::make_unique<Body>(parse_template(source));
    } catch (const TemplateFailure& f) {
        rethrow(name_, f);
    }
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const nlohmann::ordered_json& vars) const {
    if (!vars.is_object()) fail("{}: the variables must be a JSON object, found {}", name_, vars.type_name());
    try {
        std::vector<std::pair<std::string, Value>> v;
        for (const auto& [k, j] : vars.items()) v.emplace_back(k, Value::from_json(j));
        Interpreter in(limits_);
        return in.render(*body_, v);
    } catch (const TemplateFailure& f) {
        rethrow(name_, f);
    }
}

}  // namespace jitllm::tmpl
