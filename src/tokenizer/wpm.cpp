// WordPiece encoder for "bert" vocabs: BERT-style normalisation (accents stripped to the first
// NFD code point, lowercase, control characters dropped), words split at white space and around
// punctuation / CJK, then greedy longest-prefix matching with "▁" marking a word start.
// Matches llama.cpp's llm_tokenizer_wpm_session.
#include <string>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace jitllm::tok {

namespace {

// The CJK blocks BERT isolates (its _is_chinese_char, including the 0x2B920 start that the
// Hugging Face Rust code uses).
bool is_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::vector<std::string> split_words(const Vocab& v, std::string_view text) {
    std::vector<std::string> words(1);
    for (uint32_t cpt : utf8_decode(text)) {
        if (v.strip_accents) cpt = cpt_nfd_first(cpt);
        if (cpt_is_whitespace(cpt)) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        const CptClass cls = cpt_class(cpt);
        if (cpt == 0 || cpt == 0xFFFD || cls == CptClass::Control) continue;
        if (v.strip_accents && cls == CptClass::Mark) continue;
        const std::string s = utf8_encode(v.lowercase ? cpt_to_lower(cpt) : cpt);
        if (cls == CptClass::Punctuation || (cpt < 0x7F && cls == CptClass::Symbol) ||
            is_cjk(cpt)) {
            if (!words.back().empty()) words.emplace_back();
            words.back() = s;  // a word of its own
            words.emplace_back();
        } else {
            words.back() += s;
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

}  // namespace

void wpm_encode(const Vocab& v, std::string_view text, std::vector<int32_t>& out) {
    for (const std::string& w : split_words(v, text)) {
        const std::string word = "\xE2\x96\x81" + w;
        const size_t start = out.size();
        for (size_t i = 0; i < word.size();) {
            // Longest vocab token starting at byte i; none means the whole word is unknown.
            size_t end = std::min(word.size(), i + v.max_token_len + 1);
            int32_t id = -1;
            for (; end > i; --end)
                if ((id = v.find(std::string_view(word).substr(i, end - i))) >= 0) break;
            if (id < 0) {
                out.resize(start);
                break;
            }
            out.push_back(id);
            i = end;
        }
        // A word the vocab cannot spell becomes [UNK]; without one it is dropped (llama.cpp
        // would emit the invalid id -1).
        if (out.size() == start && v.unk >= 0) out.push_back(v.unk);
    }
}

}  // namespace jitllm::tok
