// Python str operations on UTF-8 (see pystr.h).
#include "template/pystr.h"

#include <algorithm>

#include "core/utf8.h"

namespace jitllm::tmpl {

std::u32string utf8_decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const auto c = uint8_t(s[i]);
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        if (i + len > s.size()) len = 1;
        char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3F);
        out += cp;
        i += len;
    }
    return out;
}

void utf8_append(std::string& out, char32_t cp) { utf8_put(out, uint32_t(cp)); }

std::string utf8_encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) utf8_append(out, c);
    return out;
}

int64_t utf8_length(std::string_view s) {
    int64_t n = 0;
    for (char c : s) n += (uint8_t(c) & 0xC0) != 0x80;
    return n;
}

bool py_isspace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
    const std::u32string u = utf8_decode(s);
    const std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
    auto strip = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
    size_t b = 0, e = u.size();
    if (left)
        while (b < e && strip(u[b])) ++b;
    if (right)
        while (e > b && strip(u[e - 1])) --e;
    return utf8_encode(std::u32string_view(u).substr(b, e - b));
}

namespace {

// split() on white space: the words, at most maxsplit splits (the rest kept as it is, but for
// the white space at the splitting end).
std::vector<std::string> split_space(std::string_view s, int64_t maxsplit, bool from_right) {
    std::u32string u = utf8_decode(s);
    if (from_right) std::reverse(u.begin(), u.end());
    std::vector<std::string> out;
    size_t i = 0;
    while (true) {
        while (i < u.size() && py_isspace(u[i])) ++i;
        if (i == u.size()) break;
        if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
            std::u32string rest = u.substr(i);
            if (from_right) std::reverse(rest.begin(), rest.end());
            out.push_back(utf8_encode(rest));
            break;
        }
        size_t j = i;
        while (j < u.size() && !py_isspace(u[j])) ++j;
        std::u32string word = u.substr(i, j - i);
        if (from_right) std::reverse(word.begin(), word.end());
        out.push_back(utf8_encode(word));
        i = j;
    }
    if (from_right) std::reverse(out.begin(), out.end());
    return out;
}

// Simple case mapping: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic capitals.
char32_t to_upper(char32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if (c < 0x80) return c;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) ||
        (c >= 0x430 && c <= 0x44F))
        return c - 32;
    if (c == 0xFF) return 0x178;
    if (c >= 0x450 && c <= 0x45F) return c - 0x50;
    if (c >= 0x100 && c <= 0x177 && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149) {
        const bool odd_lower = (c >= 0x139 && c <= 0x148) ? (c % 2 == 0) : (c % 2 == 1);
        return odd_lower ? c - 1 : c;
    }
    return c;
}

char32_t to_lower(char32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c < 0x80) return c;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) ||
        (c >= 0x410 && c <= 0x42F))
        return c + 32;
    if (c == 0x178) return 0xFF;
    if (c >= 0x400 && c <= 0x40F) return c + 0x50;
    if (c >= 0x100 && c <= 0x177 && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149) {
        const bool odd_lower = (c >= 0x139 && c <= 0x148) ? (c % 2 == 0) : (c % 2 == 1);
        return odd_lower ? c : c + 1;
    }
    return c;
}

bool is_cased(char32_t c) { return to_upper(c) != c || to_lower(c) != c || c == 0xDF; }

std::string map_chars(std::string_view s, char32_t (*f)(char32_t)) {
    std::u32string u = utf8_decode(s);
    for (auto& c : u) c = f(c);
    return utf8_encode(u);
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right) {
    if (!sep) return split_space(s, maxsplit, from_right);
    std::vector<std::string> out;
    const std::string& d = *sep;
    if (!from_right) {
        size_t at = 0;
        while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
            const size_t p = s.find(d, at);
            if (p == std::string_view::npos) break;
            out.emplace_back(s.substr(at, p - at));
            at = p + d.size();
        }
        out.emplace_back(s.substr(at));
        return out;
    }
    size_t end = s.size();
    while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
        if (end < d.size()) break;
        const size_t p = s.rfind(d, end - d.size());
        if (p == std::string_view::npos) break;
        out.emplace_back(s.substr(p + d.size(), end - p - d.size()));
        end = p;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
    const std::u32string u = utf8_decode(s);
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i < u.size(); ++i) {
        const char32_t c = u[i];
        const bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
                         c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!brk) continue;
        size_t end = i + 1;
        if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') end = i + 2;
        out.push_back(utf8_encode(std::u32string_view(u).substr(start, (keepends ? end : i) - start)));
        start = end;
        i = end - 1;
    }
    if (start < u.size()) out.push_back(utf8_encode(std::u32string_view(u).substr(start)));
    return out;
}

std::string py_upper(std::string_view s) {
    std::string out;
    for (char32_t c : utf8_decode(s)) {
        if (c == 0xDF) out += "SS";
        else utf8_append(out, to_upper(c));
    }
    return out;
}

std::string py_lower(std::string_view s) { return map_chars(s, to_lower); }

std::string py_title(std::string_view s) {
    std::u32string u = utf8_decode(s);
    bool prev_cased = false;
    for (auto& c : u) {
        const bool cased = is_cased(c);
        c = prev_cased ? to_lower(c) : to_upper(c);
        prev_cased = cased;
    }
    return utf8_encode(u);
}

std::string py_capitalize(std::string_view s) {
    std::u32string u = utf8_decode(s);
    for (size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? to_upper(u[i]) : to_lower(u[i]);
    return utf8_encode(u);
}

std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
    std::string out;
    if (from.empty()) {  // Python inserts `to` around every character
        const std::u32string u = utf8_decode(s);
        int64_t n = 0;
        for (size_t i = 0; i <= u.size(); ++i) {
            if (count < 0 || n < count) {
                out += to;
                ++n;
            }
            if (i < u.size()) utf8_append(out, u[i]);
        }
        return out;
    }
    size_t at = 0;
    for (int64_t n = 0; count < 0 || n < count; ++n) {
        const size_t p = s.find(from, at);
        if (p == std::string_view::npos) break;
        out.append(s.substr(at, p - at));
        out.append(to);
        at = p + from.size();
    }
    out.append(s.substr(at));
    return out;
}

int64_t py_find(std::string_view s, std::string_view sub, bool from_right) {
    const size_t p = from_right ? s.rfind(sub) : s.find(sub);
    return p == std::string_view::npos ? -1 : utf8_length(s.substr(0, p));
}

int64_t py_count(std::string_view s, std::string_view sub) {
    if (sub.empty()) return utf8_length(s) + 1;
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string_view::npos; p = s.find(sub, p + sub.size())) ++n;
    return n;
}

std::vector<int64_t> slice_indices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   std::optional<int64_t> step) {
    const int64_t st = step.value_or(1);
    std::vector<int64_t> out;
    if (st == 0) return out;  // the caller reports "slice step cannot be zero"
    auto clamp = [&](std::optional<int64_t> v, int64_t dflt, int64_t lo, int64_t hi) {
        if (!v) return dflt;
        int64_t x = *v < 0 ? *v + n : *v;
        return std::clamp(x, lo, hi);
    };
    if (st > 0) {
        const int64_t b = clamp(start, 0, 0, n), e = clamp(stop, n, 0, n);
        for (int64_t i = b; i < e; i += st) out.push_back(i);
    } else {
        const int64_t b = clamp(start, n - 1, -1, n - 1), e = clamp(stop, -1, -1, n - 1);
        for (int64_t i = b; i > e; i += st) out.push_back(i);
    }
    return out;
}

}  // namespace jitllm::tmpl
