// A Jinja2 template, parsed once and rendered with JSON variables, as Hugging Face renders a
// model's chat template (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the
// loop controls; tojson without HTML escaping; raise_exception and strftime_now). The output
// matches python3-jinja2's byte for byte for the subset chat templates use (tests/template).
//
// Errors (syntax, a failing filter, raise_exception, a limit) throw jitllm::Error with one
// sentence naming the template and line: "chat template line 12: ...".
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "template/interpreter.h"

namespace jitllm::tmpl {

class Template {
public:
    // `name` starts the error messages ("chat template", a file name).
    explicit Template(std::string_view source, std::string name = "chat template", Limits limits = {});
    ~Template();
    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;

    // `vars` must be a JSON object: its members are the template's variables, in order.
    std::string render(const nlohmann::ordered_json& vars) const;

    const std::string& name() const { return name_; }
    const std::string& source() const { return source_; }

private:
    std::string name_;
    std::string source_;
    Limits limits_;
    std::unique_ptr<Body> body_;
};

}  // namespace jitllm::tmpl
