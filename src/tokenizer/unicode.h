// Unicode helpers for the tokenizers: UTF-8 decoding that is as lenient as llama.cpp's (a bad
// byte becomes U+FFFD), GPT-2's byte <-> code point map, code point classes (from PCRE2's Unicode
// tables) and the NFD / lowercase maps WordPiece needs. Not a general Unicode library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jitllm::tok {

// Length of the UTF-8 sequence a byte starts, from its high nibble (a stray continuation byte
// counts as 1), as llama.cpp's symbol splitting does.
size_t utf8_seq_len(uint8_t lead);
// Decodes code points; an incomplete or invalid sequence yields U+FFFD and skips one byte.
// Overlong forms and surrogates are decoded, not rejected (matches llama.cpp unicode.cpp).
std::vector<uint32_t> utf8_decode(std::string_view s);
void utf8_append(std::string& out, uint32_t cpt);
std::string utf8_encode(uint32_t cpt);

// GPT-2 byte-level BPE alphabet: printable bytes map to themselves, the others to U+0100.. .
const std::string& byte_to_unicode(uint8_t b);  // UTF-8 of the mapped code point
int unicode_to_byte(uint32_t cpt);              // inverse; -1 when cpt is not in the map

// General category groups as llama.cpp's unicode flags use them.
enum class CptClass : uint8_t {
    Undefined, Letter, Number, Punctuation, Symbol, Mark, Control, Separator,
};
CptClass cpt_class(uint32_t cpt);
// Unicode White_Space (tab..CR, space, NEL, NBSP, U+1680, U+2000..U+200A, U+2028/9, U+202F,
// U+205F, U+3000).
bool cpt_is_whitespace(uint32_t cpt);
// Pattern text for White_Space inside a PCRE2 character class (no brackets).
extern const char* const kWhitespaceClass;

// First code point of the NFD decomposition (cpt itself when it has none).
uint32_t cpt_nfd_first(uint32_t cpt);
// First code point of the lowercase mapping (cpt itself when it has none).
uint32_t cpt_to_lower(uint32_t cpt);

// Generated tables behind the two maps above (unicode_data.cpp).
extern const char* const kNfdFirstData;
extern const char* const kLowerData;

}  // namespace jitllm::tok
