// mistral3's mixture-of-experts form (expert_count > 0): the keys give the experts (their width
// feed_forward_length unless expert_feed_forward_length says otherwise), and a file whose experts are
// all copies of a dense mistral3 file's FFN computes that file's logits: the chosen experts' weights
// are renormalised to sum 1, whatever the router picks. No reference logits of the MoE form exist
// in ../shared/golden; the dense file's logits are themselves checked against llama.cpp there.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu_logits.h"
#include "tiny_arch_model.h"

namespace jitllm {
namespace {

test::TinySpec dense_spec() {
    test::TinySpec s;
    s.arch = "mistral3";
    s.head_dim = 32;
    s.ff = 96;
    s.rope_base = 1e6f;
    return s;
}

// The dense file again with each layer's FFN as n_expert identical experts and a router of
// deterministic weights; expert_ff > 0 also writes expert_feed_forward_length.
GgufWriter as_moe(const GgufReader& dense, int n_expert, int used, int expert_ff = 0) {
    GgufWriter w;
    for (const auto& kv : dense.kvs()) w.set(kv.key, kv.value);
    w.set_u32("mistral3.expert_count", uint32_t(n_expert));
    w.set_u32("mistral3.expert_used_count", uint32_t(used));
    if (expert_ff > 0) w.set_u32("mistral3.expert_feed_forward_length", uint32_t(expert_ff));
    for (const auto& t : dense.tensors()) {
        const auto dot = t.name.rfind(".weight");
        const std::string base = dot == std::string::npos ? t.name : t.name.substr(0, dot);
        const bool ffn = base.size() > 8 && (base.ends_with(".ffn_gate") || base.ends_with(".ffn_up") || base.ends_with(".ffn_down"));
        if (!ffn) {
            w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
            continue;
        }
        std::vector<uint8_t> stacked;
        for (int e = 0; e < n_expert; ++e) stacked.insert(stacked.end(), t.data, t.data + t.n_bytes);
        w.add_tensor(base + "_exps.weight", t.type, {t.dims[0], t.dims[1], uint64_t(n_expert)}, std::move(stacked));
        if (base.ends_with(".ffn_gate")) {  // the router, once a layer: [dim, n_expert] F32
            const uint64_t dim = t.dims[0];
            std::vector<float> r(dim * uint64_t(n_expert));
            for (size_t k = 0; k < r.size(); ++k) r[k] = 0.2f * std::sin(0.37f * float(k) + 1.0f);
            std::vector<uint8_t> bytes(r.size() * 4);
            std::memcpy(bytes.data(), r.data(), bytes.size());
            w.add_tensor(base.substr(0, base.size() - 4) + "gate_inp.weight", GgmlType::F32, {dim, uint64_t(n_expert)},
                         std::move(bytes));
        }
    }
    return w;
}

TEST(Mistral3Moe, keys_give_the_experts_and_their_width) {
    const auto dense = test::tiny_reader(test::tiny_model(dense_spec()));
    auto m = load_model(test::tiny_reader(as_moe(*dense, 4, 2)));
    EXPECT_TRUE(m->config.moe());
    EXPECT_EQ(m->config.n_expert, 4);
    EXPECT_EQ(m->config.n_expert_used, 2);
    EXPECT_EQ(m->config.expert_ff, 96);  // feed_forward_length
    EXPECT_TRUE(m->config.expert_weights_norm);
    EXPECT_EQ(m->config.shared_expert_ff, 0);
    // expert_count 0: the dense form
    GgufWriter zero = test::tiny_model(dense_spec());
    zero.set_u32("mistral3.expert_count", 0);
    EXPECT_FALSE(load_model(test::tiny_reader(zero))->config.moe());
    // more used than there are, or an expert width the stacked tensors do not have: refused
    EXPECT_NE(test::load_error(as_moe(*dense, 4, 5)).find("expert_used_count"), std::string::npos);
    EXPECT_NE(test::load_error(as_moe(*dense, 4, 2, 64)), "");
}

TEST(Mistral3Moe, identical_experts_give_the_dense_logits) {
    const auto dense_w = test::tiny_model(dense_spec());
    const auto dense = test::tiny_reader(dense_w);
    auto dm = load_model(test::tiny_reader(dense_w));
    const std::vector<int32_t> ids = {1, 7, 3, 19, 4, 11, 25, 2};
    const auto want = test::cpu_logits(*dm, 64, ids);
    for (auto [ne, used] : {std::pair{4, 2}, std::pair{8, 3}, std::pair{2, 1}}) {
        auto mm = load_model(test::tiny_reader(as_moe(*dense, ne, used)));
        const auto got = test::cpu_logits(*mm, 64, ids);
        ASSERT_EQ(got.size(), want.size());
        double worst = 0;
        for (size_t p = 0; p < got.size(); ++p)
            for (size_t v = 0; v < got[p].size(); ++v) worst = std::max(worst, double(std::fabs(got[p][v] - want[p][v])));
        EXPECT_LT(worst, 1e-4) << ne << " experts, " << used << " used";
    }
}

}  // namespace
}  // namespace jitllm
