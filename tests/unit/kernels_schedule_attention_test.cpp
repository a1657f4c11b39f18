// The schedule's decode attention, without a GPU: attn.algo (split-KV or one pass), its split count,
// heads per block, pipelines, V sums (attn.vsum), early loads (attn.early), the cp.async ring
// (attn.kv_stages), and attn.kv=tma (the tensor-map kernel, its cluster merge, the second decode
// list below attn.tma_from).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "unit/schedule_fixture.h"

namespace {

using namespace jitllm;
using namespace jitllm::test;

// Split-KV at every context when the kv heads leave SMs idle: n_ctx 128 (bench's -p 0 -n 128)
// once took onepass, 5 % slower on the H200; with 64 kv heads on 132 SMs, onepass.
TEST(ScheduleGates, SplitKvAtShortContextsWhenKvHeadsLeaveSmsIdle) {
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);
    for (int n_ctx : {16, 128, 255, 256, 4096}) {
        SCOPED_TRACE(n_ctx);
        const Plan p = plan_build(*m, PlanOptions{n_ctx, 16, 1});
        const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), ScheduleOptions{});
        EXPECT_EQ(gate(s, "attn.algo"), "split");
        // one block per query head: 2 kv heads x 4 (head dim 64: the register kernel at every context)
        EXPECT_EQ(at(s.decode, "attn").grid.x, 8u);
    }
    DeviceInfo few = DeviceInfo::for_target("sm_90");
    few.sm_count = 8;  // 2 kv heads x 4 >= 8 SMs: one block per kv head fills the device
    const Plan p = plan_build(*m, PlanOptions{128, 16, 1});
    EXPECT_EQ(gate(schedule_build(p, few, ScheduleOptions{}), "attn.algo"), "onepass");
}

// attn.early=kv (default): EARLY_KV on the split SIMT kernel with attn.pipe=2 (the default),
// not on the tensor-core one, the cluster merge or another pipe depth; `wait` turns it off
TEST(ScheduleGates, EarlyKvOnlyOnTheSplitSimtKernelWithPipe2) {
    ScheduleOptions o;
    EXPECT_TRUE(has_define(split_attn(4096, o).variant, "EARLY_KV", "1"));
    EXPECT_TRUE(has_define(split_attn(128, o).variant, "EARLY_KV", "1"));
    ScheduleOptions wait = o;
    wait.force = {{"attn.early", "wait"}};
    EXPECT_FALSE(defines(split_attn(4096, wait).variant, "EARLY_KV"));
    ScheduleOptions pipe1 = o;
    pipe1.attn_pipe = 1;
    EXPECT_FALSE(defines(split_attn(4096, pipe1).variant, "EARLY_KV"));
    ScheduleOptions ring = o;
    ring.attn_kv_stages = 2;
    EXPECT_FALSE(defines(split_attn(4096, ring).variant, "EARLY_KV"));
}

// attn.heads_per_block: decode attention blocks serve fewer query heads of a kv head (grid.x and
// the ticket counters grow by the factor, the kernel gets HPB); a non-divisor is refused. Split
// attention takes one head per block by default, one-pass all of a kv head's heads.
TEST(ScheduleGates, AttentionHeadsPerBlock) {
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);  // 8 query heads over 2 kv heads
    const Plan p = plan_build(*m, PlanOptions{1024, 16, 1});
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    ScheduleOptions o;
    o.force = {{"attn.algo", "split"}, {"attn.kv", "ld"}};
    o.attn_heads_per_block = 4;  // all of a kv head's heads: one block per kv head and split
    const Schedule d = schedule_build(p, h200, o);
    const KernelStep& a = at(d.decode, "attn");
    EXPECT_EQ(a.grid.x, 2u);
    for (const auto& [name, val] : a.variant.defines) EXPECT_NE(name, "HPB");
    EXPECT_EQ(d.scratch.at("attn_tickets"), 2u * 4u);
    o.attn_heads_per_block = 0;  // the default
    const Schedule s = schedule_build(p, h200, o);
    const KernelStep& b = at(s.decode, "attn");
    EXPECT_EQ(b.grid.x, 8u);
    EXPECT_EQ(b.grid.y, a.grid.y);
    EXPECT_TRUE(has_define(b.variant, "HPB", "1"));
    EXPECT_EQ(s.scratch.at("attn_tickets"), 8u * 4u);
    o.force = {{"attn.algo", "onepass"}};
    EXPECT_EQ(at(schedule_build(p, h200, o).decode, "attn").grid.x, 2u);
    o.attn_heads_per_block = 0;
    o.attn_pipe = 1;  // attn.pipe: split only
    EXPECT_FALSE(has_define(at(schedule_build(p, h200, o).decode, "attn").variant, "PIPE", "1"));
    o.force = {{"attn.algo", "split"}};
    EXPECT_TRUE(has_define(at(schedule_build(p, h200, o).decode, "attn").variant, "PIPE", "1"));
    o.attn_pipe = 0;
    o.attn_heads_per_block = 3;
    EXPECT_THROW(schedule_build(p, h200, o), std::exception);
}

// Split-KV attention's split count (grid.y): three quarters of about two resident blocks per SM for
// 1-2 query heads per block, one for more (132 SMs: 198 or 99 blocks over grid.x), at most one per
// chunk of the context; attn.splits overrides. (Earlier: SMs / kv heads whatever the heads
// per block; later the whole fill, 264 or 132 blocks.) Now the three
// quarters only before an attn_output of 8 bits a weight or more; narrower ones take the whole fill.
TEST(ScheduleGates, AttentionSplitsFillTheSms) {
    ASSERT_EQ(DeviceInfo::for_target("sm_90").sm_count, 132);
    ScheduleOptions o;  // 16384 positions: 128 chunks of 128
    for (const auto& [hpb, grid_x, splits] : {std::tuple{1, 8u, 24u}, {2, 4u, 49u}, {4, 2u, 49u}}) {
        o.attn_heads_per_block = hpb;
        const KernelStep a = split_attn(16384, o);
        EXPECT_EQ(a.grid.x, grid_x) << hpb;
        EXPECT_EQ(a.grid.y, splits) << hpb;
        EXPECT_TRUE(has_define(a.variant, "N_SPLITS", std::to_string(splits))) << hpb;
    }
    o.attn_heads_per_block = 0;  // default: one head per block
    EXPECT_EQ(split_attn(16384, o).grid.y, 24u);
    o.attn_splits = 5;
    EXPECT_EQ(split_attn(16384, o).grid.y, 5u);
    o.attn_splits = 0;
    EXPECT_EQ(split_attn(1024, o).grid.y, 8u);  // 8 chunks: at most 8 splits
    // narrower than 8 bits a weight after attention (attn_output in Q4_0): the whole fill,
    // 2 x 132 / 8 blocks; Q8_0 (8.5 bits) keeps three quarters
    EXPECT_EQ(split_attn(16384, o, "sm_90", GgmlType::Q4_0).grid.y, 33u);
    EXPECT_EQ(split_attn(16384, o, "sm_90", GgmlType::Q8_0).grid.y, 24u);
}

// attn.vsum=half2 (the default from sm_80): the SIMT decode kernel's V sums
// in f16 pairs per tile (VH2) where its transposed reduction runs; float below sm_80 (forcing half2
// there is refused), with a float cache and with the tensor-core kernel.
TEST(ScheduleGates, AttentionVSumInHalfPairs) {
    ScheduleOptions o;
    EXPECT_TRUE(has_define(split_attn(16384, o).variant, "VH2", "1"));
    EXPECT_TRUE(has_define(split_attn(16384, o, "sm_80").variant, "VH2", "1"));
    EXPECT_FALSE(has_define(split_attn(16384, o, "sm_75").variant, "VH2", "1"));
    ScheduleOptions f = o;
    f.force["attn.vsum"] = "float";
    EXPECT_FALSE(has_define(split_attn(16384, f).variant, "VH2", "1"));
    f = o;
    f.kv_f32 = true;  // the default steps aside
    EXPECT_FALSE(has_define(split_attn(16384, f).variant, "VH2", "1"));
    o.force["attn.vsum"] = "half2";
    EXPECT_TRUE(has_define(split_attn(16384, o).variant, "VH2", "1"));
    o.attn_chunk = 48;  // TILE 3: the plain reduction, no VH2
    EXPECT_FALSE(has_define(split_attn(16384, o).variant, "VH2", "1"));
    o.attn_chunk = 0;
    EXPECT_THROW(split_attn(16384, o, "sm_75"), std::exception);
    f = o;
    f.kv_f32 = true;
    EXPECT_THROW(split_attn(16384, f), std::exception);
}

// The split-KV kernel's defaults: the next chunk loaded during this one's work (PIPE 2) and the
// ticketed merge in one round trip (MERGE1, at most 16 splits); attn.pipe=0 turns the first off; no
// PIPE beside the cp.async ring.
TEST(ScheduleGates, SplitAttentionPipelinesAndMergesInOneTripByDefault) {
    ScheduleOptions o;
    o.attn_splits = 8;  // (this small model's own count is above 16)
    KernelStep a = split_attn(16384, o);
    EXPECT_TRUE(has_define(a.variant, "PIPE", "2"));
    EXPECT_TRUE(has_define(a.variant, "MERGE1", "1"));
    ScheduleOptions f = o;
    f.attn_pipe = 0;
    a = split_attn(16384, f);
    EXPECT_FALSE(has_define(a.variant, "PIPE", "2"));
    EXPECT_TRUE(has_define(a.variant, "MERGE1", "1"));
    f = o;
    f.attn_kv_stages = 3;
    a = split_attn(16384, f);
    EXPECT_FALSE(has_define(a.variant, "PIPE", "2"));
    EXPECT_TRUE(has_define(a.variant, "KV_STAGES", "3"));
    f = o;
    f.attn_splits = 17;  // more splits than one round trip's loads hold
    EXPECT_FALSE(has_define(split_attn(16384, f).variant, "MERGE1", "1"));
}

// rope.angles=table (default): every rope kernel (decode, batch, and the q/k/v gemv with
// rope.fuse=gemv) reads the host-filled (cos, sin) table instead of computing the angles; one table
// of n_ctx x n_rot/2 pairs. The sibling (rope.angles=computed) has no table.
// attn.kv_stages=N: the split-KV kernel gets KV_STAGES and N x 2 (K, V) x TILE x BLOCK x 16 bytes
// of dynamic shared memory; refused below sm_80, together with attn.pipe, and with 8-byte loads
TEST(ScheduleGates, AttentionKvStagesRing) {
    ScheduleOptions o;
    o.attn_kv_stages = 3;
    const KernelStep a = split_attn(1024, o);  // (once a reference into a temporary)
    EXPECT_TRUE(has_define(a.variant, "KV_STAGES", "3"));
    EXPECT_TRUE(has_define(a.variant, "TILE", "4"));  // 128-position chunks over 32 groups
    EXPECT_EQ(a.smem, 3u * 2 * 4 * 256 * 16);
    EXPECT_THROW(split_attn(1024, o, "sm_75"), std::exception);
    ScheduleOptions both = o;
    both.attn_pipe = 1;
    EXPECT_THROW(split_attn(1024, both), std::exception);
    ScheduleOptions big = o;
    big.attn_heads_per_block = 8;  // 8 heads per block: 8-byte K/V loads
    EXPECT_THROW(split_attn(1024, big), std::exception);
    o.force = {{"attn.algo", "onepass"}};  // one-pass: no ring
    EXPECT_EQ(split_attn(1024, o).smem, 0u);
}

// attn.kv=tma (the default on sm_90 for contexts beyond 256 positions): the tensor-map kernel, a block per (kv head, split)
// of attn.chunk / 16 warps over tiles of that many positions through a ring of attn.kv_stages
// slots (each K and V of the tile: 2 x head_dim x chunk halves), the splits filling the SMs with the
// blocks shared memory allows (at most one a tile); the layer's caches and their tensor maps (256
// bytes a layer in scratch, boxes of the chunk's rows); refused below sm_90, with a f32 cache,
// beside the other attention kernels and with the register kernel's knobs.
TEST(ScheduleGates, TmaAttentionCopiesTilesByTensorMaps) {
    ScheduleOptions o;
    o.force["attn.kv"] = "tma";
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);
    const Plan p = plan_build(*m, PlanOptions{4096, 16, 1});
    o.force.emplace("attn.algo", "split");
    const Schedule s = schedule_build(p, DeviceInfo::for_target("sm_90"), o);
    const KernelStep& a = at(s.decode, "attn");  // 8 query heads, 2 kv heads, head dim 64
    EXPECT_EQ(gate(s, "attn.kv"), "tma");
    EXPECT_EQ(a.variant.source, "cuda/attention_decode_tma.cu");
    EXPECT_EQ(a.symbol, "attn__split_kv_tma_f16");
    EXPECT_EQ(a.block.x, 256u);  // 128-position tiles: 8 warps
    EXPECT_EQ(a.grid.x, 2u);
    EXPECT_EQ(a.smem, 1024u + 2 * 2 * 64 * 128 * 2);  // alignment slack, 2 slots
    // 3 blocks an SM (228 KiB), three quarters of 132 SMs before the F16 attn_output, 2 kv heads:
    // min(148, 4096 / 128)
    EXPECT_EQ(a.grid.y, 32u);
    EXPECT_TRUE(has_define(a.variant, "WARPS", "8"));
    EXPECT_TRUE(has_define(a.variant, "STAGES", "2"));
    EXPECT_EQ(a.carveout, 100);
    ASSERT_EQ(a.args.size(), 9u);  // ..., tickets, xq
    EXPECT_EQ(a.args[1].kind, KArg::Kind::KCache);
    EXPECT_EQ(a.args[2].kind, KArg::Kind::VCache);
    EXPECT_EQ(a.args[3].kind, KArg::Kind::KvMaps);
    EXPECT_EQ(a.args[3].layer, 0);
    EXPECT_EQ(s.kv_map_rows, 128);
    EXPECT_FALSE(a.variant.has("MERGE1"));
    EXPECT_EQ(a.cluster.y, 1u);  // no cluster by default
    ScheduleOptions cl = o;
    cl.attn_tma_cluster = 1;  // attn.tma_cluster=1: a kv head's splits as one cluster
    cl.attn_splits = 12;
    const KernelStep ac = split_attn(4096, cl);
    EXPECT_TRUE(has_define(ac.variant, "CLUSTER", "1"));
    EXPECT_EQ(ac.grid.y, 12u);
    EXPECT_EQ(ac.cluster.x, 1u);
    EXPECT_EQ(ac.cluster.y, 12u);
    EXPECT_FALSE(split_attn(100, cl).variant.has("CLUSTER"));  // one tile: one split, nothing to merge
    cl.attn_splits = 17;
    EXPECT_THROW(split_attn(4096, cl), std::exception);  // at most 16 blocks a cluster
    EXPECT_EQ(s.scratch.at("attn_kv_maps"), size_t(m->config.n_layers) * 256);
    ScheduleOptions small = o;
    small.attn_chunk = 64;
    small.attn_kv_stages = 4;
    const KernelStep b = split_attn(4096, small);
    EXPECT_EQ(b.block.x, 128u);
    EXPECT_EQ(b.smem, 1024u + 4 * 2 * 64 * 64 * 2);
    EXPECT_EQ(split_attn(300, small).grid.y, 5u);  // a split a tile
    EXPECT_EQ(split_attn(300, o).grid.y, 3u);
    for (int bad_chunk : {32, 96}) {
        ScheduleOptions bad = o;
        bad.attn_chunk = bad_chunk;
        EXPECT_THROW(split_attn(4096, bad), std::exception) << bad_chunk;
    }
    ScheduleOptions deep = o;
    deep.attn_kv_stages = 9;
    EXPECT_THROW(split_attn(4096, deep), std::exception);
    ScheduleOptions own = o;
    own.attn_kv_stages = 3;  // the register kernel's
    own.attn_tma_stages = 1;  // attn.tma_stages: this kernel's own
    EXPECT_TRUE(has_define(split_attn(4096, own).variant, "STAGES", "1"));
    EXPECT_EQ(split_attn(4096, own).smem, 1024u + 1 * 2 * 64 * 128 * 2);
    own.attn_tma_stages = 0;
    EXPECT_TRUE(has_define(split_attn(4096, own).variant, "STAGES", "3"));
    EXPECT_THROW(split_attn(4096, o, "sm_80"), std::exception);
    ScheduleOptions f32 = o;
    f32.kv_f32 = true;
    EXPECT_THROW(split_attn(4096, f32), std::exception);
    ScheduleOptions pipe = o;
    pipe.attn_pipe = 2;
    EXPECT_THROW(split_attn(4096, pipe), std::exception);
    // the default on sm_90 beyond 256 positions of context at head dim 128; within them, at head dim
    // 64 and below sm_90, the register kernel, no maps; one ring slot is the tensor-map kernel's alone
    auto m128 = tiny(GgmlType::F16, GgmlType::F16, false, 512, 352, 128);  // 4 query heads, 2 kv heads
    const Plan p128 = plan_build(*m128, PlanOptions{4096, 16, 1});
    EXPECT_EQ(gate(schedule_build(p128, DeviceInfo::for_target("sm_90"), ScheduleOptions{}), "attn.kv"), "tma");
    EXPECT_EQ(at(schedule_build(plan_build(*m128, PlanOptions{257, 16, 1}), DeviceInfo::for_target("sm_90"), ScheduleOptions{})
                     .decode, "attn").variant.source, "cuda/attention_decode_tma.cu");
    EXPECT_EQ(gate(schedule_build(p, DeviceInfo::for_target("sm_90"), ScheduleOptions{}), "attn.kv"), "ld");  // head dim 64
    for (const char* target : {"sm_90", "sm_80"}) {
        const Plan ps = plan_build(*m128, PlanOptions{target == std::string("sm_90") ? 256 : 4096, 16, 1});
        const Schedule d = schedule_build(ps, DeviceInfo::for_target(target), ScheduleOptions{});
        EXPECT_EQ(gate(d, "attn.kv"), "ld") << target;
        EXPECT_EQ(d.kv_map_rows, 0);
        EXPECT_EQ(d.scratch.count("attn_kv_maps"), 0u);
        EXPECT_EQ(at(d.decode, "attn").variant.source, "cuda/attention_decode.cu");
    }
    // a chunk or a ring it cannot take: the register kernel by default, refused when forced (above)
    for (int chunk : {32, 256}) {
        ScheduleOptions c;
        c.attn_chunk = chunk;
        c.attn_kv_stages = chunk == 256 ? 4 : 0;  // 4 x 256 positions at head dim 128: 525312 bytes
        EXPECT_EQ(gate(schedule_build(p128, DeviceInfo::for_target("sm_90"), c), "attn.kv"), "ld") << chunk;
    }
    ScheduleOptions one;
    one.attn_kv_stages = 1;
    one.force["attn.kv"] = "ld";
    EXPECT_THROW(split_attn(4096, one), std::exception);
}

// attn.tma_from=N: with attn.kv=tma, a second decode list for the positions below N, the same
// kernels in the same order (PDL as decode's) except the register kernel's attention; none without
// the tensor-map kernel.
// attn.tma_cluster=auto (default): a kv head's splits as one thread-block cluster where the device's
// probed GPCs hold every kv head's cluster at once (DeviceInfo::clusters_1pm), the largest such size
// up to the splits wanted if at least half of them; unknown (offline targets) or too small: the ticket.
TEST(ScheduleGates, AttnTmaClusterWhereTheDevicesClustersFit) {
    auto m = tiny(GgmlType::F16, GgmlType::F16, false);  // 2 kv heads; 32 splits wanted at n_ctx 4096
    const Plan p = plan_build(*m, PlanOptions{4096, 16, 1});
    ScheduleOptions o;
    o.force["attn.kv"] = "tma";
    o.force.emplace("attn.algo", "split");
    auto attn = [&](const DeviceInfo& d, const ScheduleOptions& so) { return at(schedule_build(p, d, so).decode, "attn"); };
    DeviceInfo d = DeviceInfo::for_target("sm_90");
    EXPECT_FALSE(attn(d, o).variant.has("CLUSTER"));  // unknown: the ticket
    for (int k = 1; k <= 16; ++k) d.clusters_1pm[size_t(k)] = k <= 12 ? 3 : 1;  // 2 kv heads: clusters of up to 12 fit
    EXPECT_FALSE(attn(d, o).variant.has("CLUSTER"));  // 12 of 32 wanted: fewer than half, the ticket
    EXPECT_EQ(attn(d, o).grid.y, 32u);
    ScheduleOptions s16 = o;
    s16.attn_splits = 16;
    const KernelStep a16 = attn(d, s16);  // attn.splits=16: that size does not fit, the ticket
    EXPECT_FALSE(a16.variant.has("CLUSTER"));
    EXPECT_EQ(a16.grid.y, 16u);
    s16.attn_splits = 12;
    EXPECT_TRUE(has_define(attn(d, s16).variant, "CLUSTER", "1"));  // it fits: a cluster
    EXPECT_EQ(attn(d, s16).cluster.y, 12u);
    ScheduleOptions s20 = o;
    s20.attn_splits = 20;  // a split count given: a cluster of that size or the ticket
    EXPECT_FALSE(attn(d, s20).variant.has("CLUSTER"));
    EXPECT_EQ(attn(d, s20).grid.y, 20u);
    DeviceInfo d16 = d;
    for (int k = 1; k <= 16; ++k) d16.clusters_1pm[size_t(k)] = 2;  // clusters of up to 16 fit both kv heads
    EXPECT_TRUE(has_define(attn(d16, o).variant, "CLUSTER", "1"));  // 16 of 32 wanted: a cluster of 16
    EXPECT_EQ(attn(d16, o).grid.y, 16u);
    EXPECT_EQ(attn(d16, o).cluster.y, 16u);
    ScheduleOptions off = o;
    off.attn_tma_cluster = 0;  // attn.tma_cluster=0: the ticket, the splits as wanted
    EXPECT_FALSE(attn(d16, off).variant.has("CLUSTER"));
    EXPECT_EQ(attn(d16, off).grid.y, 32u);
}

TEST(ScheduleGates, AttnTmaFromAddsADecodeListWithTheRegisterKernel) {
    auto m = tiny(GgmlType::F16, GgmlType::F16, false, 512, 352, 128);  // head dim 128: attn.kv=tma by default
    const Plan p = plan_build(*m, PlanOptions{4096, 16, 1});
    const DeviceInfo h200 = DeviceInfo::for_target("sm_90");
    ScheduleOptions o;
    o.attn_tma_from = 512;
    const Schedule s = schedule_build(p, h200, o);
    EXPECT_EQ(s.decode_short_below, 512);
    ASSERT_EQ(s.decode_short.size(), s.decode.size());
    int differ = 0;
    for (size_t i = 0; i < s.decode.size(); ++i) {
        EXPECT_EQ(s.decode_short[i].tasks, s.decode[i].tasks);
        EXPECT_EQ(s.decode_short[i].pdl, s.decode[i].pdl);
        if (s.decode_short[i].symbol != s.decode[i].symbol) {
            ++differ;
            EXPECT_EQ(s.decode[i].variant.source, "cuda/attention_decode_tma.cu");
            EXPECT_EQ(s.decode_short[i].variant.source, "cuda/attention_decode.cu");
        }
    }
    EXPECT_EQ(differ, m->config.n_layers);  // one attention a layer
    // the plan's description names the second list and its replaced kernel
    const std::string described = schedule_describe(p, s, false);
    EXPECT_NE(described.find("positions below 512 (attn.tma_from)"), std::string::npos) << described;
    EXPECT_NE(described.find("attn__split_kv_f16                           instead of attn__split_kv_tma_f16"),
              std::string::npos) << described;
    // both attention variants compile (the JIT list holds them)
    int tma = 0, regs = 0;
    for (const auto& v : schedule_variants(s)) {
        tma += v.source == "cuda/attention_decode_tma.cu";
        regs += v.source == "cuda/attention_decode.cu";
    }
    EXPECT_EQ(tma, 1);
    EXPECT_EQ(regs, 1);
    o.attn_tma_from = 100000;
    EXPECT_EQ(schedule_build(p, h200, o).decode_short_below, 4096);  // at most the context
    // by default (attn.kv=tma not forced) the positions below 768; forced: one list unless asked;
    // attn.tma_from=0: one list
    EXPECT_EQ(schedule_build(p, h200, ScheduleOptions{}).decode_short_below, 768);
    EXPECT_EQ(schedule_build(p, h200, ScheduleOptions{}).decode_short.size(), s.decode.size());
    ScheduleOptions forced;
    forced.force["attn.kv"] = "tma";
    EXPECT_TRUE(schedule_build(p, h200, forced).decode_short.empty());
    forced.attn_tma_from = 100;
    EXPECT_EQ(schedule_build(p, h200, forced).decode_short_below, 100);
    ScheduleOptions off;
    off.attn_tma_from = 0;
    EXPECT_TRUE(schedule_build(p, h200, off).decode_short.empty());
    ScheduleOptions ld = o;
    ld.force["attn.kv"] = "ld";
    const Schedule l = schedule_build(p, h200, ld);
    EXPECT_TRUE(l.decode_short.empty());
    EXPECT_EQ(l.decode_short_below, 0);
}

}  // namespace
