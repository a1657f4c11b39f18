// Tokenizer built from a GGUF's tokenizer.* keys: SentencePiece-style ("llama"), byte-level
// BPE ("gpt2", with the pre-tokenizer named by tokenizer.ggml.pre) and WordPiece ("bert").
// Matches llama.cpp's llama-vocab behaviour (test-tokenizer-0 vectors in ../shared/testdata/vocab).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitllm {

class GgufReader;

// llama.cpp token attributes (tokenizer.ggml.token_type values).
enum class TokenType : int32_t {
    Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

class Tokenizer {
public:
    // Throws Error naming the file and key when the tokenizer.* keys are missing or invalid.
    static std::unique_ptr<Tokenizer> from_gguf(const GgufReader& g);
    virtual ~Tokenizer() = default;

    // add_special: prepend BOS / append EOS as the vocab's add_bos/add_eos flags say.
    // parse_special: text matching control/user-defined tokens becomes those tokens.
    virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                        bool parse_special) const = 0;
    // llama_token_to_piece: the bytes of one token (SentencePiece "▁" -> " ", byte tokens ->
    // their byte, BPE byte-level decoding). Control tokens render only when `special`.
    virtual std::string token_to_piece(int32_t id, bool special = true) const = 0;
    // llama_detokenize: pieces joined; remove_special drops a leading BOS / trailing EOS when
    // the vocab adds them. SentencePiece vocabs drop one leading space of the first piece,
    // except after a dropped BOS (llama.cpp's rule). `special` renders control tokens
    // (llama_detokenize's unparse_special). Vocabs with clean_spaces (e.g. gpt-2,
    // llama-bpe, bert) also drop the space before , . ? ! and some apostrophes.
    virtual std::string detokenize(const std::vector<int32_t>& ids, bool remove_special,
                                   bool special = true) const = 0;

    virtual int32_t n_vocab() const = 0;
    virtual int32_t bos() const = 0;       // -1 if none
    virtual int32_t eos() const = 0;       // -1 if none
    virtual int32_t eot() const = 0;       // -1 if none
    virtual int32_t unk() const = 0;       // -1 if none
    virtual int32_t sep() const = 0;       // -1 if none (BERT's [SEP])
    virtual int32_t pad() const = 0;       // -1 if none
    virtual bool add_bos() const = 0;
    virtual bool add_eos() const = 0;
    virtual bool is_eog(int32_t id) const = 0;  // end of generation: eos, eot, eom, ...
    virtual TokenType token_type(int32_t id) const = 0;
    virtual const std::string& token_text(int32_t id) const = 0;  // raw vocab text
    virtual std::optional<int32_t> find_token(std::string_view text) const = 0;
    virtual std::string model_name() const = 0;  // "llama" | "gpt2" | "bert"
    virtual std::string pre_name() const = 0;    // tokenizer.ggml.pre or "default"
};

}  // namespace jitllm
