// The Jinja interpreter on its own: errors name the template line in one sentence, the limits
// hold (nesting, work, output, recursion), hostile or mutated templates never crash, and a few
// renderings whose expected text is python3-jinja2 3.1.6's (HF settings: trim_blocks,
// lstrip_blocks). The full comparison with jinja2 is jinja_oracle.py (template_jinja_oracle).
#include <gtest/gtest.h>

#include <dirent.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "fixtures/test_support.h"
#include "template/template.h"

namespace jitllm::tmpl {
namespace {

using json = nlohmann::ordered_json;

std::string render(const std::string& src, const json& vars = json::object(), Limits limits = {}) {
    return Template(src, "t", limits).render(vars);
}

// The error message of rendering `src`; "" when it renders.
std::string error_of(const std::string& src, const json& vars = json::object(), Limits limits = {}) {
    try {
        render(src, vars, limits);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(TemplateRender, MatchesJinja2OnReferenceCases) {
    const json vars = json::parse(R"({"msgs": [{"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Yo", "n": 2}], "n": 7, "u": "é✓日"})");
    const std::pair<const char*, const char*> cases[] = {
        {"a\n  {% if true %}\n  b\n  {% endif %}\nc\n", "a\n  b\nc"},
        {"a  {%- if true -%}  b  {%- endif -%}  c", "abc"},
        {"{% for i in [1,2] %}\n{{ i }}\n{% endfor %}", "1\n2\n"},
        {"{# comment #}\nA{#- c -#}  B", "AB"},
        {"line1\r\nline2\r\n", "line1\nline2"},
        {"{% for m in msgs %}{{ loop.index }}/{{ loop.length }}:{{ m.role }}{{ ',' if not loop.last }}{% endfor %}",
         "1/2:user,2/2:assistant"},
        {"{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", "21"},
        {"{% set ns = namespace(c=0) %}{% for i in range(4) %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}", "6"},
        {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 10 / 4 }} {{ -2 ** 2 }}", "3 -4 -2 2.5 4"},
        {"{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 3 / 3 }}", "0.30000000000000004 1e+20 1.5e-07 1.0"},
        {"{{ [1, 'a', none, true, {'k': (1, 2)}] }} {{ ('x',) }}", "[1, 'a', None, True, {'k': (1, 2)}] ('x',)"},
        {"{{ msgs|tojson(indent=2) }}",
         "[\n  {\n    \"role\": \"user\",\n    \"content\": \"Hi\"\n  },\n  {\n    \"role\": \"assistant\",\n"
         "    \"content\": \"Yo\",\n    \"n\": 2\n  }\n]"},
        {"{{ u|tojson }} {{ u|tojson(ensure_ascii=true) }} {{ u[1] }} {{ u|length }}",
         "\"é✓日\" \"\\u00e9\\u2713\\u65e5\" ✓ 3"},
        {"{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}", "Hi"},
        {"{{ 'a,b,c'.rsplit(',', 1) }} {{ '  x '.strip() }}|{{ 'hello there'.title() }}", "['a,b', 'c'] x|Hello There"},
    };
    for (const auto& [src, want] : cases) EXPECT_EQ(render(src, vars), want) << src;
}

TEST(TemplateRender, ErrorsAreOneSentenceNamingTheLine) {
    struct Case {
        const char* src;
        const char* want;  // a part of the message
    };
    const Case cases[] = {
        {"a\nb\n{% if x %}",
         "t line 3: expected {% elif %} or {% else %} or {% endif %}, found the end of the template"},
        {"{{ 'x' }}\n{{ y.z }}", "t line 2: 'y' is undefined"},
        {"\n\n{{ raise_exception('Roles must alternate') }}",
         "t line 3: the template raised an error: Roles must alternate"},
        {"{% for m in [1] %}\n\n{{ m + 'a' }}{% endfor %}",
         "t line 3: unsupported operand types for +: 'int' and 'str'"},
        {"{{ x|nosuch }}", "t line 1: no filter named 'nosuch'"},
        {"{% endfor %}", "t line 1: unknown tag {% endfor %}"},
        {"{{ 'open", "t line 1: a string literal is not closed"},
        {"{{ 1 }", "t line 1: a tag opened with {{ is not closed with }}"},
        {"{% set x.y = 1 %}", "cannot assign an attribute of 'x'"},
        {"{{ [1].append(2) }}", "the template may not modify a list ('append')"},
        {"{{ range(200000)|length }}", "range() of more than 100000 items"},
        {"{% break %}", "{% break %} outside a for loop"},
    };
    for (const auto& c : cases) {
        const std::string e = error_of(c.src);
        EXPECT_NE(e.find(c.want), std::string::npos) << c.src << " -> " << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
    EXPECT_NE(error_of("{{ x }}", json::array()).find("the variables must be a JSON object"), std::string::npos);
    EXPECT_NE(error_of("ok\xff").find("t line 1: the template is not valid UTF-8"), std::string::npos);
}

TEST(TemplateRender, LimitsHold) {
    // nesting of the source: brackets, blocks, an operator chain
    EXPECT_NE(error_of("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}").find("nests deeper"),
              std::string::npos);
    std::string blocks;
    for (int i = 0; i < 300; ++i) blocks += "{% if true %}";
    EXPECT_NE(error_of(blocks).find("nests deeper"), std::string::npos);
    std::string chain = "{{ 1";
    for (int i = 0; i < 100000; ++i) chain += "+1";
    EXPECT_NE(error_of(chain + " }}").find("an expression nests deeper"), std::string::npos);
    // work, output size, macro recursion, values that nest or hold themselves
    Limits small;
    small.max_steps = 100000;
    small.max_output = 1 << 20;
    const std::string loops = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    EXPECT_NE(error_of(loops, json::object(), small).find("steps of work"), std::string::npos);
    EXPECT_NE(error_of("{{ 'x' * 100000000 }}", json::object(), small).find("more than 1048576 bytes"),
              std::string::npos);
    EXPECT_NE(error_of("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                       "{% endfor %}",
                       json::object(), small)
                  .find("more than 1048576 bytes"),
              std::string::npos);
    EXPECT_NE(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("macro calls nest deeper"),
              std::string::npos);
    EXPECT_NE(error_of("{% set ns = namespace(x=1) %}{% for i in range(2000) %}{% set ns.x = [ns.x] %}{% endfor %}")
                  .find("a value nests deeper"),
              std::string::npos);
    EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = [1, {'a': ns}] %}").find("cannot hold itself"),
              std::string::npos);
    json deep = json::array();
    for (int i = 0; i < 2000; ++i) deep = json::array({deep});
    EXPECT_NE(error_of("{{ v }}", {{"v", deep}}).find("a JSON value nests deeper"), std::string::npos);
}

// Renders `src`, which must either give text or throw jitllm::Error (a crash fails the test).
void render_or_error(const std::string& src, const json& vars) {
    Limits small;
    small.max_steps = 200000;
    small.max_output = 1 << 20;
    try {
        Template(src, "fuzz", small).render(vars);
    } catch (const Error&) {
    }
}

TEST(TemplateRender, RandomTemplatesNeverCrash) {
    static const char* const pieces[] = {
        "{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", " if ", " elif ", " else ", " endif ",
        " for ", " in ", " endfor ", " set ", " = ", " macro ", " endmacro ", " call ", " endcall ", " filter ",
        " endfilter ", " raw ", " endraw ", "(", ")", "[", "]", "{", "}", ",", ":", ".", "|", "~", "+", "-", "*",
        "/", "//", "%", "**", "==", "!=", "<", ">=", " not ", " and ", " or ", " is ", " defined ", "'s'", "\"d\"",
        "1", "2.5", "x", "ns", "loop", "messages", "m", "tojson", "trim", "length", "items", "namespace(", "range(",
        "loop.index", "messages[0]", "m.role", "\n", " ", "text", "\\", "'", "break", "continue", "none", "true"};
    const json vars = json::parse(R"({"messages": [{"role": "user", "content": "Hi"}], "x": [1, {"a": "b"}]})");
    std::mt19937 rng(12345);
    for (int n = 0; n < 3000; ++n) {
        std::string src;
        const int len = 1 + int(rng() % 40);
        for (int i = 0; i < len; ++i) src += pieces[rng() % (sizeof pieces / sizeof pieces[0])];
        render_or_error(src, vars);
    }
}

TEST(TemplateRender, MutatedRealTemplatesNeverCrash) {
    const std::string dir = test::data_path("templates");
    DIR* d = opendir(dir.c_str());
    ASSERT_NE(d, nullptr) << dir;
    std::vector<std::string> files;
    while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.size() > 6 && name.compare(name.size() - 6, 6, ".jinja") == 0) files.push_back(dir + "/" + name);
    }
    closedir(d);
    ASSERT_GE(files.size(), 15u);
    const json vars = json::parse(test::read_file(dir + "/conversations.json"))["conversations"][8];
    json v = json::object();
    v["messages"] = vars["messages"];
    v["tools"] = vars["tools"];
    v["bos_token"] = "<s>";
    std::mt19937 rng(777);
    for (const auto& f : files) {
        const std::string src = test::read_file(f);
        for (int n = 0; n < 150; ++n) {
            std::string m = src;
            for (int k = 1 + int(rng() % 4); k > 0 && !m.empty(); --k) {
                const size_t at = rng() % m.size();
                switch (rng() % 3) {
                    case 0: m.erase(at, 1 + rng() % 8); break;
                    case 1: m.insert(at, m.substr(rng() % m.size(), 1 + rng() % 12)); break;
                    default: m[at] = "{}%#-+()[]'\"|.~ \n"[rng() % 17];
                }
            }
            render_or_error(m, v);
        }
    }
}

}  // namespace
}  // namespace jitllm::tmpl
