// Byte-level BPE pre-tokenizers: the regex list and flags for each tokenizer.ggml.pre name, and
// the splitter that applies the regexes in sequence with PCRE2 (llama.cpp unicode_regex_split
// semantics). Does not do the byte-level encoding or the merges (bpe.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitllm::tok {

struct PreTokenizerSpec {
    // PCRE2 syntax, applied with UTF + UCP; \s and \S mean Unicode White_Space as llama.cpp's
    // tables define it (not PCRE2's own \s).
    std::vector<std::string> patterns;
    bool ignore_merges = false;  // a pre-token that is itself a vocab token is emitted whole
    bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
    bool clean_spaces = true;    // detokenize removes " ," / " 's" style spaces
    bool no_bos = false;         // the vocab has no BOS token by default
};

// The spec for a tokenizer.ggml.pre value ("" means "default"); nullopt when unknown.
std::optional<PreTokenizerSpec> pre_tokenizer_spec(std::string_view name);
// Comma-separated list of the names pre_tokenizer_spec() accepts, for error messages.
std::string pre_tokenizer_names();

class PreTokenizer {
public:
    explicit PreTokenizer(const std::vector<std::string>& patterns);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // Splits `text` into (byte offset, byte length) pieces covering all of it: each pattern in
    // turn cuts every piece into its matches and the unmatched gaps between them, matching the
    // piece as a whole subject (so lookaheads and $ stop at the piece's end).
    std::vector<std::pair<size_t, size_t>> split(std::string_view text) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Rewrites \s and \S to explicit White_Space classes (exposed for tests).
std::string pattern_with_whitespace_classes(std::string_view pattern);

}  // namespace jitllm::tok
