// Jinja2's lexer as Hugging Face configures it for chat templates: {{ }}, {% %} and {# #} with
// the - and + white-space controls, trim_blocks (the newline after a block tag goes),
// lstrip_blocks (spaces and tabs before a block tag on its line go), one trailing newline of the
// source dropped, \r\n and \r read as \n, {% raw %} blocks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jitllm::tmpl {

struct Token {
    enum class Kind { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
    Kind kind;
    std::string text;  // Text, Name, String (unescaped), Op; Int and Float: their spelling
    int line = 1;
    int64_t int_value = 0;
    double float_value = 0;
};

struct LexOptions {
    bool trim_blocks = true;
    bool lstrip_blocks = true;
};

// Fails (TemplateFailure, message "line N: ...") on an unclosed tag, comment or string, or a
// character no token starts with.
std::vector<Token> lex(std::string_view source, const LexOptions& opt = {});

}  // namespace jitllm::tmpl
