// Vocabulary loading from tokenizer.* GGUF keys, special-token splitting, token pieces and
// detokenization. Behaviour follows llama.cpp src/llama-vocab.cpp (llama_vocab::impl::load,
// tokenizer_st_partition, token_to_piece, detokenize); see vocab.h.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/utf8.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/unicode.h"

namespace jitllm::tok {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

uint32_t attr_of_type(int64_t type) {
    switch (type) {
        case 1: return kAttrNormal;
        case 2: return kAttrUnknown;
        case 3: return kAttrControl;
        case 4: return kAttrUserDefined;
        case 5: return kAttrUnused;
        case 6: return kAttrByte;
        default: return 0;  // undefined
    }
}

bool ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos);
        out += to;
    }
    out.append(s, pos);
    s = std::move(out);
}

void load_merges(const GgufReader& g, Vocab& v) {
    auto merges = g.get_string_array_opt("tokenizer.ggml.merges");
    if (!merges)
        fail("{}: missing key 'tokenizer.ggml.merges': a gpt2 (BPE) tokenizer needs its merges",
             v.file);
    v.merges = std::move(*merges);
    v.merge_rank.reserve(v.merges.size());
    for (size_t i = 0; i < v.merges.size(); ++i) {
        // llama.cpp splits at the first space after the first byte; a merge without one can
        // never match a pair, so it is left out. The first rank of a duplicate wins.
        const std::string& m = v.merges[i];
        if (m.find(' ', 1) != std::string::npos) v.merge_rank.insert(m, int32_t(i));
    }
}

// After load_tokens: every merge must be "left right" with both sides tokens of the vocab (true
// of every real vocabulary; llama.cpp would silently keep a merge that can never apply).
void check_merges(const Vocab& v) {
    for (size_t i = 0; i < v.merges.size(); ++i) {
        const std::string& m = v.merges[i];
        const size_t sp = m.find(' ', 1);
        if (sp == std::string::npos)
            fail("{}: key 'tokenizer.ggml.merges': merge {} '{}': expected two tokens separated "
                 "by a space",
                 v.file, i, escape_text(m));
        for (std::string_view side : {std::string_view(m).substr(0, sp),
                                      std::string_view(m).substr(sp + 1)})
            if (v.find(side) < 0)
                fail("{}: key 'tokenizer.ggml.merges': merge {} '{}' names unknown token '{}'",
                     v.file, i, escape_text(m), escape_text(side));
    }
}

void load_tokens(const GgufReader& g, Vocab& v) {
    auto texts = g.get_string_array_opt("tokenizer.ggml.tokens");
    if (!texts) fail("{}: missing key 'tokenizer.ggml.tokens'", v.file);
    const size_t n = texts->size();
    if (n == 0 || n > size_t(INT32_MAX))
        fail("{}: key 'tokenizer.ggml.tokens': expected 1 to 2^31-1 tokens, found {}", v.file, n);
    auto scores = g.get_float_array_opt("tokenizer.ggml.scores");
    if (scores && scores->size() < n)
        fail("{}: key 'tokenizer.ggml.scores': expected {} scores, found {}", v.file, n,
             scores->size());
    auto types = g.get_int_array_opt("tokenizer.ggml.token_type");
    if (types && types->size() < n)
        fail("{}: key 'tokenizer.ggml.token_type': expected {} types, found {}", v.file, n,
             types->size());

    v.tokens.resize(n);
    v.token_to_id.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        TokenData& t = v.tokens[i];
        t.text = std::move((*texts)[i]);
        // Every known vocabulary spells its tokens in UTF-8 (raw bytes are <0xNN> tokens or
        // GPT-2 alphabet characters); anything else is a corrupt file.
        if (size_t bad = utf8_invalid_at(t.text); bad != std::string::npos)
            fail("{}: key 'tokenizer.ggml.tokens': token {} '{}' is not valid UTF-8: invalid "
                 "byte 0x{:02x} at offset {}",
                 v.file, i, escape_text(t.text), uint8_t(t.text[bad]), bad);
        if (t.text.empty()) t.text = "[EMPTY_" + std::to_string(i) + "]";
        if (!v.token_to_id.insert(t.text, int32_t(i)))
            fail("{}: key 'tokenizer.ggml.tokens': duplicate token '{}' at ids {} and {}",
                 v.file, escape_text(t.text), v.token_to_id.find(t.text), i);
        v.max_token_len = std::max(v.max_token_len, t.text.size());
        t.score = scores ? (*scores)[i] : 0.0f;
        if (types) {
            const int64_t ty = (*types)[i];
            t.type = (ty >= 0 && ty <= 6) ? TokenType(ty) : TokenType::Undefined;
            t.attr = attr_of_type(ty);
        }
    }
}

void load_special_ids(const GgufReader& g, Vocab& v) {
    const std::pair<const char*, int32_t*> keys[] = {
        {"tokenizer.ggml.bos_token_id", &v.bos},
        {"tokenizer.ggml.eos_token_id", &v.eos},
        {"tokenizer.ggml.eot_token_id", &v.eot},
        {"tokenizer.ggml.eom_token_id", &v.eom},
        {"tokenizer.ggml.unknown_token_id", &v.unk},
        {"tokenizer.ggml.seperator_token_id", &v.sep},  // sic: llama.cpp's spelling
        {"tokenizer.ggml.padding_token_id", &v.pad},
        {"tokenizer.ggml.mask_token_id", &v.mask},
        {"tokenizer.ggml.fim_pre_token_id", &v.fim_pre},
        {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf},
        {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid},
        {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad},
        {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep},
        {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep},
        {"tokenizer.ggml.prefix_token_id", &v.fim_pre},  // deprecated spellings
        {"tokenizer.ggml.suffix_token_id", &v.fim_suf},
        {"tokenizer.ggml.middle_token_id", &v.fim_mid},
    };
    // The ids generation depends on must be in the vocab; -1 (i32) or 0xFFFFFFFF (u32) mark
    // "none" and keep the default. For the others an id outside the vocab keeps the default,
    // as llama.cpp does (e.g. a pad id one past the vocab in some conversions).
    const int32_t* const strict[] = {&v.bos, &v.eos, &v.eot, &v.eom, &v.unk};
    for (auto [key, id] : keys) {
        if (*id >= v.n_tokens()) *id = -1;  // a default outside the vocab means none
        auto val = g.get_int_opt(key);
        if (!val) continue;
        if (*val >= 0 && *val < v.n_tokens()) {
            *id = int32_t(*val);
            continue;
        }
        const bool none = *val < 0 || *val == int64_t(UINT32_MAX);
        if (!none && std::find(std::begin(strict), std::end(strict), id) != std::end(strict))
            fail("{}: key '{}': expected a token id in [0, {}) (or -1 for none), found {}",
                 v.file, key, v.n_tokens(), *val);
    }
}

// Text-based detection of EOT/EOM/FIM and EOG tokens (llama.cpp's workaround for files that
// lack the ids); such tokens are also made control tokens. When several texts of one role are
// in the vocab, llama.cpp keeps whichever its hash map yields first; here the earlier text in
// its list wins, which is the same for every vocab we know.
void detect_special_tokens(Vocab& v) {
    struct Rule {
        int32_t* id;
        std::vector<std::string_view> texts;
    };
    const Rule rules[] = {
        {&v.eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                  "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                  "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                  "<end_of_utterance>"}},
        {&v.eom, {"<|eom_id|>"}},
        {&v.fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                      "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
                      "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
        {&v.fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                      "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>", "<SUF>",
                      "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
        {&v.fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                      "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
                      "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
        {&v.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
        {&v.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
        {&v.fim_sep, {"<|file_sep|>"}},
    };
    for (const Rule& r : rules) {
        if (*r.id != -1) continue;
        for (std::string_view text : r.texts) {
            if (int32_t id = v.find(text); id >= 0) {
                *r.id = id;
                v.tokens[id].attr |= kAttrControl;
                break;
            }
        }
    }
    for (TokenData& t : v.tokens)
        if ((t.attr & kAttrControl) && t.text.find("unused") != std::string::npos)
            t.attr |= kAttrUnused;

    for (int32_t id : {v.fim_pad, v.fim_rep, v.fim_sep})
        if (id != -1) v.eog.insert(id);
    static const std::string_view kEogTexts[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
        "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
        "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>",
        "<|tool_response>", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
        "[e~[",
    };
    for (std::string_view text : kEogTexts) {
        if (int32_t id = v.find(text); id >= 0) {
            v.eog.insert(id);
            v.tokens[id].attr |= kAttrControl;
        }
    }
    // gpt-oss channel markers always render (llama.cpp sets them user-defined).
    for (const char* t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
        if (int32_t id = v.find(t); id >= 0) v.tokens[id].attr = kAttrUserDefined;
    for (int32_t id : {v.eos, v.eot, v.eom})
        if (id != -1) v.eog.insert(id);

    // With <|return|>+<|call|> (gpt-oss) or <|calls|>+<|flush|> (solar-open), <|end|> is not
    // an end of generation; with <|tool_response> (gemma4), </s> is not.
    auto eog_text = [&](std::string_view t) {
        for (int32_t id : v.eog)
            if (v.tokens[id].text == t) return id;
        return -1;
    };
    const bool has_call = eog_text("<|call|>") >= 0 || eog_text("<|calls|>") >= 0;
    if (int32_t end = eog_text("<|end|>");
        end >= 0 && has_call && (eog_text("<|return|>") >= 0 || eog_text("<|flush|>") >= 0)) {
        v.eog.erase(end);
        v.tokens[end].attr = kAttrUserDefined;
    }
    if (int32_t s = eog_text("</s>"); s >= 0 && eog_text("<|tool_response>") >= 0) {
        v.eog.erase(s);
        v.tokens[s].attr = kAttrNormal;
    }
}

// Per-model attribute fix-ups keyed on names (llama.cpp: "Handle per token attributes").
void apply_name_attributes(const GgufReader& g, Vocab& v) {
    std::string name = g.get_string_opt("general.name").value_or("");
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    const std::string arch = g.get_string_opt("general.architecture").value_or("");
    auto set = [&](std::string_view text, uint32_t bit, bool on) {
        if (int32_t id = v.find(text); id >= 0)
            v.tokens[id].attr = on ? (v.tokens[id].attr | bit) : (v.tokens[id].attr & ~bit);
    };
    auto contains = [](const std::string& s, std::initializer_list<std::string_view> subs) {
        for (auto sub : subs)
            if (s.find(sub) != std::string::npos) return true;
        return false;
    };
    if (contains(v.pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
        contains(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
        set("<mask>", kAttrLstrip, true);
    } else if (contains(name, {"phi-3", "phi3"})) {
        for (int32_t id : v.special_tokens) v.tokens[id].attr |= kAttrRstrip;
        set("</s>", kAttrRstrip, true);
        for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set(t, kAttrRstrip, false);
    } else if (contains(name, {"modern-bert"})) {
        set("[MASK]", kAttrLstrip, true);
    }
}

}  // namespace

int32_t Vocab::find(std::string_view text) const { return token_to_id.find(text); }

int32_t Vocab::merge_rank_of(std::string_view left, std::string_view right) const {
    std::string key;
    key.reserve(left.size() + 1 + right.size());
    key.append(left).append(1, ' ').append(right);
    return merge_rank.find(key);
}

std::unique_ptr<Vocab> load_vocab(const GgufReader& g) {
    auto vp = std::make_unique<Vocab>();
    Vocab& v = *vp;
    v.file = g.path();
    auto model = g.get_string_opt("tokenizer.ggml.model");
    if (!model)
        fail("{}: missing key 'tokenizer.ggml.model': expected the tokenizer type (llama, gpt2 "
             "or bert)",
             v.file);
    v.model = *model;
    v.pre = g.get_string_opt("tokenizer.ggml.pre").value_or("");

    if (v.model == "llama") {
        v.kind = VocabKind::Spm;
        v.bos = 1, v.eos = 2, v.unk = 0;
        v.add_space_prefix = true, v.add_bos = true;
    } else if (v.model == "bert") {
        v.kind = VocabKind::Wpm;
        v.bos = 101, v.unk = 100, v.sep = 102, v.pad = 0, v.mask = 103;
        v.add_bos = true, v.add_sep = true, v.clean_spaces = true;
    } else if (v.model == "gpt2") {
        v.kind = VocabKind::Bpe;
        load_merges(g, v);
        v.bos = 11, v.eos = 11;  // llama.cpp's gpt2 defaults (',' in GPT-2's vocab)
        auto spec = pre_tokenizer_spec(v.pre);
        if (!spec)
            fail("{}: key 'tokenizer.ggml.pre': unsupported pre-tokenizer '{}'; supported: {}",
                 v.file, escape_text(v.pre), pre_tokenizer_names());
        v.ignore_merges = spec->ignore_merges;
        v.add_bos = spec->add_bos;
        v.clean_spaces = spec->clean_spaces;
        if (spec->no_bos) v.bos = -1;
        v.pre_tokenizer = std::make_unique<PreTokenizer>(spec->patterns);
    } else {
        fail("{}: key 'tokenizer.ggml.model': unsupported tokenizer '{}'; supported: llama "
             "(SentencePiece), gpt2 (byte-level BPE), bert (WordPiece)",
             v.file, escape_text(v.model));
    }
    v.add_space_prefix =
        g.get_bool_opt("tokenizer.ggml.add_space_prefix").value_or(v.add_space_prefix);

    load_tokens(g, v);
    if (v.kind == VocabKind::Bpe) check_merges(v);
    load_special_ids(g, v);
    v.add_bos = g.get_bool_opt("tokenizer.ggml.add_bos_token").value_or(v.add_bos);
    v.add_eos = g.get_bool_opt("tokenizer.ggml.add_eos_token").value_or(v.add_eos);
    v.add_sep = g.get_bool_opt("tokenizer.ggml.add_sep_token").value_or(v.add_sep);
    const std::pair<bool, int32_t> needs[] = {{v.add_bos, v.bos}, {v.add_eos, v.eos},
                                              {v.add_sep, v.sep}};
    const char* const names[] = {"bos", "eos", "sep"};
    for (int i = 0; i < 3; ++i)
        if (needs[i].first && needs[i].second < 0)
            fail("{}: key 'tokenizer.ggml.add_{}_token' is true, but the vocab has no {} token",
                 v.file, names[i], names[i]);
    v.lowercase = g.get_bool_opt("tokenizer.ggml.normalizer.lowercase").value_or(true);
    v.strip_accents =
        g.get_bool_opt("tokenizer.ggml.normalizer.strip_accents").value_or(v.lowercase);

    detect_special_tokens(v);

    for (int32_t id = 0; id < v.n_tokens(); ++id)
        if (v.tokens[id].attr & (kAttrControl | kAttrUserDefined | kAttrUnknown))
            v.special_tokens.push_back(id);
    // Same sort call as llama.cpp, so equal-length tokens end up in the same order.
    std::sort(v.special_tokens.begin(), v.special_tokens.end(), [&](int32_t a, int32_t b) {
        return v.tokens[a].text.size() > v.tokens[b].text.size();
    });

    v.pieces.resize(v.tokens.size());
    for (int32_t id = 0; id < v.n_tokens(); ++id) v.pieces[id] = piece_of(v, id);

    apply_name_attributes(g, v);
    return vp;
}

std::vector<Fragment> partition_special(const Vocab& v, std::string_view text,
                                        bool parse_special) {
    std::vector<Fragment> frags;
    if (text.empty()) return frags;
    frags.push_back({-1, 0, text.size()});
    std::vector<Fragment> next;
    for (int32_t special : v.special_tokens) {
        const TokenData& t = v.tokens[special];
        // Control and unknown tokens only with parse_special; user-defined ones always.
        if (!parse_special && (t.attr & (kAttrControl | kAttrUnknown))) continue;
        next.clear();
        for (const Fragment& f : frags) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            size_t base = f.offset, len = f.length;
            while (true) {
                const size_t hit = text.substr(0, base + len).find(t.text, base);
                if (hit == std::string_view::npos) {
                    if (len > 0) next.push_back({-1, base, len});
                    break;
                }
                size_t left = hit - base;
                if (t.attr & kAttrLstrip)
                    while (left > 0 && ascii_space(text[base + left - 1])) --left;
                if (left > 0) next.push_back({-1, base, left});
                next.push_back({special, 0, 0});
                size_t rbase = hit + t.text.size();
                size_t rlen = base + len - rbase;
                if (rlen == 0) break;
                if (t.attr & kAttrRstrip)
                    while (rlen > 0 && ascii_space(text[rbase])) ++rbase, --rlen;
                base = rbase, len = rlen;
            }
        }
        frags.swap(next);
    }
    return frags;
}

std::string piece_of(const Vocab& v, int32_t id) {
    const TokenData& t = v.tokens[id];
    if (t.attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t.text;
    if (t.attr & kAttrNormal) {
        std::string s = t.text;
        if (v.kind != VocabKind::Bpe) {
            replace_all(s, kSpace, " ");
            return s;
        }
        // Byte-level BPE: each code point stands for one byte (GPT-2 alphabet).
        std::string out;
        for (uint32_t cpt : utf8_decode(t.text)) {
            const int b = unicode_to_byte(cpt);
            if (b >= 0) {
                out += char(b);
                continue;
            }
            out += "[UNK_BYTE_0x";
            for (char c : utf8_encode(cpt)) out += fmt::format("{:02x}", uint8_t(c));
            out += t.text + "]";
        }
        return out;
    }
    if ((t.attr & kAttrByte) && v.kind != VocabKind::Wpm && t.text.size() >= 5)
        return std::string(1, char(std::strtol(t.text.substr(3, 2).c_str(), nullptr, 16)));
    return std::string();
}

std::string detokenize_ids(const Vocab& v, const std::vector<int32_t>& ids, bool remove_special,
                           bool special) {
    size_t begin = 0, end = ids.size();
    bool strip_space = v.add_space_prefix;  // SentencePiece's leading space
    if (remove_special && v.add_bos && end > 0 && ids[0] == v.bos) {
        strip_space = false;
        begin = 1;
    }
    if (remove_special && v.add_eos && end > begin && ids[end - 1] == v.eos) --end;

    std::string text;
    for (size_t i = begin; i < end; ++i) {
        const int32_t id = ids[i];
        if (id < 0 || id >= v.n_tokens())
            fail("detokenize: token id {} is out of range [0, {})", id, v.n_tokens());
        std::string_view piece = v.pieces[id];
        if (!special && (v.tokens[id].attr & (kAttrUnknown | kAttrControl))) piece = {};
        if (strip_space && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
        strip_space = false;
        text += piece;
    }
    if (!v.clean_spaces || text.empty()) return text;

    // clean_up_tokenization_spaces, done in place over the buffer as llama.cpp does (the second
    // pass blanks the byte after " ' " to NUL, which the third pass then sees).
    std::string& s = text;
    size_t n = s.size(), out = 1;
    for (size_t i = 1; i < n; ++i) {  // " ?", " !", " .", " ," lose the space
        const char x = s[i];
        if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --out;
        s[out++] = x;
    }
    n = out, out = 1;
    for (size_t i = 1; i < n; ++i) {  // " ' " -> "'"
        const char x = s[i];
        if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
            --out;
            s[++i] = '\0';
        }
        s[out++] = x;
    }
    n = out, out = 1;
    for (size_t i = 1; i < n; ++i) {  // " 's", " 'm", " 're", " 've" lose the space
        const char x = s[i];
        if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            const char x1 = s[i + 1];
            if (x1 == 's' || x1 == 'm') {
                --out;
            } else if (i + 2 < n) {
                const char x2 = s[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --out;
            }
        }
        s[out++] = x;
    }
    s.resize(out);
    return text;
}

}  // namespace jitllm::tok
