// Python's str operations on UTF-8 text (the template's strings are valid UTF-8: the source and
// the JSON inputs are checked): code-point indexing and slicing, white space as str.split() and
// str.strip() see it, case mapping, and the slice index arithmetic lists share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitllm::tmpl {

std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t cp);
int64_t utf8_length(std::string_view s);

bool py_isspace(char32_t c);  // str.isspace() of one character
// str.strip / lstrip / rstrip; chars: nullopt strips white space.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit) and str.rsplit; sep nullopt: runs of white space, no empty items.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
// str.find / rfind in code points (-1: not found).
int64_t py_find(std::string_view s, std::string_view sub, bool from_right);
int64_t py_count(std::string_view s, std::string_view sub);

// The indices a Python slice [start:stop:step] selects from a sequence of n items.
std::vector<int64_t> slice_indices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   std::optional<int64_t> step);

}  // namespace jitllm::tmpl
