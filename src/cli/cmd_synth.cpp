// `jitllm synth`: a GGUF model of a real architecture's shapes with seeded random weights and a
// real tokenizer copied from a vocab GGUF, written by our GGUF writer and quantizers. Lets
// anyone benchmark without downloads. Weights ~ N(0, 0.02); norm weights 1 + 0.1 N(0, 1).
#include <cmath>
#include <thread>

#include "cli/cli_util.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace jitllm::cli {
namespace {

struct Shape {
    const char* name;
    int n_layers, dim, hidden, n_heads, n_kv_heads, head_dim, ctx;
    float rope_base;
    bool tied;
    bool llama3_rope_freqs;  // Llama 3.1 long-context frequency factors (rope_freqs.weight)
    const char* arch = "llama";
    // mixture of experts (qwen2moe, qwen3moe): experts, used a token, their width, the shared expert's
    int n_expert = 0, n_expert_used = 0, expert_ff = 0, shared_ff = 0;
};

const Shape kShapes[] = {
    {"llama3.2-1b", 16, 2048, 8192, 32, 8, 64, 131072, 500000.0f, true, true},
    {"llama3.2-3b", 28, 3072, 8192, 24, 8, 128, 131072, 500000.0f, true, true},
    {"llama3.1-8b", 32, 4096, 14336, 32, 8, 128, 131072, 500000.0f, false, true},
    {"llama2-7b", 32, 4096, 11008, 32, 32, 128, 4096, 10000.0f, false, false},
    {"tiny", 2, 256, 512, 4, 2, 64, 2048, 10000.0f, true, false},
    // Qwen3-30B-A3B (and Qwen3-Coder-30B-A3B): 128 experts of 768, 8 a token, q/k norm, head_dim 128
    {"qwen3-30b-a3b", 48, 2048, 6144, 32, 4, 128, 40960, 1000000.0f, false, false, "qwen3moe", 128, 8, 768, 0},
    // Qwen1.5-MoE-A2.7B: 60 experts of 1408, 4 a token, a shared expert of 5632, q/k/v biases
    {"qwen1.5-moe-a2.7b", 24, 2048, 5632, 16, 16, 128, 8192, 1000000.0f, false, false, "qwen2moe", 60, 4, 1408, 5632},
    {"tiny-qwen3moe", 2, 256, 512, 4, 2, 64, 2048, 1000000.0f, false, false, "qwen3moe", 8, 2, 256, 0},
    {"tiny-qwen2moe", 2, 256, 512, 4, 2, 64, 2048, 1000000.0f, false, false, "qwen2moe", 8, 2, 256, 512},
};

uint64_t splitmix(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t hash_name(const std::string& s, uint64_t seed) {
    uint64_t h = 1469598103934665603ull ^ seed;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

// Fills rows [r0, r1) of a (rows x cols) tensor with N(mean, std) values, quantized to `type`.
// Each row has its own stream, so the output does not depend on the thread count.
void fill_rows(GgmlType type, uint64_t seed, float mean, float std, int64_t cols, int64_t r0,
               int64_t r1, uint8_t* out) {
    std::vector<float> row(static_cast<size_t>(cols));
    const size_t rb = row_bytes(type, uint64_t(cols));
    for (int64_t r = r0; r < r1; ++r) {
        uint64_t s = seed ^ (uint64_t(r) * 0xd1b54a32d192ed03ull);
        for (int64_t i = 0; i < cols; i += 2) {
            const double u1 = (double(splitmix(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
            const double u2 = double(splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
            const double m = std::sqrt(-2.0 * std::log(u1));
            row[size_t(i)] = mean + std * float(m * std::cos(6.283185307179586 * u2));
            if (i + 1 < cols) row[size_t(i + 1)] = mean + std * float(m * std::sin(6.283185307179586 * u2));
        }
        quantize_row(type, row.data(), out + size_t(r) * rb, cols);
    }
}

std::vector<uint8_t> random_tensor(GgmlType type, const std::string& name, uint64_t seed, float mean,
                                   float std, int64_t cols, int64_t rows, int threads) {
    std::vector<uint8_t> data(row_bytes(type, uint64_t(cols)) * size_t(rows));
    const uint64_t s = hash_name(name, seed);
    std::vector<std::thread> pool;
    const int64_t per = (rows + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) {
        const int64_t r0 = std::min(rows, t * per), r1 = std::min(rows, (t + 1) * per);
        if (r0 < r1) pool.emplace_back(fill_rows, type, s, mean, std, cols, r0, r1, data.data());
    }
    for (auto& th : pool) th.join();
    return data;
}

}  // namespace

int cmd_synth(const Args& args) {
    CLI::App app{"jitllm synth: random-weight GGUF of a real model's shapes", "jitllm synth"};
    std::string shape_name, type_name_s = "f16", vocab, out;
    uint64_t seed = 42;
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    int layers = 0;
    std::string shapes;
    for (const auto& s : kShapes) shapes += std::string(shapes.empty() ? "" : "|") + s.name;
    app.add_option("--shape", shape_name, shapes)->required();
    app.add_option("--type", type_name_s, "weight type of the matrices: f32|f16|bf16|q8_0|q4_0");
    app.add_option("--vocab", vocab, "GGUF whose tokenizer.* keys are copied")->required();
    app.add_option("--out", out, "output GGUF")->required();
    app.add_option("--seed", seed, "random seed");
    app.add_option("--threads", threads, "generator threads")->check(CLI::Range(1, 1024));
    app.add_option("--layers", layers, "override the layer count (quick experiments)")->check(CLI::Range(0, 4096));
    if (!parse_args(app, args)) return 0;
    const Shape* sh = nullptr;
    for (const auto& s : kShapes)
        if (shape_name == s.name) sh = &s;
    if (!sh) fail_usage("--shape: expected one of {}, found '{}'", shapes, shape_name);
    const auto wt = type_from_name(type_name_s);
    if (!wt || !can_quantize(*wt))
        fail_usage("--type: expected one of f32, f16, bf16, q8_0, q4_0, found '{}'", type_name_s);
    const int n_layers = layers > 0 ? layers : sh->n_layers;

    auto v = GgufReader::open(vocab);
    const auto tokens = v->get_string_array_opt("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty())
        fail("{}: missing key 'tokenizer.ggml.tokens': expected a vocabulary to copy", vocab);
    const int64_t n_vocab = int64_t(tokens->size());

    GgufWriter w;
    const std::string a = sh->arch;
    const bool moe = sh->n_expert > 0, qwen2moe = a == "qwen2moe", qwen3moe = a == "qwen3moe";
    w.set_string("general.architecture", a);
    w.set_string("general.name", fmt::format("jitllm synth {} {} seed {}", sh->name, type_name_s, seed));
    w.set_u32(a + ".block_count", uint32_t(n_layers));
    w.set_u32(a + ".context_length", uint32_t(sh->ctx));
    w.set_u32(a + ".embedding_length", uint32_t(sh->dim));
    w.set_u32(a + ".feed_forward_length", uint32_t(sh->hidden));
    w.set_u32(a + ".attention.head_count", uint32_t(sh->n_heads));
    w.set_u32(a + ".attention.head_count_kv", uint32_t(sh->n_kv_heads));
    w.set_u32(a + ".attention.key_length", uint32_t(sh->head_dim));
    w.set_u32(a + ".attention.value_length", uint32_t(sh->head_dim));
    w.set_u32(a + ".rope.dimension_count", uint32_t(sh->head_dim));
    w.set_f32(a + ".rope.freq_base", sh->rope_base);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", moe ? 1e-6f : 1e-5f);
    if (moe) {
        w.set_u32(a + ".expert_count", uint32_t(sh->n_expert));
        w.set_u32(a + ".expert_used_count", uint32_t(sh->n_expert_used));
        w.set_u32(a + ".expert_feed_forward_length", uint32_t(sh->expert_ff));
        if (sh->shared_ff > 0) w.set_u32(a + ".expert_shared_feed_forward_length", uint32_t(sh->shared_ff));
    }
    w.set_u32(a + ".vocab_size", uint32_t(n_vocab));
    for (const auto& kv : v->kvs())
        if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);

    const GgmlType T = *wt;
    const int64_t d = sh->dim, q = int64_t(sh->n_heads) * sh->head_dim,
                  kv = int64_t(sh->n_kv_heads) * sh->head_dim, ff = sh->hidden;
    auto mat = [&](const std::string& name, int64_t cols, int64_t rows) {
        w.add_tensor(name, T, {uint64_t(cols), uint64_t(rows)},
                     random_tensor(T, name, seed, 0.0f, 0.02f, cols, rows, threads));
    };
    // a stack of n matrices (experts): ggml dims {cols, rows, n}, each row its own stream
    auto stack = [&](const std::string& name, int64_t cols, int64_t rows, int64_t n) {
        w.add_tensor(name, T, {uint64_t(cols), uint64_t(rows), uint64_t(n)},
                     random_tensor(T, name, seed, 0.0f, 0.02f, cols, rows * n, threads));
    };
    // F32 matrices (the router; the shared expert's gate vector, rows = 1)
    auto f32 = [&](const std::string& name, int64_t cols, int64_t rows, float std) {
        const std::vector<uint64_t> dims = rows > 1 ? std::vector<uint64_t>{uint64_t(cols), uint64_t(rows)}
                                                    : std::vector<uint64_t>{uint64_t(cols)};
        w.add_tensor(name, GgmlType::F32, dims, random_tensor(GgmlType::F32, name, seed, 0.0f, std, cols, rows, threads));
    };
    auto norm = [&](const std::string& name, int64_t n) {
        w.add_tensor(name, GgmlType::F32, {uint64_t(n)},
                     random_tensor(GgmlType::F32, name, seed, 1.0f, 0.1f, n, 1, 1));
    };
    mat("token_embd.weight", d, n_vocab);
    norm("output_norm.weight", d);
    if (!sh->tied) mat("output.weight", d, n_vocab);
    if (sh->llama3_rope_freqs) {
        // Llama 3.1 scaling (factor 8, low/high freq factors 1/4, original ctx 8192)
        std::vector<float> f(size_t(sh->head_dim / 2));
        for (size_t i = 0; i < f.size(); ++i) {
            const double freq = std::pow(double(sh->rope_base), -2.0 * double(i) / sh->head_dim);
            const double wavelen = 2 * M_PI / freq, lo = 8192.0 / 1.0, hi = 8192.0 / 4.0;
            double factor = 1.0;
            if (wavelen > lo) factor = 8.0;
            else if (wavelen > hi) {
                const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
                factor = 1.0 / ((1 - smooth) / 8.0 + smooth);
            }
            f[i] = float(factor);
        }
        std::vector<uint8_t> bytes(f.size() * 4);
        std::memcpy(bytes.data(), f.data(), bytes.size());
        w.add_tensor("rope_freqs.weight", GgmlType::F32, {uint64_t(f.size())}, std::move(bytes));
    }
    for (int i = 0; i < n_layers; ++i) {
        const std::string p = fmt::format("blk.{}.", i);
        norm(p + "attn_norm.weight", d);
        mat(p + "attn_q.weight", d, q);
        mat(p + "attn_k.weight", d, kv);
        mat(p + "attn_v.weight", d, kv);
        if (qwen2moe) {
            for (const char* b : {"attn_q.bias", "attn_k.bias", "attn_v.bias"})
                f32(p + b, std::string(b) == "attn_q.bias" ? q : kv, 1, 0.02f);
        }
        if (qwen3moe) {
            norm(p + "attn_q_norm.weight", sh->head_dim);
            norm(p + "attn_k_norm.weight", sh->head_dim);
        }
        mat(p + "attn_output.weight", q, d);
        norm(p + "ffn_norm.weight", d);
        if (!moe) {
            mat(p + "ffn_gate.weight", d, ff);
            mat(p + "ffn_up.weight", d, ff);
            mat(p + "ffn_down.weight", ff, d);
            continue;
        }
        // router weights N(0, 1), so that the chosen experts change from token to token
        f32(p + "ffn_gate_inp.weight", d, sh->n_expert, 1.0f);
        stack(p + "ffn_gate_exps.weight", d, sh->expert_ff, sh->n_expert);
        stack(p + "ffn_up_exps.weight", d, sh->expert_ff, sh->n_expert);
        stack(p + "ffn_down_exps.weight", sh->expert_ff, d, sh->n_expert);
        if (sh->shared_ff > 0) {
            f32(p + "ffn_gate_inp_shexp.weight", d, 1, 0.02f);
            mat(p + "ffn_gate_shexp.weight", d, sh->shared_ff);
            mat(p + "ffn_up_shexp.weight", d, sh->shared_ff);
            mat(p + "ffn_down_shexp.weight", sh->shared_ff, d);
        }
    }
    w.write(out);
    std::fprintf(stderr, "[jitllm] wrote %s (%s, %s, %d layers, vocab %lld)\n", out.c_str(), sh->name,
                 type_name_s.c_str(), n_layers, (long long)n_vocab);
    return 0;
}

}  // namespace jitllm::cli
