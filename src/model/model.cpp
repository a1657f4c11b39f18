// Model loading: architecture registry (one explicit table), weight binding with shape and type
// checks, unused-tensor report.
#include "model/model.h"

#include <cmath>
#include <set>

#include "core/error.h"
#include "core/utf8.h"
#include "gguf/gguf_reader.h"
#include "model/arch/arch.h"

namespace jitllm {
namespace {

// The architecture table: one line per supported `general.architecture`.
const ArchEntry kArchs[] = {
    {"llama", llama_parse_config, llama_family_bind_layer},
    {"qwen2", qwen2_parse_config, llama_family_bind_layer},
    {"qwen3", qwen3_parse_config, llama_family_bind_layer},
    {"phi3", phi3_parse_config, llama_family_bind_layer},
    {"granite", granite_parse_config, llama_family_bind_layer},
    {"qwen2moe", qwen2moe_parse_config, moe_bind_layer},
    {"qwen3moe", qwen3moe_parse_config, moe_bind_layer},
    {"mistral3", mistral3_parse_config, mistral3_bind_layer},
};

std::string shape_str(const std::vector<uint64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

}  // namespace

std::vector<std::string> supported_architectures() {
    std::vector<std::string> v;
    for (const auto& a : kArchs) v.push_back(a.name);
    return v;
}

Model::~Model() = default;

uint64_t Model::weight_bytes() const {
    uint64_t b = 0;
    for (const auto& t : tensors) b += t.n_bytes;
    return b;
}

const WeightTensor* Model::rope_factors(int n_ctx) const {
    if (rope_freqs) return rope_freqs;
    return n_ctx > config.n_ctx_orig ? rope_factors_long : rope_factors_short;
}

std::string WeightBinder::blk(int i, const std::string& stem, const char* suffix) {
    return fmt::format("blk.{}.{}.{}", i, stem, suffix);
}

const WeightTensor* WeightBinder::tensor_opt(const std::string& name, std::vector<uint64_t> shape) {
    const GgufTensorInfo* ti = g_.find_tensor(name);
    if (!ti) return nullptr;
    // ggml drops trailing dims of 1 inconsistently; compare with them removed
    std::vector<uint64_t> found = ti->dims;
    while (found.size() > 1 && found.back() == 1) found.pop_back();
    while (shape.size() > 1 && shape.back() == 1) shape.pop_back();
    if (found != shape)
        fail("{}: tensor '{}': expected shape {}, found {}", g_.path(), name, shape_str(shape),
             shape_str(ti->dims));
    const auto& tt = type_traits(ti->type);
    if (!tt.supported)
        fail("{}: tensor '{}': type {} is not supported; supported: {}", g_.path(), name, tt.name,
             supported_type_names());
    for (const auto& t : m_.tensors)
        if (t.name == name) return &t;
    WeightTensor w;
    w.name = name;
    w.type = ti->type;
    w.cols = ti->dims[0];
    w.rows = ti->rows();
    w.stack = ti->dims.size() >= 3 ? ti->dims[2] : 1;
    w.row_bytes = row_bytes(ti->type, w.cols);
    w.n_bytes = ti->n_bytes;
    w.data = ti->data;
    m_.tensors.push_back(std::move(w));
    return &m_.tensors.back();
}

const WeightTensor* WeightBinder::tensor(const std::string& name, std::vector<uint64_t> shape) {
    const WeightTensor* t = tensor_opt(name, shape);
    if (!t)
        fail("{}: missing tensor '{}' (expected shape {}) required by architecture '{}'",
             g_.path(), name, shape_str(shape), m_.config.arch);
    return t;
}

std::unique_ptr<Model> load_model(const std::string& path) {
    return load_model(GgufReader::open(path));
}

std::unique_ptr<Model> load_model(std::unique_ptr<GgufReader> g) {
    auto m = std::make_unique<Model>();
    const std::string arch = g->get_string("general.architecture");
    const ArchEntry* entry = nullptr;
    for (const auto& a : kArchs)
        if (arch == a.name) entry = &a;
    if (!entry) {
        std::string list;
        for (const auto& a : kArchs) list += (list.empty() ? "" : ", ") + std::string(a.name);
        fail("{}: unsupported architecture '{}'; supported: {}", g->path(), escape_text(arch),
             list);
    }
    m->config = entry->parse_config(*g);
    ModelConfig& c = m->config;
    WeightBinder b(*g, *m);

    // token_embd's row count is the vocabulary size; the tokenizer must agree (checked below).
    const GgufTensorInfo* te = g->find_tensor("token_embd.weight");
    if (!te) fail("{}: missing tensor 'token_embd.weight' required by architecture '{}'", g->path(), arch);
    if (te->dims.size() < 2 || te->dims[1] > (1u << 24))
        fail("{}: tensor 'token_embd.weight': expected shape [{}, n_vocab], found {}", g->path(),
             c.dim, shape_str(te->dims));
    c.n_vocab = int(te->dims[1]);
    m->token_embd = b.tensor("token_embd.weight", {uint64_t(c.dim), uint64_t(c.n_vocab)});
    if (auto toks = g->get_string_array_opt("tokenizer.ggml.tokens");
        toks && int64_t(toks->size()) != c.n_vocab)
        fail("{}: key 'tokenizer.ggml.tokens': expected {} tokens (rows of token_embd.weight), "
             "found {}", g->path(), c.n_vocab, toks->size());
    m->output_norm = b.tensor("output_norm.weight", {uint64_t(c.dim)});
    m->output = b.tensor_opt("output.weight", {uint64_t(c.dim), uint64_t(c.n_vocab)});
    c.tied_output = m->output == nullptr;
    if (c.tied_output) m->output = m->token_embd;
    m->rope_freqs = b.tensor_opt("rope_freqs.weight", {uint64_t(c.n_rot / 2)});
    c.has_rope_freqs = m->rope_freqs != nullptr;
    m->rope_factors_short = b.tensor_opt("rope_factors_short.weight", {uint64_t(c.n_rot / 2)});
    m->rope_factors_long = b.tensor_opt("rope_factors_long.weight", {uint64_t(c.n_rot / 2)});
    if ((m->rope_factors_short == nullptr) != (m->rope_factors_long == nullptr))
        fail("{}: tensor '{}' is missing: LongRoPE expects both rope_factors_short.weight and "
             "rope_factors_long.weight, found only '{}'", g->path(),
             m->rope_factors_short ? "rope_factors_long.weight" : "rope_factors_short.weight",
             m->rope_factors_short ? "rope_factors_short.weight" : "rope_factors_long.weight");
    c.has_long_rope = m->rope_factors_short != nullptr;
    if (c.has_rope_freqs && c.has_long_rope)
        fail("{}: tensor 'rope_freqs.weight': expected either it or the LongRoPE factors "
             "(rope_factors_short/long.weight), found both", g->path());

    m->layers.resize(size_t(c.n_layers));
    for (int i = 0; i < c.n_layers; ++i) entry->bind_layer(b, c, i, m->layers[size_t(i)]);

    // Norm weights and biases are computed with as float vectors: require F32.
    auto need_f32 = [&](const WeightTensor* t) {
        if (t && t->type != GgmlType::F32)
            fail("{}: tensor '{}': expected type f32, found {}", g->path(), t->name, type_name(t->type));
    };
    for (auto* t : {m->output_norm, m->rope_freqs, m->rope_factors_short, m->rope_factors_long})
        need_f32(t);
    // RoPE divides each angle by its factor
    for (auto* t : {m->rope_freqs, m->rope_factors_short, m->rope_factors_long}) {
        for (uint64_t j = 0; t && j < t->cols; ++j)
            if (!(t->f32()[j] > 0.0f) || !std::isfinite(t->f32()[j]))
                fail("{}: tensor '{}': expected positive finite factors, found {} at index {}",
                     g->path(), t->name, t->f32()[j], j);
    }
    for (const auto& l : m->layers) {
        for (auto* t : {l.attn_norm, l.ffn_norm, l.attn_q_bias, l.attn_k_bias, l.attn_v_bias,
                        l.attn_q_norm, l.attn_k_norm, l.ffn_gate_inp, l.ffn_gate_inp_shexp})
            need_f32(t);
    }

    std::set<std::string> used;
    for (const auto& t : m->tensors) used.insert(t.name);
    for (const auto& ti : g->tensors())
        if (!used.count(ti.name)) m->unused_tensors.push_back(ti.name);
    m->gguf = std::move(g);
    return m;
}

}  // namespace jitllm
