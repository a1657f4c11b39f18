// Model: the GGUF file, its ModelConfig and its weights bound by GGUF tensor name with shape
// checks. Describes only: never allocates device memory or computes (see plan/, backends/).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/config.h"

namespace jitllm {

class GgufReader;

// One weight as stored in the file (GGUF representation, never converted here).
struct WeightTensor {
    std::string name;             // GGUF tensor name, e.g. "blk.0.attn_q.weight"
    GgmlType type = GgmlType::F32;
    uint64_t cols = 0;            // dims[0]: contiguous row length (the input width of a matmul)
    uint64_t rows = 0;            // product of the other dims (the output width)
    uint64_t stack = 1;           // dims[2] of a 3-D tensor: matrices stacked (experts), each rows / stack rows
    size_t row_bytes = 0;         // bytes of one row
    size_t n_bytes = 0;           // bytes of the whole tensor
    const uint8_t* data = nullptr;  // into the file mapping
    const float* f32() const { return reinterpret_cast<const float*>(data); }
};

struct LayerWeights {
    const WeightTensor* attn_norm = nullptr;    // (dim) F32
    const WeightTensor* attn_q = nullptr;       // W (dim -> n_heads*head_dim)
    const WeightTensor* attn_k = nullptr;       // W (dim -> n_kv_heads*head_dim)
    const WeightTensor* attn_v = nullptr;       // W (dim -> n_kv_heads*head_dim)
    const WeightTensor* attn_qkv = nullptr;     // fused W (dim -> q_dim + 2*kv_dim), phi3
    const WeightTensor* attn_q_bias = nullptr;  // (q_dim) qwen2
    const WeightTensor* attn_k_bias = nullptr;  // (kv_dim)
    const WeightTensor* attn_v_bias = nullptr;  // (kv_dim)
    const WeightTensor* attn_q_norm = nullptr;  // (head_dim) qwen3
    const WeightTensor* attn_k_norm = nullptr;  // (head_dim)
    const WeightTensor* attn_output = nullptr;  // W (q_dim -> dim)
    const WeightTensor* ffn_norm = nullptr;     // (dim)
    const WeightTensor* ffn_gate = nullptr;     // W (dim -> hidden) (absent when fused_gate_up)
    const WeightTensor* ffn_up = nullptr;       // W (dim -> hidden), or (dim -> 2*hidden) fused
    const WeightTensor* ffn_down = nullptr;     // W (hidden -> dim)
    // mixture of experts (qwen2moe, qwen3moe): stacked [n_expert] matrices, see ModelConfig
    const WeightTensor* ffn_gate_inp = nullptr;        // router W (dim -> n_expert) F32
    const WeightTensor* ffn_gate_exps = nullptr;       // n_expert x W (dim -> expert_ff)
    const WeightTensor* ffn_up_exps = nullptr;         // n_expert x W (dim -> expert_ff)
    const WeightTensor* ffn_down_exps = nullptr;       // n_expert x W (expert_ff -> dim)
    const WeightTensor* ffn_gate_inp_shexp = nullptr;  // (dim) F32: the shared expert's gate logit
    const WeightTensor* ffn_gate_shexp = nullptr;      // W (dim -> shared_expert_ff)
    const WeightTensor* ffn_up_shexp = nullptr;        // W (dim -> shared_expert_ff)
    const WeightTensor* ffn_down_shexp = nullptr;      // W (shared_expert_ff -> dim)
};

struct Model {
    std::unique_ptr<GgufReader> gguf;
    ModelConfig config;
    std::deque<WeightTensor> tensors;           // stable addresses
    const WeightTensor* token_embd = nullptr;   // (n_vocab rows of dim)
    const WeightTensor* output_norm = nullptr;  // (dim)
    const WeightTensor* output = nullptr;       // (n_vocab rows of dim); == token_embd when tied
    const WeightTensor* rope_freqs = nullptr;   // (n_rot/2) F32, Llama 3.1 frequency factors
    const WeightTensor* rope_factors_short = nullptr;  // (n_rot/2) F32, phi3 LongRoPE, n_ctx <= n_ctx_orig
    const WeightTensor* rope_factors_long = nullptr;   // (n_rot/2) F32, phi3 LongRoPE, n_ctx > n_ctx_orig
    std::vector<LayerWeights> layers;
    std::vector<std::string> unused_tensors;    // in the file, claimed by no binding
    uint64_t weight_bytes() const;
    // The RoPE frequency factors for a context of n_ctx tokens (null: none): rope_freqs when
    // present, else LongRoPE's long factors when n_ctx exceeds rope.scaling.original_context_length
    // and its short ones otherwise (matches llama.cpp llama_model::get_rope_factors, which decides
    // by the context size, not by the position).
    const WeightTensor* rope_factors(int n_ctx) const;
    ~Model();
};

// Opens, validates and binds. Throws Error: unsupported architecture (lists supported ones),
// missing tensor, wrong shape (expected vs found), unsupported type.
std::unique_ptr<Model> load_model(const std::string& path);
// Same, over an already opened reader.
std::unique_ptr<Model> load_model(std::unique_ptr<GgufReader> g);

// Binding helper used by model/arch/*.cpp.
class WeightBinder {
public:
    WeightBinder(const GgufReader& g, Model& m) : g_(g), m_(m) {}
    // Required tensor with ggml-order shape {cols, rows} (or {n} for vectors).
    const WeightTensor* tensor(const std::string& name, std::vector<uint64_t> shape);
    // Optional: nullptr when absent; shape-checked when present.
    const WeightTensor* tensor_opt(const std::string& name, std::vector<uint64_t> shape);
    // "blk.<i>.<stem>.weight"
    static std::string blk(int i, const std::string& stem, const char* suffix = "weight");

private:
    const GgufReader& g_;
    Model& m_;
};

std::vector<std::string> supported_architectures();

}  // namespace jitllm
