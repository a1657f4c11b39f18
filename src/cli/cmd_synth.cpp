// `jitllm synth`: a GGUF model of a real architecture's shapes with seeded random weights and a
// real tokenizer copied from a vocab GGUF, written by our GGUF writer and quantizers. Lets
// anyone benchmark without downloads. Weights ~ N(0, 0.02); norm weights 1 + 0.1 N(0, 1); MoE
// routers N(0, 1) (so that each token's experts are chosen clearly). Tensors are generated while
// the file is written, a bounded run of rows at a time: a 30B shape needs no 17 GB buffer.
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
    const char* arch = "llama";  // general.architecture: llama, qwen2moe, qwen3moe, mistral3
    int n_layers = 0, dim = 0, hidden = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ctx = 0;
    float rope_base = 10000.0f, norm_eps = 1e-5f;
    int n_vocab = 0;  // token_embd rows; the vocabulary file's tokens padded to it (0: as the file)
    bool tied = false;
    bool llama3_rope_freqs = false;  // Llama 3.1 long-context frequency factors (rope_freqs.weight)
    // mixture of experts (qwen2moe: also a shared expert of ff_shexp gated by ffn_gate_inp_shexp)
    int n_expert = 0, n_expert_used = 0, ff_exp = 0, ff_shexp = 0;
    // YaRN (mistral3): factor, original context, log multiplier; attention temperature
    float yarn_factor = 0.0f;
    int yarn_orig_ctx = 0;
    float yarn_log_mul = 0.0f, attn_temp_scale = 0.0f;
};

// Llama shapes from the models' config.json; the others:
//  - qwen3-30b-a3b (Qwen/Qwen3-30B-A3B): 48 layers, hidden 2048, 32 q / 4 kv heads of 128, 128
//    experts of 768, 8 used (top-k renormalised: qwen3moe), dense intermediate 6144 (written as
//    feed_forward_length, unused by the MoE blocks), rope theta 1e6, eps 1e-6, ctx 40960, vocab
//    151936, untied; q/k RMS norm (qwen3moe).
//  - qwen1.5-moe-a2.7b (Qwen/Qwen1.5-MoE-A2.7B): 24 layers, hidden 2048, 16 heads of 128 (MHA),
//    60 experts of 1408, 4 used, shared expert 5632 (ffn_gate_inp_shexp), rope theta 1e6, eps 1e-6,
//    ctx 8192, vocab 151936, untied; q/k/v biases (qwen2moe).
//  - ministral3-8b (mistralai/Ministral-3-8B-*-2512, transformers' Ministral3Config defaults):
//    34 layers, hidden 4096, intermediate 14336, 32 q / 8 kv heads of 128, vocab 131072 (Tekken),
//    ctx 262144, rope theta 1e6, eps 1e-5, untied; YaRN factor 16 over 16384 positions, beta
//    32 / 1, mscale = mscale_all_dim = 1 (written as yarn_log_multiplier 1: magnitude 1),
//    llama_4_scaling_beta 0.1 (attention.temperature_scale).
// The tiny-* shapes are for tests (tiny-qwen2moe pads a 512-token vocabulary to 544).
const Shape kShapes[] = {
    {.name = "llama3.2-1b", .n_layers = 16, .dim = 2048, .hidden = 8192, .n_heads = 32, .n_kv_heads = 8,
     .head_dim = 64, .ctx = 131072, .rope_base = 500000.0f, .tied = true, .llama3_rope_freqs = true},
    {.name = "llama3.2-3b", .n_layers = 28, .dim = 3072, .hidden = 8192, .n_heads = 24, .n_kv_heads = 8,
     .head_dim = 128, .ctx = 131072, .rope_base = 500000.0f, .tied = true, .llama3_rope_freqs = true},
    {.name = "llama3.1-8b", .n_layers = 32, .dim = 4096, .hidden = 14336, .n_heads = 32, .n_kv_heads = 8,
     .head_dim = 128, .ctx = 131072, .rope_base = 500000.0f, .llama3_rope_freqs = true},
    {.name = "llama2-7b", .n_layers = 32, .dim = 4096, .hidden = 11008, .n_heads = 32, .n_kv_heads = 32,
     .head_dim = 128, .ctx = 4096},
    {.name = "qwen3-30b-a3b", .arch = "qwen3moe", .n_layers = 48, .dim = 2048, .hidden = 6144, .n_heads = 32,
     .n_kv_heads = 4, .head_dim = 128, .ctx = 40960, .rope_base = 1e6f, .norm_eps = 1e-6f, .n_vocab = 151936,
     .n_expert = 128, .n_expert_used = 8, .ff_exp = 768},
    {.name = "qwen1.5-moe-a2.7b", .arch = "qwen2moe", .n_layers = 24, .dim = 2048, .hidden = 5632, .n_heads = 16,
     .n_kv_heads = 16, .head_dim = 128, .ctx = 8192, .rope_base = 1e6f, .norm_eps = 1e-6f, .n_vocab = 151936,
     .n_expert = 60, .n_expert_used = 4, .ff_exp = 1408, .ff_shexp = 5632},
    {.name = "ministral3-8b", .arch = "mistral3", .n_layers = 34, .dim = 4096, .hidden = 14336, .n_heads = 32,
     .n_kv_heads = 8, .head_dim = 128, .ctx = 262144, .rope_base = 1e6f, .n_vocab = 131072, .yarn_factor = 16.0f,
     .yarn_orig_ctx = 16384, .yarn_log_mul = 1.0f, .attn_temp_scale = 0.1f},
    {.name = "tiny", .n_layers = 2, .dim = 256, .hidden = 512, .n_heads = 4, .n_kv_heads = 2, .head_dim = 64,
     .ctx = 2048, .tied = true},
    {.name = "tiny-qwen3moe", .arch = "qwen3moe", .n_layers = 2, .dim = 256, .hidden = 512, .n_heads = 4,
     .n_kv_heads = 2, .head_dim = 128, .ctx = 2048, .rope_base = 1e6f, .norm_eps = 1e-6f, .n_expert = 4,
     .n_expert_used = 2, .ff_exp = 128},
    {.name = "tiny-qwen2moe", .arch = "qwen2moe", .n_layers = 2, .dim = 256, .hidden = 512, .n_heads = 4,
     .n_kv_heads = 4, .head_dim = 64, .ctx = 2048, .rope_base = 1e6f, .norm_eps = 1e-6f, .n_vocab = 544,
     .n_expert = 4, .n_expert_used = 2, .ff_exp = 128, .ff_shexp = 512},
    {.name = "tiny-mistral3", .arch = "mistral3", .n_layers = 2, .dim = 256, .hidden = 512, .n_heads = 4,
     .n_kv_heads = 2, .head_dim = 128, .ctx = 2048, .rope_base = 1e6f, .yarn_factor = 8.0f, .yarn_orig_ctx = 64,
     .yarn_log_mul = 0.1f, .attn_temp_scale = 0.1f},
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

// Fills rows [r0, r1) of a tensor of `cols` columns with N(mean, std) values, quantized to `type`,
// row r at out + (r - r0) * row bytes. Each row has its own stream, so the output depends neither
// on the thread count nor on how the writer splits the rows into runs.
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
        quantize_row(type, row.data(), out + size_t(r - r0) * rb, cols);
    }
}

// The writer's fill function of a random tensor: each run of rows split over `threads` threads.
GgufWriter::FillRows random_rows(GgmlType type, uint64_t seed, float mean, float std, int64_t cols, int threads) {
    return [=](uint64_t r0, uint64_t r1, uint8_t* out) {
        const int64_t rows = int64_t(r1 - r0), per = (rows + threads - 1) / threads;
        const size_t rb = row_bytes(type, uint64_t(cols));
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
            const int64_t a = std::min(rows, t * per), b = std::min(rows, (t + 1) * per);
            if (a < b)
                pool.emplace_back(fill_rows, type, seed, mean, std, cols, int64_t(r0) + a, int64_t(r0) + b,
                                  out + size_t(a) * rb);
        }
        for (auto& th : pool) th.join();
    };
}

// The hyperparameter keys of the shape (what llama.cpp's converter writes for the architecture).
void write_keys(GgufWriter& w, const Shape& sh, int n_layers) {
    const std::string a = sh.arch;
    w.set_u32(a + ".block_count", uint32_t(n_layers));
    w.set_u32(a + ".context_length", uint32_t(sh.ctx));
    w.set_u32(a + ".embedding_length", uint32_t(sh.dim));
    w.set_u32(a + ".feed_forward_length", uint32_t(sh.hidden));
    w.set_u32(a + ".attention.head_count", uint32_t(sh.n_heads));
    w.set_u32(a + ".attention.head_count_kv", uint32_t(sh.n_kv_heads));
    w.set_u32(a + ".attention.key_length", uint32_t(sh.head_dim));
    w.set_u32(a + ".attention.value_length", uint32_t(sh.head_dim));
    w.set_u32(a + ".rope.dimension_count", uint32_t(sh.head_dim));
    w.set_f32(a + ".rope.freq_base", sh.rope_base);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", sh.norm_eps);
    if (sh.n_expert > 0) {
        w.set_u32(a + ".expert_count", uint32_t(sh.n_expert));
        w.set_u32(a + ".expert_used_count", uint32_t(sh.n_expert_used));
        w.set_u32(a + ".expert_feed_forward_length", uint32_t(sh.ff_exp));
        if (sh.ff_shexp > 0) w.set_u32(a + ".expert_shared_feed_forward_length", uint32_t(sh.ff_shexp));
    }
    if (sh.yarn_factor > 0.0f) {
        w.set_string(a + ".rope.scaling.type", "yarn");
        w.set_f32(a + ".rope.scaling.factor", sh.yarn_factor);
        w.set_u32(a + ".rope.scaling.original_context_length", uint32_t(sh.yarn_orig_ctx));
        w.set_f32(a + ".rope.scaling.yarn_beta_fast", 32.0f);
        w.set_f32(a + ".rope.scaling.yarn_beta_slow", 1.0f);
        w.set_f32(a + ".rope.scaling.yarn_log_multiplier", sh.yarn_log_mul);
    }
    if (sh.attn_temp_scale > 0.0f) w.set_f32(a + ".attention.temperature_scale", sh.attn_temp_scale);
}

// The vocabulary file's tokenizer keys, its token list padded to n_vocab with "[PAD<i>]" tokens of
// type unused (as converted Qwen files pad theirs to the embedding rows). Returns the token count.
int64_t copy_tokenizer(GgufWriter& w, const GgufReader& v, const std::string& vocab, int n_vocab) {
    auto tokens = v.get_string_array_opt("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty())
        fail("{}: missing key 'tokenizer.ggml.tokens': expected a vocabulary to copy", vocab);
    for (const auto& kv : v.kvs())
        if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
    const size_t n = tokens->size();
    if (int64_t(n) >= n_vocab) return int64_t(n);
    for (size_t i = n; i < size_t(n_vocab); ++i) tokens->push_back(fmt::format("[PAD{}]", i));
    w.set_string_array("tokenizer.ggml.tokens", *tokens);
    if (auto types = v.get_int_array_opt("tokenizer.ggml.token_type")) {
        std::vector<int32_t> t(types->begin(), types->end());
        t.resize(size_t(n_vocab), 5);  // unused
        w.set_i32_array("tokenizer.ggml.token_type", t);
    }
    if (auto scores = v.get_float_array_opt("tokenizer.ggml.scores")) {
        std::vector<float> s(scores->begin(), scores->end());
        s.resize(size_t(n_vocab), 0.0f);
        w.set_f32_array("tokenizer.ggml.scores", s);
    }
    return n_vocab;
}

// Llama 3.1 scaling (factor 8, low/high freq factors 1/4, original ctx 8192)
std::vector<float> llama3_rope_freqs(const Shape& sh) {
    std::vector<float> f(size_t(sh.head_dim / 2));
    for (size_t i = 0; i < f.size(); ++i) {
        const double freq = std::pow(double(sh.rope_base), -2.0 * double(i) / sh.head_dim);
        const double wavelen = 2 * M_PI / freq, lo = 8192.0 / 1.0, hi = 8192.0 / 4.0;
        double factor = 1.0;
        if (wavelen > lo) factor = 8.0;
        else if (wavelen > hi) {
            const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
            factor = 1.0 / ((1 - smooth) / 8.0 + smooth);
        }
        f[i] = float(factor);
    }
    return f;
}

// The tensors of the shape, each generated when the writer reaches it.
void add_tensors(GgufWriter& w, const Shape& sh, GgmlType T, int n_layers, int64_t n_vocab, uint64_t seed,
                 int threads) {
    const uint64_t d = uint64_t(sh.dim), q = uint64_t(sh.n_heads) * uint64_t(sh.head_dim),
                   kv = uint64_t(sh.n_kv_heads) * uint64_t(sh.head_dim), ff = uint64_t(sh.hidden),
                   hd = uint64_t(sh.head_dim), ne = uint64_t(sh.n_expert), fe = uint64_t(sh.ff_exp),
                   fs = uint64_t(sh.ff_shexp);
    const std::string arch = sh.arch;
    auto add = [&](const std::string& name, GgmlType t, std::vector<uint64_t> dims, float mean, float std) {
        w.add_tensor_rows(name, t, dims, random_rows(t, hash_name(name, seed), mean, std, int64_t(dims[0]), threads));
    };
    auto mat = [&](const std::string& name, std::vector<uint64_t> dims) { add(name, T, std::move(dims), 0.0f, 0.02f); };
    auto vec = [&](const std::string& name, uint64_t n, float mean, float std) {
        add(name, GgmlType::F32, {n}, mean, std);
    };
    mat("token_embd.weight", {d, uint64_t(n_vocab)});
    vec("output_norm.weight", d, 1.0f, 0.1f);
    if (!sh.tied) mat("output.weight", {d, uint64_t(n_vocab)});
    if (sh.llama3_rope_freqs) {
        const std::vector<float> f = llama3_rope_freqs(sh);
        std::vector<uint8_t> bytes(f.size() * 4);
        std::memcpy(bytes.data(), f.data(), bytes.size());
        w.add_tensor("rope_freqs.weight", GgmlType::F32, {uint64_t(f.size())}, std::move(bytes));
    }
    for (int i = 0; i < n_layers; ++i) {
        const std::string p = fmt::format("blk.{}.", i);
        vec(p + "attn_norm.weight", d, 1.0f, 0.1f);
        mat(p + "attn_q.weight", {d, q});
        mat(p + "attn_k.weight", {d, kv});
        mat(p + "attn_v.weight", {d, kv});
        if (arch == "qwen2moe") {
            vec(p + "attn_q.bias", q, 0.0f, 0.02f);
            vec(p + "attn_k.bias", kv, 0.0f, 0.02f);
            vec(p + "attn_v.bias", kv, 0.0f, 0.02f);
        }
        if (arch == "qwen3moe") {
            vec(p + "attn_q_norm.weight", hd, 1.0f, 0.1f);
            vec(p + "attn_k_norm.weight", hd, 1.0f, 0.1f);
        }
        mat(p + "attn_output.weight", {q, d});
        vec(p + "ffn_norm.weight", d, 1.0f, 0.1f);
        if (ne == 0) {
            mat(p + "ffn_gate.weight", {d, ff});
            mat(p + "ffn_up.weight", {d, ff});
            mat(p + "ffn_down.weight", {ff, d});
            continue;
        }
        add(p + "ffn_gate_inp.weight", GgmlType::F32, {d, ne}, 0.0f, 1.0f);  // the router stays F32
        mat(p + "ffn_gate_exps.weight", {d, fe, ne});
        mat(p + "ffn_up_exps.weight", {d, fe, ne});
        mat(p + "ffn_down_exps.weight", {fe, d, ne});
        if (fs > 0) {
            vec(p + "ffn_gate_inp_shexp.weight", d, 0.0f, 0.02f);
            mat(p + "ffn_gate_shexp.weight", {d, fs});
            mat(p + "ffn_up_shexp.weight", {d, fs});
            mat(p + "ffn_down_shexp.weight", {fs, d});
        }
    }
}

}  // namespace

int cmd_synth(const Args& args) {
    CLI::App app{"jitllm synth: random-weight GGUF of a real model's shapes", "jitllm synth"};
    std::string arch, shape_name, type_name_s = "f16", vocab, out;
    uint64_t seed = 42;
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    int layers = 0;
    app.add_option("--arch", arch, "the shape's architecture (checked when given)");
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
    if (!arch.empty() && arch != sh->arch)
        fail_usage("--arch: shape {} is architecture {}, found '{}'", sh->name, sh->arch, arch);
    const auto wt = type_from_name(type_name_s);
    if (!wt || !can_quantize(*wt))
        fail_usage("--type: expected one of f32, f16, bf16, q8_0, q4_0, found '{}'", type_name_s);
    const int n_layers = layers > 0 ? layers : sh->n_layers;

    auto v = GgufReader::open(vocab);
    GgufWriter w;
    w.set_string("general.architecture", sh->arch);
    w.set_string("general.name", fmt::format("jitllm synth {} {} seed {}", sh->name, type_name_s, seed));
    write_keys(w, *sh, n_layers);
    const int64_t n_vocab = copy_tokenizer(w, *v, vocab, sh->n_vocab);
    w.set_u32(std::string(sh->arch) + ".vocab_size", uint32_t(n_vocab));
    add_tensors(w, *sh, *wt, n_layers, n_vocab, seed, threads);
    w.write(out);
    std::fprintf(stderr, "[jitllm] wrote %s (%s, %s, %d layers, vocab %lld)\n", out.c_str(), sh->name,
                 type_name_s.c_str(), n_layers, (long long)n_vocab);
    return 0;
}

}  // namespace jitllm::cli
