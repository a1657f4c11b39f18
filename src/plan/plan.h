// Plan: the model lowered to named tasks per phase, with the buffers (slots) they read and write.
// Pure data: no device code. Backends execute it (CPU: one reference implementation per task
// kind) or lower it further into a schedule of kernels (CUDA: groups of consecutive tasks).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model.h"
#include "plan/task_kind.h"

namespace jitllm {

// Activation and state slots. Shapes come from the config (see plan_build()). Activation slots
// hold `rows` rows (the batch phase's rows; decode and prefill use row 0); Logits holds n_seq rows.
enum class Slot : uint8_t {
    Token,   // i32 (1)            next input token (decode, prefill)
    Pos,     // i32 (1)            position of that token
    X,       // f32 (dim)          residual stream
    Xb,      // f32 (dim)          normed input of a matmul
    Q,       // f32 (n_heads, head_dim)
    K,       // f32 (n_kv_heads, head_dim)
    V,       // f32 (n_kv_heads, head_dim)
    Att,     // f32 (n_heads, head_dim)   attention output
    Tmp,     // f32 (dim)          block output before the residual add
    Hb,      // f32 (hidden)       gate, then activated
    Hb2,     // f32 (hidden)       up
    Logits,  // f32 (n_vocab)
    KCache,  // kv (kv_blocks, kv_block, n_kv_heads, head_dim) per layer: the paged pool
    VCache,  // kv (kv_blocks, kv_block, n_kv_heads, head_dim) per layer
    Tokens,  // i32 (rows)         batch phase: input token of each row; `sample` writes the pick
    Positions,  // i32 (rows)      batch phase: position of each row
    Seqs,    // i32 (rows)         batch phase: sequence (KV cache) of each row, < n_seq
    Router,  // f32 (n_expert + shared)  router logits [, the shared expert's gate logit last]   (MoE)
    ExpIds,  // i32 (n_expert_used)      the chosen experts, best first
    ExpW,    // f32 (n_expert_used)      their weights
    ExpHb,   // f32 (n_expert_used, expert_ff)  gate, then activated, per chosen expert
    ExpHb2,  // f32 (n_expert_used, expert_ff)  up
    Count,
};
const char* slot_name(Slot s);

struct BufferDesc {
    Slot slot;
    const char* dtype;           // "f32" | "i32" | "kv" (KV-cache type chosen by the backend)
    std::vector<int64_t> shape;  // elements per dimension
    bool per_layer = false;
};

// Decode: one token, ending in output + sample. Prefill (--with-prefill-decode): one prompt token
// without the output tail. Batch: `rows` tokens at once, each with its own position and sequence
// (a prompt chunk of --batch-prefill-size, or one token of each of several sequences); its tasks
// are the decode tasks, the output tail (output_norm, output, sample) only when logits are asked.
enum class Phase : uint8_t { Decode, Prefill, Batch };
const char* phase_name(Phase p);

struct Task {
    TaskKind kind;
    int layer = -1;                        // -1 for global tasks
    std::string name;                      // "blk.3.attn_norm" | "output"
    std::vector<Slot> in, out;
    // Weights in kind-specific order (nullable entries), see plan_build():
    //   attn_qkv: {attn_q, attn_k, attn_v, q_bias, k_bias, v_bias} or {attn_qkv, -, -, biases}
    //   attn_qk_norm: {attn_q_norm, attn_k_norm};  ffn_gate_up: {ffn_gate | null, ffn_up}
    //   norms: {weight}; matmuls: {matrix}; attn_rope: {Model::rope_factors(n_ctx) | null}
    //   ffn_router: {ffn_gate_inp, ffn_gate_inp_shexp | null}; ffn_exp_gate_up: {gate_exps, up_exps};
    //   ffn_exp_down: {down_exps}; ffn_shexp_gate_up: {gate_shexp, up_shexp}; ffn_shexp_down: {down_shexp}
    std::vector<const WeightTensor*> w;
    float eps = 0.0f;    // norms
    float scale = 1.0f;  // token_embd, residuals, attn (softmax scale), output (1/logit_scale)
    bool renorm = false;  // ffn_topk: the chosen weights renormalised to sum 1
    uint64_t weight_bytes = 0;  // bytes of weights read per execution (experts: the chosen ones)
    uint64_t flops = 0;         // per execution at position 0 (matmuls: 2*rows*cols)
};

// The KV cache is a pool of kv_blocks blocks of kv_block positions. Sequence s's position p lives
// in row table[s][p / kv_block] * kv_block + p % kv_block of the pool, through the block table the
// backend holds (Backend::set_kv_blocks; until set, sequence s has blocks s * per_seq + b, so
// sequence 0 is rows 0 .. n_ctx - 1, which the decode phase reads directly).
constexpr int kKvBlockTokens = 16;

struct PlanOptions {
    int n_ctx = 0;       // positions per sequence
    int batch_rows = 0;  // rows of the batch phase (0: no batch phase)
    int n_seq = 1;       // sequences (KV caches); logits rows of the batch phase
    int kv_blocks = 0;   // blocks in the KV pool; 0: n_seq * kv_blocks_per_seq (every sequence its context)
};

struct Plan {
    const Model* model = nullptr;
    const ModelConfig* config = nullptr;
    int n_ctx = 0;
    int batch_rows = 0;  // 0: the plan has no batch phase
    int n_seq = 1;
    int kv_block = kKvBlockTokens;  // positions a KV block
    int kv_blocks = 0;              // blocks in the KV pool (>= kv_blocks_per_seq())
    int kv_blocks_per_seq() const { return (n_ctx + kv_block - 1) / kv_block; }  // a block table's length
    std::vector<BufferDesc> buffers;
    std::vector<Task> decode;   // one token through the whole model, ending in output + sample
    std::vector<Task> prefill;  // --with-prefill-decode: decode minus output_norm/output/sample
    std::vector<Task> batch;    // rows at once: the decode tasks; tail from batch_body on
    size_t batch_body = 0;      // batch[0, batch_body): every step; the rest: with logits only
    const std::vector<Task>& phase(Phase p) const {
        return p == Phase::Decode ? decode : p == Phase::Prefill ? prefill : batch;
    }
};

// The shape of a run, for launch accounting: prompt length, tokens generated, mode.
struct RunShape {
    int n_prompt = 0;
    int n_gen = 0;                // tokens generated (the last one is never fed back)
    bool prefill_decode = false;  // --with-prefill-decode
    int batch_prefill = 0;        // --batch-prefill-size (chunk rows; 0 = off, wins over prefill_decode)
    bool device_draw = false;     // sampled tokens drawn on the device (the CUDA decode lists with the pick kernel)
};

// How many times each phase runs for a run of that shape (no early stop at end-of-generation):
// default mode: decode = n_prompt + n_gen - 1; --with-prefill-decode: prefill = n_prompt - 1,
// decode = n_gen (the last prompt token, then n_gen - 1 generated tokens); --batch-prefill-size
// N (prompt of 2+ tokens): batch = ceil(n_prompt / N) chunks, the last one with the output tail
// for its last row (batch_tail = 1), decode = n_gen - 1.
struct PhaseRuns {
    int64_t decode = 0;
    int64_t prefill = 0;
    int64_t batch = 0;             // batch-phase steps (prompt chunks): the body tasks
    int64_t batch_tail = 0;        // batch-phase output tails (the last chunk's last row)
    int64_t decode_in_prompt = 0;  // decode runs spent on prompt tokens
};
PhaseRuns plan_phase_runs(const RunShape& r);

// Executions of every task name over such a run (what the CPU backend counts).
std::map<std::string, uint64_t> plan_task_executions(const Plan& p, const RunShape& r);

// Lowers the model into tasks (paper order, one layer after another).
Plan plan_build(const Model& m, const PlanOptions& o);
inline Plan plan_build(const Model& m, int n_ctx) { return plan_build(m, PlanOptions{n_ctx}); }

// Elements of one row of an activation slot (X: dim, Q: n_heads * head_dim, Logits: n_vocab,
// Tokens: 1, ...). KCache/VCache: one position (kv_dim).
int64_t slot_row_elems(const Plan& p, Slot s);

// Human-readable plan: buffers, then each phase's tasks with inputs, outputs and weights.
std::string plan_describe(const Plan& p);

// The name of one launch that runs tasks[idx...] together, the stem of the GPU backends' kernel
// symbols: attn_norm + attn_qkv -> "attn_norm_qkv"; ffn_norm + ffn_gate_up + ffn_act ->
// "ffn_norm_gate_up_act" (a later task's name drops the first one's prefix).
std::string task_group_name(const std::vector<Task>& tasks, const std::vector<size_t>& idx);

}  // namespace jitllm
