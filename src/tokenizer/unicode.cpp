// Unicode helpers for the tokenizers (see unicode.h). Code point classes come from PCRE2's
// Unicode tables, one anchored match per code point, cached; NFD / lowercase data is parsed once
// from unicode_data.cpp.
#include "tokenizer/unicode.h"

#include <pcre2.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/utf8.h"

namespace jitllm::tok {

const char* const kWhitespaceClass =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";

size_t utf8_seq_len(uint8_t lead) {
    static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLen[lead >> 4];
}

std::vector<uint32_t> utf8_decode(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    size_t i = 0;
    auto cont = [&](size_t k) { return i + k < s.size() && (uint8_t(s[i + k]) & 0xC0) == 0x80; };
    while (i < s.size()) {
        const uint8_t c = uint8_t(s[i]);
        if (c < 0x80) {
            out.push_back(c);
            i += 1;
        } else if ((c & 0xE0) == 0xC0 && cont(1)) {
            out.push_back(((c & 0x1Fu) << 6) | (uint8_t(s[i + 1]) & 0x3Fu));
            i += 2;
        } else if ((c & 0xF0) == 0xE0 && cont(1) && cont(2)) {
            out.push_back(((c & 0x0Fu) << 12) | ((uint8_t(s[i + 1]) & 0x3Fu) << 6) |
                          (uint8_t(s[i + 2]) & 0x3Fu));
            i += 3;
        } else if ((c & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
            out.push_back(((c & 0x07u) << 18) | ((uint8_t(s[i + 1]) & 0x3Fu) << 12) |
                          ((uint8_t(s[i + 2]) & 0x3Fu) << 6) | (uint8_t(s[i + 3]) & 0x3Fu));
            i += 4;
        } else {
            out.push_back(0xFFFD);
            i += 1;
        }
    }
    return out;
}

void utf8_append(std::string& out, uint32_t cpt) { utf8_put(out, cpt > 0x10FFFF ? 0xFFFD : cpt); }

std::string utf8_encode(uint32_t cpt) {
    std::string s;
    utf8_append(s, cpt);
    return s;
}

// --- GPT-2 bytes_to_unicode ---

namespace {

struct ByteMap {
    std::array<std::string, 256> to_unicode;
    std::array<int16_t, 256 + 68> to_byte;  // code point -> byte, -1 when not in the alphabet
    ByteMap() {
        to_byte.fill(-1);
        // Bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the remaining 68
        // bytes take U+0100, U+0101, ... in byte order (GPT-2 encoder.py).
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            const uint32_t cpt = printable ? uint32_t(b) : next++;
            to_unicode[b] = utf8_encode(cpt);
            to_byte[cpt] = int16_t(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap m;
    return m;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return byte_map().to_unicode[b]; }

int unicode_to_byte(uint32_t cpt) {
    const auto& m = byte_map().to_byte;
    return cpt < m.size() ? m[cpt] : -1;
}

// --- code point classes ---

bool cpt_is_whitespace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

namespace {

// One anchored pattern whose capture group number is the class (llama.cpp's flag groups:
// C* except Cn is "control", Z* is "separator").
class Classifier {
public:
    Classifier() {
        static const char* kPattern =
            "(\\p{L})|(\\p{N})|(\\p{P})|(\\p{S})|(\\p{M})|([\\p{Cc}\\p{Cf}\\p{Co}])|(\\p{Z})";
        int err = 0;
        PCRE2_SIZE off = 0;
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &err, &off, nullptr);
        JITLLM_CHECK(code_ != nullptr, "class pattern failed to compile (error {})", err);
        cache_ = std::make_unique<std::atomic<uint8_t>[]>(0x110000);
    }
    ~Classifier() { pcre2_code_free(code_); }

    CptClass classify(uint32_t cpt) {
        if (cpt > 0x10FFFF) return CptClass::Undefined;
        if (cpt >= 0xD800 && cpt <= 0xDFFF) return CptClass::Control;  // Cs
        const uint8_t cached = cache_[cpt].load(std::memory_order_relaxed);
        if (cached) return CptClass(cached - 1);
        const std::string s = utf8_encode(cpt);
        pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
        const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0,
                                   0, md, nullptr);
        CptClass cls = CptClass::Undefined;
        if (rc > 1) {
            static constexpr CptClass kByGroup[] = {
                CptClass::Undefined, CptClass::Letter, CptClass::Number, CptClass::Punctuation,
                CptClass::Symbol,    CptClass::Mark,   CptClass::Control, CptClass::Separator};
            cls = kByGroup[rc - 1];
        }
        pcre2_match_data_free(md);
        cache_[cpt].store(uint8_t(cls) + 1, std::memory_order_relaxed);
        return cls;
    }

private:
    pcre2_code* code_ = nullptr;
    std::unique_ptr<std::atomic<uint8_t>[]> cache_;
};

}  // namespace

CptClass cpt_class(uint32_t cpt) {
    static Classifier classifier;
    return classifier.classify(cpt);
}

// --- NFD first code point, lowercase ---

namespace {

struct Range {
    uint32_t first, last;
    uint32_t step;  // lowercase runs only: 0 for a single code point
    int32_t value;  // NFD: target code point; lowercase: delta
};

// Parses "first[-last[/step]]:value" items separated by spaces (see unicode_data.cpp).
std::vector<Range> parse_ranges(const char* p, bool hex_value) {
    std::vector<Range> out;
    while (*p) {
        if (*p == ' ') { ++p; continue; }
        char* end = nullptr;
        Range r{};
        r.first = r.last = uint32_t(std::strtoul(p, &end, 16));
        if (*end == '-') r.last = uint32_t(std::strtoul(end + 1, &end, 16));
        if (*end == '/') r.step = uint32_t(std::strtoul(end + 1, &end, 10));
        JITLLM_CHECK(*end == ':', "malformed unicode data near '{:.12}'", p);
        r.value = int32_t(std::strtol(end + 1, &end, hex_value ? 16 : 10));
        out.push_back(r);
        p = end;
    }
    return out;
}

const Range* find_range(const std::vector<Range>& v, uint32_t cpt) {
    auto it = std::upper_bound(v.begin(), v.end(), cpt,
                               [](uint32_t c, const Range& r) { return c < r.first; });
    if (it == v.begin()) return nullptr;
    --it;
    return cpt <= it->last ? &*it : nullptr;
}

}  // namespace

uint32_t cpt_nfd_first(uint32_t cpt) {
    if (cpt >= 0xAC00 && cpt <= 0xD7A3) return 0x1100 + (cpt - 0xAC00) / 588;  // Hangul L jamo
    static const std::vector<Range> table = parse_ranges(kNfdFirstData, true);
    const Range* r = find_range(table, cpt);
    return r ? uint32_t(r->value) : cpt;
}

uint32_t cpt_to_lower(uint32_t cpt) {
    static const std::vector<Range> table = parse_ranges(kLowerData, false);
    const Range* r = find_range(table, cpt);
    if (!r) return cpt;
    if (r->step > 1 && (cpt - r->first) % r->step != 0) return cpt;
    return uint32_t(int64_t(cpt) + r->value);
}

}  // namespace jitllm::tok
