// Strict UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF)
// for text read from untrusted files and command lines, escaping of such text for one-line
// error messages, escaping tables, and the encoding of one code point. Lenient decoding for tokenization lives in
// tokenizer/unicode.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace jitllm {

// Byte offset of the first byte that does not start a valid UTF-8 sequence; npos if all valid.
inline size_t utf8_invalid_at(std::string_view s) {
    const size_t n = s.size();
    size_t i = 0;
    while (i < n) {
        const uint8_t c = uint8_t(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1Fu, min = 0x80;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0Fu, min = 0x800;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07u, min = 0x10000;
        else return i;
        if (n - i < len) return i;
        for (size_t k = 1; k < len; ++k) {
            const uint8_t b = uint8_t(s[i + k]);
            if ((b & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (b & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += len;
    }
    return std::string_view::npos;
}

// One entry of a character escaping table: c written as text.
struct CharEscape {
    char32_t c;
    const char* text;
};

// c's text in an escaping table (JSON's, HTML's, a quoted string's...); nullptr where it has none.
template <size_t N>
constexpr const char* escape_of(char32_t c, const CharEscape (&table)[N]) {
    for (const CharEscape& e : table)
        if (e.c == c) return e.text;
    return nullptr;
}

// Code point cp appended as UTF-8: 1 to 4 bytes by its size (no check: a cp above U+10FFFF gets
// the 4-byte form of its low 21 bits; callers that may see one replace it first).
inline void utf8_put(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

// `s` for a message: control bytes, quotes, backslashes and bytes of invalid UTF-8 as \xNN,
// cut to `max_bytes` (then "..."), so that a hostile string cannot break the one-line format.
inline std::string escape_text(std::string_view s, size_t max_bytes = 200) {
    std::string out;
    const size_t bad = utf8_invalid_at(s);
    for (size_t i = 0; i < s.size(); ++i) {
        const uint8_t c = uint8_t(s[i]);
        if (out.size() >= max_bytes && (c & 0xC0) != 0x80) {  // never inside a sequence
            out += "...";
            break;
        }
        const bool raw = c >= 0x80 ? i < bad : (c >= 0x20 && c != 0x7f && c != '\'' && c != '"' &&
                                                 c != '\\');
        if (raw) out += char(c);
        else out += fmt::format("\\x{:02x}", c);
    }
    return out;
}

}  // namespace jitllm
