// Vocabulary built from a GGUF's tokenizer.* keys, with llama.cpp's defaults and fix-ups
// (special ids, EOG set, token attributes), plus the parts every algorithm shares: splitting out
// special tokens, token pieces and detokenization. The encoders live in spm/bpe/wpm.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pretokenize.h"
#include "tokenizer/string_map.h"
#include "tokenizer/tokenizer.h"

namespace jitllm {
class GgufReader;
}

namespace jitllm::tok {

// llama.cpp token attribute bits (llama_token_attr).
enum : uint32_t {
    kAttrUnknown = 1u << 0,
    kAttrUnused = 1u << 1,
    kAttrNormal = 1u << 2,
    kAttrControl = 1u << 3,
    kAttrUserDefined = 1u << 4,
    kAttrByte = 1u << 5,
    kAttrLstrip = 1u << 7,
    kAttrRstrip = 1u << 8,
};

enum class VocabKind { Spm, Bpe, Wpm };

struct TokenData {
    std::string text;
    float score = 0.0f;
    uint32_t attr = kAttrNormal;
    TokenType type = TokenType::Normal;  // as stored in the file
};

struct Vocab {
    std::string file;        // for messages
    VocabKind kind = VocabKind::Spm;
    std::string model;       // tokenizer.ggml.model
    std::string pre;         // tokenizer.ggml.pre ("" when absent)

    std::vector<TokenData> tokens;      // never resized after loading: maps view into it
    StringIdMap token_to_id;
    std::vector<std::string> merges;    // BPE "left right" texts, by rank
    StringIdMap merge_rank;             // merge text -> rank
    size_t max_token_len = 0;

    int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1, pad = -1, mask = -1;
    int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
    std::set<int32_t> eog;

    bool add_space_prefix = false;
    bool add_bos = false;
    bool add_eos = false;
    bool add_sep = false;
    bool ignore_merges = false;
    bool clean_spaces = false;
    bool lowercase = true;      // WordPiece normalizer
    bool strip_accents = true;  // WordPiece normalizer

    std::unique_ptr<PreTokenizer> pre_tokenizer;  // BPE only
    std::vector<int32_t> special_tokens;  // control/user-defined/unknown, longest text first
    std::vector<std::string> pieces;      // token_to_piece(id, special=true)

    int32_t n_tokens() const { return int32_t(tokens.size()); }
    int32_t find(std::string_view text) const;  // -1 when absent
    int32_t merge_rank_of(std::string_view left, std::string_view right) const;  // -1: none
};

// Throws Error naming the file and key when the tokenizer.* keys are missing or invalid.
std::unique_ptr<Vocab> load_vocab(const GgufReader& g);

// A piece of input: either raw text [offset, offset + length) or a special token.
struct Fragment {
    int32_t token = -1;  // >= 0: a special token
    size_t offset = 0;
    size_t length = 0;
};
// llama.cpp tokenizer_st_partition: cuts special-token texts out of `text`, longest first.
// Without parse_special only user-defined tokens are cut out.
std::vector<Fragment> partition_special(const Vocab& v, std::string_view text,
                                        bool parse_special);

// Encoders: append ids for one raw-text fragment.
void spm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out);
void bpe_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out);
void wpm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out);

// Token text -> bytes (llama.cpp token_to_piece without the cache).
std::string piece_of(const Vocab& v, int32_t id);
// llama.cpp detokenize, including its clean_spaces passes.
std::string detokenize_ids(const Vocab& v, const std::vector<int32_t>& ids, bool remove_special,
                           bool special);

}  // namespace jitllm::tok
