// Tokenizer::from_gguf and the one implementation behind it: special-token splitting, then the
// vocab's encoder per raw fragment, with BOS/EOS placement as llama.cpp's llama_vocab::tokenize.
#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "tokenizer/vocab.h"

namespace jitllm {

namespace {

using tok::Vocab;
using tok::VocabKind;

class VocabTokenizer final : public Tokenizer {
public:
    explicit VocabTokenizer(std::unique_ptr<Vocab> v) : v_(std::move(v)) {}

    std::vector<int32_t> encode(std::string_view text, bool add_special,
                                bool parse_special) const override {
        const Vocab& v = *v_;
        std::vector<int32_t> out;
        const auto frags = tok::partition_special(v, text, parse_special);
        switch (v.kind) {
            case VocabKind::Spm: {
                if (add_special && v.add_bos) out.push_back(v.bos);
                // SentencePiece's dummy prefix goes before the text and after every special
                // token; spaces become U+2581.
                bool after_special = true;
                std::string s;
                for (const auto& f : frags) {
                    if (f.token >= 0) {
                        out.push_back(f.token);
                        after_special = true;
                        continue;
                    }
                    s.clear();
                    if (v.add_space_prefix && after_special) s += "\xE2\x96\x81";
                    for (char c : text.substr(f.offset, f.length))
                        s += c == ' ' ? std::string_view("\xE2\x96\x81") : std::string_view(&c, 1);
                    tok::spm_encode(v, s, out);
                    after_special = false;
                }
                if (add_special && v.add_eos) out.push_back(v.eos);
                break;
            }
            case VocabKind::Bpe:
                if (add_special && v.add_bos) out.push_back(v.bos);
                for (const auto& f : frags) {
                    if (f.token >= 0) out.push_back(f.token);
                    else tok::bpe_encode(v, text.substr(f.offset, f.length), out);
                }
                if (add_special && v.add_eos) out.push_back(v.eos);
                break;
            case VocabKind::Wpm:
                // BERT input: [CLS] text [SEP] (llama.cpp adds both whenever add_special).
                if (add_special && v.bos >= 0) out.push_back(v.bos);
                for (const auto& f : frags) {
                    if (f.token >= 0) out.push_back(f.token);
                    else tok::wpm_encode(v, text.substr(f.offset, f.length), out);
                }
                if (add_special && v.sep >= 0) out.push_back(v.sep);
                break;
        }
        return out;
    }

    std::string token_to_piece(int32_t id, bool special) const override {
        check_id(id, "token_to_piece");
        if (!special && (v_->tokens[id].attr & (tok::kAttrUnknown | tok::kAttrControl)))
            return {};
        return v_->pieces[id];
    }

    std::string detokenize(const std::vector<int32_t>& ids, bool remove_special,
                           bool special) const override {
        return tok::detokenize_ids(*v_, ids, remove_special, special);
    }

    int32_t n_vocab() const override { return v_->n_tokens(); }
    int32_t bos() const override { return v_->bos; }
    int32_t eos() const override { return v_->eos; }
    int32_t eot() const override { return v_->eot; }
    int32_t unk() const override { return v_->unk; }
    int32_t sep() const override { return v_->sep; }
    int32_t pad() const override { return v_->pad; }
    bool add_bos() const override { return v_->add_bos; }
    bool add_eos() const override { return v_->add_eos; }
    bool is_eog(int32_t id) const override { return v_->eog.count(id) > 0; }
    TokenType token_type(int32_t id) const override {
        check_id(id, "token_type");
        return v_->tokens[id].type;
    }
    const std::string& token_text(int32_t id) const override {
        check_id(id, "token_text");
        return v_->tokens[id].text;
    }
    std::optional<int32_t> find_token(std::string_view text) const override {
        const int32_t id = v_->find(text);
        return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
    }
    std::string model_name() const override { return v_->model; }
    std::string pre_name() const override { return v_->pre.empty() ? "default" : v_->pre; }

private:
    void check_id(int32_t id, const char* what) const {
        if (id < 0 || id >= v_->n_tokens())
            fail("{}: token id {} is out of range: expected 0 to {}", what, id,
                 v_->n_tokens() - 1);
    }

    std::unique_ptr<Vocab> v_;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufReader& g) {
    return std::make_unique<VocabTokenizer>(tok::load_vocab(g));
}

}  // namespace jitllm
