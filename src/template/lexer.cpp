// Jinja2's lexer (see lexer.h). The rules follow jinja2/lexer.py's behaviour: text up to the next
// tag start; inside a tag, tokens up to the tag's end, which is recognised only outside brackets.
#include "template/lexer.h"

#include <cstring>

#include "template/pystr.h"
#include "template/value.h"

namespace jitllm::tmpl {

namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python's str.rstrip() / the length of a leading run of `\s` in a str regex.
std::string rstrip_space(std::string_view s) { return py_strip(s, std::nullopt, false, true); }
size_t space_run(std::string_view s, size_t at) {
    const std::string rest = py_strip(s.substr(at), std::nullopt, true, false);
    return s.size() - at - rest.size();
}

int count_lines(std::string_view s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

class Lexer {
public:
    Lexer(std::string src, const LexOptions& opt) : s_(std::move(src)), opt_(opt) {}

    std::vector<Token> run() {
        bool line_starting = true;
        while (pos_ < s_.size()) {
            const size_t start = next_tag(pos_);
            std::string text = s_.substr(pos_, (start == std::string::npos ? s_.size() : start) - pos_);
            if (start == std::string::npos) {
                emit_text(std::move(text));
                break;
            }
            const char kind = s_[start + 1];  // '{', '%' or '#'
            const char sign = start + 2 < s_.size() ? s_[start + 2] : '\0';
            if (sign == '-') {
                text = rstrip_space(text);
            } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
                const size_t nl = text.rfind('\n');
                const size_t l = nl == std::string::npos ? 0 : nl + 1;
                if ((l > 0 || line_starting) && l < text.size() && space_run(text, l) == text.size() - l)
                    text.resize(l);
            }
            line_ += count_lines(std::string_view(s_).substr(pos_, start - pos_));
            emit_text(std::move(text));
            pos_ = start + 2 + (sign == '-' || sign == '+');
            if (kind == '#') comment();
            else if (kind == '%' && raw_block(start)) {}
            else tag(kind);
            line_starting = pos_ > 0 && s_[pos_ - 1] == '\n';
        }
        toks_.push_back(Token{Token::Kind::Eof, "", line_});
        return std::move(toks_);
    }

private:
    size_t next_tag(size_t from) const {
        for (size_t p = s_.find('{', from); p != std::string::npos; p = s_.find('{', p + 1))
            if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
        return std::string::npos;
    }

    void emit_text(std::string text) {
        if (!text.empty()) toks_.push_back(Token{Token::Kind::Text, std::move(text), line_});
    }

    // After a tag's closing delimiter: "-" eats the white space that follows; trim_blocks the one
    // newline after a block tag or comment.
    void after_close(char sign, bool block) {
        if (sign == '-') {
            const size_t n = space_run(s_, pos_);
            line_ += count_lines(std::string_view(s_).substr(pos_, n));
            pos_ += n;
        } else if (sign != '+' && block && opt_.trim_blocks && pos_ < s_.size() && s_[pos_] == '\n') {
            ++pos_;
            ++line_;
        }
    }

    void comment() {
        const size_t end = s_.find("#}", pos_);
        if (end == std::string::npos) failure_at(line_, "a comment {# is not closed with #}");
        const char sign = end > pos_ && (s_[end - 1] == '-' || s_[end - 1] == '+') ? s_[end - 1] : '\0';
        line_ += count_lines(std::string_view(s_).substr(pos_, end - pos_));
        pos_ = end + 2;
        after_close(sign, true);
    }

    // {% raw %} ... {% endraw %}: the text between, as it is. False where the tag is not raw.
    bool raw_block(size_t tag_start) {
        size_t p = pos_ + space_run(s_, pos_);
        if (s_.compare(p, 3, "raw") != 0 || (p + 3 < s_.size() && is_name_char(s_[p + 3]))) return false;
        p += 3;
        p += space_run(s_, p);
        const bool strip_after = s_.compare(p, 3, "-%}") == 0;
        if (!strip_after && s_.compare(p, 2, "%}") != 0) return false;
        p += strip_after ? 3 : 2;
        for (size_t e = s_.find("{%", p); e != std::string::npos; e = s_.find("{%", e + 2)) {
            size_t q = e + 2;
            const char sign = q < s_.size() && (s_[q] == '-' || s_[q] == '+') ? s_[q] : '\0';
            q += sign != '\0';
            q += space_run(s_, q);
            if (s_.compare(q, 6, "endraw") != 0) continue;
            q += 6;
            q += space_run(s_, q);
            const char close = q < s_.size() && (s_[q] == '-' || s_[q] == '+') ? s_[q] : '\0';
            if (s_.compare(q + (close != '\0'), 2, "%}") != 0) continue;
            std::string body = s_.substr(p, e - p);
            if (strip_after) body = py_strip(body, std::nullopt, true, false);
            if (sign == '-') body = rstrip_space(body);
            emit_text(std::move(body));
            line_ += count_lines(std::string_view(s_).substr(pos_, q - pos_));
            pos_ = q + (close != '\0') + 2;
            after_close(close, true);
            return true;
        }
        failure_at(line_ + count_lines(std::string_view(s_).substr(tag_start, pos_ - tag_start)),
                   "a {% raw %} block is not closed with {% endraw %}");
    }

    // The tokens of a {{ }} or {% %} tag, then its end.
    void tag(char kind) {
        const bool block = kind == '%';
        const int open_line = line_;
        toks_.push_back(Token{block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, "", line_});
        const char* close = block ? "%}" : "}}";
        int depth = 0;
        while (true) {
            while (pos_ < s_.size() && std::strchr(" \t\n\r\f\v", s_[pos_])) line_ += s_[pos_++] == '\n';
            if (pos_ >= s_.size())
                failure_at(open_line,
                           std::string("a tag opened with ") + (block ? "{%" : "{{") + " is not closed with " + close);
            if (depth == 0) {
                const char sign = s_[pos_] == '-' || s_[pos_] == '+' ? s_[pos_] : '\0';
                if (s_.compare(pos_ + (sign != '\0'), 2, close) == 0 && (sign != '+' || block)) {
                    pos_ += 2 + (sign != '\0');
                    toks_.push_back(Token{block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, "", line_});
                    after_close(sign, block);
                    return;
                }
            }
            token(depth);
        }
    }

    void token(int& depth) {
        const char c = s_[pos_];
        if (is_name_start(c)) {
            const size_t b = pos_;
            while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
            toks_.push_back(Token{Token::Kind::Name, s_.substr(b, pos_ - b), line_});
        } else if (is_digit(c)) {
            number();
        } else if (c == '\'' || c == '"') {
            string_literal(c);
        } else {
            static const char* const two[] = {"//", "**", "==", "!=", "<=", ">="};
            for (const char* op : two)
                if (s_.compare(pos_, 2, op) == 0) {
                    toks_.push_back(Token{Token::Kind::Op, op, line_});
                    pos_ += 2;
                    return;
                }
            if (!std::strchr("+-*/%~[](){}<>=.:|,;", c))
                failure_at(line_, std::string("unexpected character '") + c + "' in a tag");
            if (c == '(' || c == '[' || c == '{') ++depth;
            if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
            toks_.push_back(Token{Token::Kind::Op, std::string(1, c), line_});
            ++pos_;
        }
    }

    void number() {
        const size_t b = pos_;
        auto digits = [&] {
            while (pos_ < s_.size() && (is_digit(s_[pos_]) || (s_[pos_] == '_' && pos_ + 1 < s_.size() &&
                                                               is_digit(s_[pos_ + 1]))))
                ++pos_;
        };
        digits();
        bool is_float = false;
        if (pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
            is_float = true;
            ++pos_;
            digits();
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            size_t q = pos_ + 1;
            if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
            if (q < s_.size() && is_digit(s_[q])) {
                is_float = true;
                pos_ = q;
                digits();
            }
        }
        std::string text;
        for (size_t i = b; i < pos_; ++i)
            if (s_[i] != '_') text += s_[i];
        Token t{is_float ? Token::Kind::Float : Token::Kind::Int, text, line_};
        if (is_float) {
            t.float_value = std::strtod(text.c_str(), nullptr);
        } else {
            errno = 0;
            t.int_value = std::strtoll(text.c_str(), nullptr, 10);
            if (errno == ERANGE) failure_at(line_, "the integer " + text + " does not fit in 64 bits");
        }
        toks_.push_back(std::move(t));
    }

    void string_literal(char q) {
        const int start_line = line_;
        std::string out;
        ++pos_;
        while (true) {
            if (pos_ >= s_.size()) failure_at(start_line, "a string literal is not closed");
            const char c = s_[pos_++];
            if (c == q) break;
            line_ += c == '\n';
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= s_.size()) failure_at(start_line, "a string literal is not closed");
            escape(out);
        }
        toks_.push_back(Token{Token::Kind::String, std::move(out), start_line});
    }

    // One backslash escape of a string literal, as Python's unicode-escape reads it (unknown
    // escapes keep their backslash).
    void escape(std::string& out) {
        const char e = s_[pos_++];
        switch (e) {
            case '\n': ++line_; return;
            case '\\': out += '\\'; return;
            case '\'': out += '\''; return;
            case '"': out += '"'; return;
            case 'a': out += '\a'; return;
            case 'b': out += '\b'; return;
            case 'f': out += '\f'; return;
            case 'n': out += '\n'; return;
            case 'r': out += '\r'; return;
            case 't': out += '\t'; return;
            case 'v': out += '\v'; return;
            default: break;
        }
        const int width = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (width > 0) {
            char32_t cp = 0;
            for (int k = 0; k < width; ++k) {
                const char h = pos_ < s_.size() ? s_[pos_] : '\0';
                const int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                                      : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                if (d < 0) failure_at(line_, std::string("a \\") + e + " escape needs " + std::to_string(width) +
                                                 " hex digits");
                cp = cp * 16 + char32_t(d);
                ++pos_;
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                failure_at(line_, "a string escape names no Unicode character");
            utf8_append(out, cp);
        } else if (e >= '0' && e <= '7') {
            char32_t cp = char32_t(e - '0');
            for (int k = 0; k < 2 && pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '7'; ++k)
                cp = cp * 8 + char32_t(s_[pos_++] - '0');
            utf8_append(out, cp);
        } else {
            out += '\\';
            --pos_;
        }
    }

    std::string s_;
    LexOptions opt_;
    size_t pos_ = 0;
    int line_ = 1;
    std::vector<Token> toks_;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& opt) {
    std::string s;
    s.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            s += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            s += source[i];
        }
    }
    if (!s.empty() && s.back() == '\n') s.pop_back();  // keep_trailing_newline=False
    return Lexer(std::move(s), opt).run();
}

}  // namespace jitllm::tmpl
