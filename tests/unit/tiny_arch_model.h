// Test helper: a tiny random-weight GGUF of one Llama-family architecture (llama, qwen2, qwen3,
// phi3, granite, and the mixture-of-experts qwen2moe and qwen3moe) written with GgufWriter, with hooks to rename, reshape, retype or drop tensors.
// Header-only; used by model_load_errors_test and the RoPE scaling tests. Not a fixture
// generator for golden data (its outputs are never compared with stored numbers).
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"

namespace jitllm::test {

struct TinySpec {
    std::string arch = "llama";
    std::string key_prefix;  // prefix of the hyperparameter keys; empty: arch
    int n_vocab = 32, dim = 64, ff = 64, n_heads = 4, n_kv_heads = 2, head_dim = 16, n_layers = 2;
    int n_ctx = 256;
    int n_expert = 4, n_expert_used = 2, expert_ff = 32, shared_ff = 64;  // qwen2moe / qwen3moe
    float rope_base = 10000.0f;
    uint32_t seed = 1;
};

// A tensor about to be written; an edit hook may change any field or return false to drop it.
struct TinyTensor {
    std::string name;
    std::vector<uint64_t> dims;
    GgmlType type = GgmlType::F32;
    bool is_norm = false;  // filled with 1 + small noise instead of N(0, ~0.1)
};
using TinyEdit = std::function<bool(TinyTensor&)>;

inline std::vector<TinyTensor> tiny_tensors(const TinySpec& s) {
    const uint64_t dim = s.dim, q = uint64_t(s.n_heads) * s.head_dim,
                   kv = uint64_t(s.n_kv_heads) * s.head_dim, ff = s.ff, voc = s.n_vocab;
    std::vector<TinyTensor> t = {{"token_embd.weight", {dim, voc}}, {"output_norm.weight", {dim}, GgmlType::F32, true}};
    if (s.arch == "phi3") t.push_back({"output.weight", {dim, voc}});
    for (int i = 0; i < s.n_layers; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        t.push_back({b + "attn_norm.weight", {dim}, GgmlType::F32, true});
        if (s.arch == "phi3") {
            t.push_back({b + "attn_qkv.weight", {dim, q + 2 * kv}});
        } else {
            t.push_back({b + "attn_q.weight", {dim, q}});
            t.push_back({b + "attn_k.weight", {dim, kv}});
            t.push_back({b + "attn_v.weight", {dim, kv}});
        }
        if (s.arch == "qwen2" || s.arch == "qwen2moe") {
            t.push_back({b + "attn_q.bias", {q}});
            t.push_back({b + "attn_k.bias", {kv}});
            t.push_back({b + "attn_v.bias", {kv}});
        }
        if (s.arch == "qwen3" || s.arch == "qwen3moe") {
            t.push_back({b + "attn_q_norm.weight", {uint64_t(s.head_dim)}, GgmlType::F32, true});
            t.push_back({b + "attn_k_norm.weight", {uint64_t(s.head_dim)}, GgmlType::F32, true});
        }
        t.push_back({b + "attn_output.weight", {q, dim}});
        t.push_back({b + "ffn_norm.weight", {dim}, GgmlType::F32, true});
        if (s.arch == "qwen2moe" || s.arch == "qwen3moe") {
            const uint64_t ne = s.n_expert, eff = s.expert_ff, sff = s.shared_ff;
            t.push_back({b + "ffn_gate_inp.weight", {dim, ne}});
            t.push_back({b + "ffn_gate_exps.weight", {dim, eff, ne}});
            t.push_back({b + "ffn_up_exps.weight", {dim, eff, ne}});
            t.push_back({b + "ffn_down_exps.weight", {eff, dim, ne}});
            if (s.arch == "qwen2moe") {
                t.push_back({b + "ffn_gate_inp_shexp.weight", {dim}});
                t.push_back({b + "ffn_gate_shexp.weight", {dim, sff}});
                t.push_back({b + "ffn_up_shexp.weight", {dim, sff}});
                t.push_back({b + "ffn_down_shexp.weight", {sff, dim}});
            }
            continue;
        }
        if (s.arch == "phi3") {
            t.push_back({b + "ffn_up.weight", {dim, 2 * ff}});
        } else {
            t.push_back({b + "ffn_gate.weight", {dim, ff}});
            t.push_back({b + "ffn_up.weight", {dim, ff}});
        }
        t.push_back({b + "ffn_down.weight", {ff, dim}});
    }
    return t;
}

// Keys first (tests may override them with w.set_*), then the tensors.
inline GgufWriter tiny_model(const TinySpec& s, const TinyEdit& edit = {},
                             const std::vector<TinyTensor>& extra = {}) {
    GgufWriter w;
    const std::string a = s.key_prefix.empty() ? s.arch : s.key_prefix;
    w.set_string("general.architecture", s.arch);
    w.set_string("general.name", "tiny " + s.arch);
    w.set_u32(a + ".block_count", uint32_t(s.n_layers));
    w.set_u32(a + ".embedding_length", uint32_t(s.dim));
    w.set_u32(a + ".feed_forward_length", uint32_t(s.ff));
    w.set_u32(a + ".attention.head_count", uint32_t(s.n_heads));
    w.set_u32(a + ".attention.head_count_kv", uint32_t(s.n_kv_heads));
    w.set_u32(a + ".context_length", uint32_t(s.n_ctx));
    w.set_f32(a + ".rope.freq_base", s.rope_base);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
    if (s.arch == "qwen2moe" || s.arch == "qwen3moe") {
        w.set_u32(a + ".expert_count", uint32_t(s.n_expert));
        w.set_u32(a + ".expert_used_count", uint32_t(s.n_expert_used));
        w.set_u32(a + ".expert_feed_forward_length", uint32_t(s.expert_ff));
        if (s.arch == "qwen2moe") w.set_u32(a + ".expert_shared_feed_forward_length", uint32_t(s.shared_ff));
    }
    if (s.head_dim * s.n_heads != s.dim) {
        w.set_u32(a + ".attention.key_length", uint32_t(s.head_dim));
        w.set_u32(a + ".attention.value_length", uint32_t(s.head_dim));
    }
    uint64_t state = s.seed * 0x9E3779B97F4A7C15ull + 1;
    auto next = [&]() {  // uniform in [-0.5, 0.5)
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return float(double(state >> 40) / double(1ull << 24)) - 0.5f;
    };
    std::vector<TinyTensor> all = tiny_tensors(s);
    all.insert(all.end(), extra.begin(), extra.end());
    for (TinyTensor t : all) {
        if (edit && !edit(t)) continue;
        uint64_t n = 1;
        for (uint64_t d : t.dims) n *= d;
        std::vector<float> v(n);
        for (float& x : v) x = t.is_norm ? 1.0f + 0.1f * next() : 0.25f * next();
        std::vector<uint8_t> bytes;
        if (t.type == GgmlType::F16) {
            bytes.resize(n * 2);
            for (uint64_t i = 0; i < n; ++i) {
                const uint16_t h = fp32_to_fp16(v[i]);
                std::memcpy(bytes.data() + 2 * i, &h, 2);
            }
        } else {
            bytes.resize(n * 4);
            std::memcpy(bytes.data(), v.data(), n * 4);
        }
        w.add_tensor(t.name, t.type, t.dims, std::move(bytes));
    }
    return w;
}

// A tensor with given float contents (F32), for factors tensors.
inline void add_f32(GgufWriter& w, const std::string& name, const std::vector<float>& v) {
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    w.add_tensor(name, GgmlType::F32, {uint64_t(v.size())}, std::move(bytes));
}

inline std::unique_ptr<GgufReader> tiny_reader(const GgufWriter& w, const std::string& name = "tiny.gguf") {
    return GgufReader::from_bytes(w.to_bytes(), name);
}

// The message of the Error that loading `w` throws ("" when it loads).
inline std::string load_error(const GgufWriter& w) {
    try {
        load_model(tiny_reader(w));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace jitllm::test
