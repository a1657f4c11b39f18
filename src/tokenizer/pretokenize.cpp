// BPE pre-tokenizer regexes per tokenizer.ggml.pre and the PCRE2 splitter (see pretokenize.h).
// The regexes reproduce llama.cpp src/llama-vocab.cpp (llm_tokenizer_bpe) as its matcher sees
// them: its custom gpt2/llama3 splitters, and std::regex over "collapsed" text where every
// non-ASCII code point stands for its category and non-ASCII white space for \v. Where that view
// differs from plain Unicode regex semantics the pattern below says so.
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace jitllm::tok {

namespace {

// --- patterns ---

// GPT-2 (llama.cpp also uses this text to pick its hand-written splitter).
const char* const kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Case-insensitive contractions written out, as llama.cpp's adapted Llama-3 regex does.
#define JITLLM_CONTRACTIONS R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"
const char* const kLlama3 = JITLLM_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 = JITLLM_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen35 = JITLLM_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+)"
    R"(|\s+(?!\S)|\s+)";
const char* const kSeedCoder = JITLLM_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
// "Upper* lower+ | upper+ lower*": collapsed text makes every non-ASCII letter count as both
// cases, which (?=\p{L})[^a-z] and (?=\p{L})[^A-Z] reproduce.
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+)"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+)" JITLLM_CONTRACTIONS "?"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*)" JITLLM_CONTRACTIONS "?"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
#undef JITLLM_CONTRACTIONS
// DeepSeek LLM's cased-letter class (from its tokenizer.json, as llama.cpp carries it).
const char* const kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
    R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
    R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
    R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)";
// The original class ends with U+3000..U+3002, but U+3000 is white space and llama.cpp's
// std::wregex path sees it as \v, so it never matches here.
const char* const kDeepseekPunct =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3001}\x{3002}]+)";
// CJK runs; U+0800..U+4E00 contains white space, which llama.cpp's matcher never sees as such.
const char* const kDeepseekCjk =
    R"((?:(?!\s)[\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}])+)";
const char* const kPoro = R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";

struct NamedSpec {
    std::vector<std::string_view> names;
    PreTokenizerSpec spec;
};

const std::vector<NamedSpec>& spec_table() {
    static const std::vector<NamedSpec> table = [] {
        std::vector<NamedSpec> t;
        auto add = [&](std::vector<std::string_view> names, std::vector<std::string> patterns,
                       bool ignore_merges = false, bool add_bos = false,
                       bool clean_spaces = true) {
            PreTokenizerSpec s;
            s.patterns = std::move(patterns);
            s.ignore_merges = ignore_merges;
            s.add_bos = add_bos;
            s.clean_spaces = clean_spaces;
            t.push_back({std::move(names), std::move(s)});
        };
        add({"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"});
        add({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
             "lfm2"},
            {kLlama3}, true, true);
        add({"dbrx", "smaug-bpe"}, {kLlama3});
        add({"deepseek-llm"},
            {"[\\r\\n]", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kDeepseekCjk,
             R"(\p{N}+)"},
            false, false, false);
        add({"deepseek-coder"},
            {"[\\r\\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}, false, false,
            false);
        // \p{S} is written out without '~': llama.cpp's collapsed ASCII symbol set lacks it.
        add({"deepseek-v3"},
            {R"(\p{N}{1,3})",
             R"((?:(?!\s)[\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}])+)",
             R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+)"
             R"(|(?:~|[^\r\n\p{L}\p{P}\p{S}])?[\p{L}\p{M}]+| ?(?:(?!~)[\p{P}\p{S}])+[\r\n]*)"
             R"(|\s*[\r\n]+|\s+(?!\S)|\s+)"},
            false, false, false);
        add({"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"});
        add({"starcoder", "refact", "codeshell", "exaone", "minerva-7b"}, {R"(\p{N})", kGpt2});
        add({"command-r", "smollm"}, {R"(\p{N})", kGpt2}, false, false, false);
        add({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es",
             "jina-v2-de", "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais", "exaone4",
             "a.x-4.0", "mellum"},
            {kGpt2});
        add({"trillion"}, {kGpt2}, false, false, false);
        add({"stablelm2", "megrez"}, {kQwen2});
        add({"qwen2", "deepseek-r1-qwen", "hunyuan"}, {kQwen2}, false, false, false);
        add({"qwen35"}, {kQwen35}, false, false, false);
        add({"poro-chat"}, {kPoro}, false, false, false);
        add({"bloom", "gpt3-finnish"}, {kPoro});
        add({"viking"}, {kPoro, R"(\p{N})"}, false, false, false);
        add({"tekken"}, {kTekken}, true, true, false);
        add({"gpt-4o", "llama4"}, {kGpt4o}, false, false, false);
        add({"seed-coder"}, {kSeedCoder}, false, false, false);
        add({"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}, false, false, false);
        add({"grok-2"}, {kQwen2}, false, false, false);
        add({"chameleon"},
            {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
             R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2},
            false, true, false);
        add({"glm4", "chatglm-bpe"}, {kLlama3});
        t.back().spec.no_bos = true;
        return t;
    }();
    return table;
}

// --- PCRE2 ---

struct Compiled {
    pcre2_code* code = nullptr;
    std::string pattern;
};

}  // namespace

std::optional<PreTokenizerSpec> pre_tokenizer_spec(std::string_view name) {
    if (name.empty()) name = "default";
    for (const auto& e : spec_table())
        for (auto n : e.names)
            if (n == name) return e.spec;
    return std::nullopt;
}

std::string pre_tokenizer_names() {
    std::string s;
    for (const auto& e : spec_table())
        for (auto n : e.names) {
            if (!s.empty()) s += ", ";
            s += n;
        }
    return s;
}

std::string pattern_with_whitespace_classes(std::string_view p) {
    std::string out;
    bool in_class = false;
    for (size_t i = 0; i < p.size(); ++i) {
        const char c = p[i];
        if (c == '\\' && i + 1 < p.size()) {
            const char n = p[++i];
            if (n == 's') {
                out += in_class ? std::string(kWhitespaceClass)
                                : "[" + std::string(kWhitespaceClass) + "]";
            } else if (n == 'S') {
                JITLLM_CHECK(!in_class, "\\S inside a character class in '{}'", p);
                out += "[^" + std::string(kWhitespaceClass) + "]";
            } else {
                out += c;
                out += n;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            out += c;
            // a ']' right after '[' or '[^' is a literal
            if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
            if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
            continue;
        }
        if (in_class && c == ']') in_class = false;
        out += c;
    }
    return out;
}

struct PreTokenizer::Impl {
    std::vector<Compiled> regexes;
    ~Impl() {
        for (auto& r : regexes) pcre2_code_free(r.code);
    }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) : impl_(new Impl) {
    for (const auto& p : patterns) {
        Compiled c;
        c.pattern = pattern_with_whitespace_classes(p);
        int err = 0;
        PCRE2_SIZE off = 0;
        // DOLLAR_ENDONLY: std::regex's $ does not match before a final newline.
        c.code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(c.pattern.data()), c.pattern.size(),
                               PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY |
                                   PCRE2_MATCH_INVALID_UTF,
                               &err, &off, nullptr);
        if (!c.code) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof(msg));
            JITLLM_CHECK(false, "pre-tokenizer regex '{}' does not compile at {}: {}",
                         c.pattern, off, reinterpret_cast<const char*>(msg));
        }
        pcre2_jit_compile(c.code, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
        impl_->regexes.push_back(std::move(c));
    }
}

PreTokenizer::~PreTokenizer() = default;

std::vector<std::pair<size_t, size_t>> PreTokenizer::split(std::string_view text) const {
    std::vector<std::pair<size_t, size_t>> pieces;
    if (!text.empty()) pieces.emplace_back(0, text.size());
    for (const auto& re : impl_->regexes) {
        pcre2_match_data* md = pcre2_match_data_create_from_pattern(re.code, nullptr);
        std::vector<std::pair<size_t, size_t>> next;
        next.reserve(pieces.size() * 2);
        for (const auto& [off, len] : pieces) {
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + off);
            size_t pos = 0, last = 0;
            while (pos < len) {
                int rc = pcre2_match(re.code, subject, len, pos, 0, md, nullptr);
                if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
                    rc = pcre2_match(re.code, subject, len, pos, PCRE2_NO_JIT, md, nullptr);
                if (rc == PCRE2_ERROR_NOMATCH) break;
                if (rc < 0) {
                    pcre2_match_data_free(md);
                    fail("tokenizer: pre-tokenizer regex failed on a {}-byte piece "
                         "(PCRE2 error {})",
                         len, rc);
                }
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
                const size_t s = ov[0], e = ov[1];
                if (e == s) {  // empty match: no piece; move on by one character
                    pos = s + 1;
                    while (pos < len && (uint8_t(subject[pos]) & 0xC0) == 0x80) ++pos;
                    continue;
                }
                if (s > last) next.emplace_back(off + last, s - last);
                next.emplace_back(off + s, e - s);
                last = pos = e;
            }
            if (last < len) next.emplace_back(off + last, len - last);
        }
        pcre2_match_data_free(md);
        pieces = std::move(next);
    }
    return pieces;
}

}  // namespace jitllm::tok
