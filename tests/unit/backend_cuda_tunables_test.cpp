// --tune KEY=VALUE (backends/cuda/lowering/tunables.h): each kind of value lands in its option, the
// listed defaults are the options' defaults, and bad keys or values are refused with a sentence.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "backends/cuda/lowering/tunables.h"
#include "core/error.h"

namespace jitllm {
namespace {

ScheduleOptions tuned(std::initializer_list<const char*> kvs) {
    ScheduleOptions o;
    for (const char* kv : kvs) tune_apply(o, kv);
    return o;
}

// the usage error tune_apply raises for `kv` ("" when it accepts it)
std::string refusal(const std::string& kv) {
    ScheduleOptions o;
    try {
        tune_apply(o, kv);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), Error::Kind::Usage);
        return e.what();
    }
    return "";
}

TEST(Tunables, each_kind_of_value_lands_in_its_option) {
    const ScheduleOptions o = tuned({"gemv.block=512", "gemv.rows=3", "attn.pipe=0", "gemv.x_regs=off",
                                     "gemv.q4_shift=on", "kv.l2_prefetch=last", "gemv.norm_early=on",
                                     "attn.tma_cluster=off", "gemv.grid.attn_output=76", "attn.xq=off"});
    EXPECT_EQ(o.gemv_block, 512);
    EXPECT_EQ(o.gemv_rows, 3);
    EXPECT_EQ(o.attn_pipe, 0);
    EXPECT_FALSE(o.gemv_x_regs);
    EXPECT_TRUE(o.gemv_q4_shift);
    EXPECT_EQ(o.kv_l2_prefetch, 2);
    EXPECT_EQ(o.gemv_norm_early, 1);
    EXPECT_EQ(o.attn_tma_cluster, 0);
    ASSERT_EQ(o.gemv_grid_for.count("attn_output"), 1u);
    EXPECT_EQ(o.gemv_grid_for.at("attn_output"), 76);
    EXPECT_FALSE(o.attn_xq);
    // "auto" where a key has an automatic choice, and the last value of a key wins
    const ScheduleOptions a = tuned({"gemv.block=256", "gemv.block=auto", "attn.pipe=auto", "attn.carveout=auto"});
    EXPECT_EQ(a.gemv_block, 0);
    EXPECT_EQ(a.attn_pipe, -1);
    EXPECT_EQ(a.attn_carveout, -2);
}

// Applying the listed default of a key to fresh options changes nothing: the list tells the truth.
TEST(Tunables, listed_defaults_are_the_options_defaults) {
    const std::string list = tunables_list();
    for (const Tunable& t : tunables()) {
        EXPECT_NE(list.find(t.key), std::string::npos) << t.key;
        if (std::holds_alternative<std::map<std::string, int> ScheduleOptions::*>(t.field)) continue;  // per kind
        const ScheduleOptions before;
        ScheduleOptions after;
        tune_apply(after, std::string(t.key) + "=" + t.dflt);
        if (auto* f = std::get_if<int ScheduleOptions::*>(&t.field)) {
            EXPECT_EQ(before.**f, after.**f) << t.key;
        }
        if (auto* f = std::get_if<bool ScheduleOptions::*>(&t.field)) {
            EXPECT_EQ(before.**f, after.**f) << t.key;
        }
    }
}

TEST(Tunables, bad_keys_and_values_are_refused_with_what_they_expect) {
    EXPECT_EQ(refusal("gemv.block=128"), "");
    EXPECT_EQ(refusal("gemv.block"), "tune: expected KEY=VALUE (jitllm plan --list-tunables lists the keys), found 'gemv.block'");
    EXPECT_EQ(refusal("gemv.blok=256"),
              "tune gemv.blok: unknown key; close: gemv.block (jitllm plan --list-tunables lists them all)");
    EXPECT_EQ(refusal("gemv.block=300"), "tune gemv.block: expected one of 128, 256, 512, 1024 or auto, found '300'");
    EXPECT_EQ(refusal("gemv.block=big"), "tune gemv.block: expected one of 128, 256, 512, 1024 or auto, found 'big'");
    EXPECT_EQ(refusal("gemv.rows=9"), "tune gemv.rows: expected an integer from 1 to 8 or auto, found '9'");
    EXPECT_EQ(refusal("gemv.xq_lag=auto"), "tune gemv.xq_lag: expected an integer from 1 to 8, found 'auto'");
    EXPECT_EQ(refusal("gemv.x_regs=yes"), "tune gemv.x_regs: expected off or on, found 'yes'");
    EXPECT_EQ(refusal("gemv.norm_early=1"), "tune gemv.norm_early: expected off or on or auto, found '1'");
    EXPECT_EQ(refusal("gemv.grid.attn_out=76"),
              "tune gemv.grid.attn_out: expected a task kind after 'gemv.grid.' (e.g. attn_output, ffn_down), found "
              "'attn_out'");
    EXPECT_EQ(refusal("gemv.grid.ffn_down=0"), "tune gemv.grid.ffn_down: expected an integer from 1 to 999, found '0'");
}

}  // namespace
}  // namespace jitllm
