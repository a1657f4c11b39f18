// Lowering of attention: decode's split-KV register kernel, tensor-map kernel and onepass; the batch
// phase's causal attention (tensor-core tiles or a block per row).
#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <cmath>

#include "backends/cuda/gemm_variant.h"
#include "core/error.h"
#include "quant/quant.h"

namespace jitllm::lowering {

void Lowering::tma_attention(size_t i, const Task& a) {
    const int hd = c_.head_dim;
    // (chunk and slots checked by the gate: attn.kv=ld where they do not fit, forcing tma refused)
    const int tp = o_.attn_chunk > 0 ? o_.attn_chunk : 128;
    const int stages = tma_stages(o_);
    const int smem = tma_smem(c_, tp, stages);
    // the blocks shared memory allows fill the SMs once, or three quarters of them before an 8-bit or
    // wider attn_output gemv (as the register kernel: its blocks keep SMs to land on)
    const int per_sm = std::max(1, std::max(1, d_.max_shared_per_sm) / (smem + 2048));
    const int fill = std::max(1, per_sm * d_.sm_count * (wide_attn_output_after(i) ? 3 : 4) / 4 / c_.n_kv_heads);
    int n_splits = std::max(1, std::min(o_.attn_splits > 0 ? o_.attn_splits : fill, (p_.n_ctx + tp - 1) / tp));
    // the merge of a kv head's splits: one thread-block cluster (CLUSTER: the states through distributed
    // shared memory after a cluster barrier) or the ticket (scratch, a fence, an atomic, the last block's
    // L2 round trips: ~5 us a layer after the last tile at depth 4096, the trace). By default
    // (attn.tma_cluster=auto) a cluster where the device's GPCs hold all kv heads' clusters at once
    // (DeviceInfo::clusters_1pm, probed on the device: unknown offline, then the ticket): the largest
    // such size up to the splits wanted, if at least half of them (docs/performance.md)
    bool cluster = o_.attn_tma_cluster == 1 && n_splits > 1;
    if (o_.attn_tma_cluster < 0 && n_splits > 1) {
        int best = 0;
        for (int k = 2; k <= std::min(n_splits, 16); ++k)
            if (d_.clusters_1pm[size_t(k)] >= c_.n_kv_heads) best = k;
        if (o_.attn_splits > 0 ? best == n_splits : 2 * best >= n_splits) {
            n_splits = best;
            cluster = true;
        }
    }
    Variant v("cuda/attention_decode_tma.cu", "");
    v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
        .set("SCALE", fstr(a.scale)).set("N_SPLITS", n_splits).set("WARPS", tp / 16).set("STAGES", stages);
    if (windowed()) v.set("WINDOW", c_.sliding_window);
    if (cluster && n_splits > 16)
        fail_usage("attn.tma_cluster=on with {} splits: a cluster holds at most 16 blocks (attn.splits)", n_splits);
    if (cluster) v.set("CLUSTER", 1);
    auto& k = add({i}, "split_kv_tma_f16", v);
    if (cluster) k.cluster = Dim3(1, unsigned(n_splits));
    k.grid = Dim3(unsigned(c_.n_kv_heads), unsigned(n_splits));
    k.block = Dim3(unsigned(2 * tp));
    k.smem = unsigned(smem);
    // the full carveout (attn.carveout: another), as the bulk gemvs around it
    k.carveout = o_.attn_carveout >= -1 ? o_.attn_carveout : 100;
    JITLLM_CHECK(s_.kv_map_rows == 0 || s_.kv_map_rows == tp, "one tensor-map box height per schedule");
    s_.kv_map_rows = tp;
    s_.scratch["attn_kv_maps"] = std::max<size_t>(s_.scratch["attn_kv_maps"], size_t(c_.n_layers) * 256);
    KArg maps;
    maps.kind = KArg::Kind::KvMaps;
    maps.layer = a.layer;
    k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), maps, slot(Slot::Pos), slot(Slot::Att), scratch("attn_split"),
              scratch("attn_tickets"), null()};  // xq: gemv.xq=producer (attn_xq_link)
    k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4;
    k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * 2;
    split_scratch(n_splits, c_.n_kv_heads);
}

void Lowering::decode_attention(size_t i, const Task& a) {
    if (g_.attn_tma) {
        tma_attention(i, a);
        return;
    }
    const int hd = c_.head_dim;
    const int group = c_.n_heads / c_.n_kv_heads;
    // split: 256 threads, chunks of up to 128 positions (TILE loads of K and of V in flight per
    // thread), so a context of <= 128 positions is one block's single round trip and needs no
    // combine; the N_SPLITS blocks per query-head set fill the SMs once for long contexts.
    // Query heads per block (attn.heads_per_block): one for split, so a kv head's QPG blocks read
    // its positions, the later ones from L2; onepass: all of them.
    const int hpb = o_.attn_heads_per_block > 0 ? o_.attn_heads_per_block : g_.attn_split ? 1 : group;
    if (group % hpb != 0)
        fail_usage("tune attn.heads_per_block: expected a divisor of the {} query heads per kv head, found {}",
                   group, hpb);
    const int hsplit = group / hpb;
    // KV_LOAD: bytes of K (and of V) per thread and position; 8 with a half cache and more than 4
    // heads per block (halves the registers holding q and the output)
    const int kv_bytes = o_.kv_f32 ? 4 : 2;
    const int kv_load = hpb > 4 && kv_bytes == 2 ? 8 : 16;
    // the next chunk loaded before this one is used (attn.pipe; auto: 2 for the split kernel, none
    // beside the cp.async ring)
    const int pipe = !g_.attn_split ? 0 : o_.attn_pipe >= 0 ? o_.attn_pipe : o_.attn_kv_stages > 0 ? 0 : 2;
    int block = 128, tile = hpb > 2 ? 2 : 4, n_splits = 1;
    int ch = 0, per_sm = 1;  // split: positions per chunk, resident blocks per SM
    if (g_.attn_split) {
        block = 256;
        const int vec = kv_load / kv_bytes;
        const int ng = block / (hd / vec);
        // attn.chunk: positions per chunk (TILE = chunk / NG, at most 8)
        const int chunk = o_.attn_chunk > 0 ? o_.attn_chunk : 128;
        tile = std::max(1, std::min(8, chunk / ng));
        if (!g_.norm_warp) tile = std::max(1, std::min(tile, 8192 / (hpb * block)));  // tree: smem
        ch = ng * tile;
        // about two resident blocks per SM for 1-2 heads per block (<= 128 registers), one for more
        per_sm = hpb <= 2 ? 2 : 1;
        // attn.splits: blocks per query-head set along the context, at most one per chunk. Default:
        // the resident blocks fill the SMs once when the attn_output gemv after it has weights
        // narrower than 8 bits, else three quarters of them (~1.5 blocks an SM, so the gemvs before
        // and after it keep SMs to drain and to start their weight streams on)
        const int fill = per_sm * d_.sm_count * (!wide_attn_output_after(i) ? 4 : 3) / 4;
        const int splits = std::max(1, fill / (c_.n_kv_heads * hsplit));
        n_splits = std::max(1, std::min(o_.attn_splits > 0 ? o_.attn_splits : splits, (p_.n_ctx + ch - 1) / ch));
    }
    Variant v("cuda/attention_decode.cu", "");
    v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
        .set("KV_T", s_.kv_type).set("SCALE", fstr(a.scale)).set("ALGO", g_.attn_split ? 2 : 1)
        .set("N_SPLITS", n_splits).set("BLOCK", block)
        .set("REDUCE", int(g_.norm_warp)).set("TILE", tile).set("KV_LOAD", kv_load);
    if (g_.attn_split) v.set("N_CTX", p_.n_ctx);  // bounds the chunk-0 preload
    // attn.vsum=half2: where the transposed reduction runs (TILE a power of two <= lanes per position)
    const int gs = hd / (kv_load / kv_bytes);
    if (g_.attn_vh2 && kv_load == 16 && tile >= 2 && tile <= gs && (tile & (tile - 1)) == 0) v.set("VH2", 1);
    // the ticket merge reads every split's state in one round trip
    if (g_.attn_split && n_splits <= 16) v.set("MERGE1", 1);
    if (windowed()) v.set("WINDOW", c_.sliding_window);
    if (hsplit > 1) v.set("HPB", hpb);
    if (pipe > 0) v.set("PIPE", pipe);
    // attn.kv_stages=N: K/V chunks through an N-deep cp.async ring in shared memory
    int kv_stages = 0;
    if (o_.attn_kv_stages > 0 && g_.attn_split) {
        if (o_.attn_kv_stages < 2 || o_.attn_kv_stages > 4)
            fail_usage("tune attn.kv_stages: expected 2 to 4 for the register kernel, found {}", o_.attn_kv_stages);
        if (d_.cc() < 80)
            fail_usage("tune attn.kv_stages: expected compute capability 8.0+ (cp.async), found {}.{}", d_.cc_major,
                       d_.cc_minor);
        if (o_.attn_pipe > 0) fail_usage("tune attn.kv_stages and attn.pipe: expected one of them, found both");
        if (kv_load != 16)
            fail_usage("tune attn.kv_stages: expected 16-byte K/V loads (at most 4 query heads per block with a "
                       "half cache), found {} heads per block", hpb);
        kv_stages = o_.attn_kv_stages;
        v.set("KV_STAGES", kv_stages);
    }
    // attn.early=kv: each block's first chunk of K/V rows goes out before the PDL wait
    // (attention_decode.cu EARLY_KV), where the kernel is the split one with attn.pipe=2 and no
    // sliding window (others keep their loads)
    if (g_.attn_early && g_.attn_split && !windowed() && pipe == 2 && kv_stages == 0) v.set("EARLY_KV", 1);
    const std::string kvt = o_.kv_f32 ? "f32" : "f16";
    auto& k = add({i}, (g_.attn_split ? "split_kv_" : "onepass_") + kvt, v);
    k.grid = Dim3(unsigned(c_.n_kv_heads * hsplit), unsigned(n_splits));
    k.block = Dim3(unsigned(block));
    // attention_decode.cu KV_STAGES: 2 x TILE 16-byte entries a thread and slot
    if (kv_stages > 0) k.smem = unsigned(kv_stages * 2 * tile * block * 16);
    if (o_.attn_carveout >= -1) k.carveout = o_.attn_carveout;
    k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), slot(Slot::Pos), slot(Slot::Att),
              g_.attn_split ? scratch("attn_split") : null(), null(),
              g_.attn_split ? scratch("attn_tickets") : null(), null(),
              null()};  // xq: gemv.xq=producer (attn_xq_link)
    const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
    k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4;
    k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * kvsz;
    // partial states per split; the last block of each head set combines them (a ticket counter
    // per block x, zeroed at allocation); their traffic is left out of the byte count
    if (g_.attn_split) split_scratch(n_splits, c_.n_kv_heads * hsplit);
}

void Lowering::batch_attention(size_t i, const Task& a) {
    const int hd = c_.head_dim;
    const int group = c_.n_heads / c_.n_kv_heads;
    const uint64_t kvsz = o_.kv_f32 ? 4 : 2;
    const int R = std::max(1, p_.batch_rows);
    if (g_.attn_prefill_mma) {
        // a block per (kv head, tile of br rows): K/V tiles shared by the tile's rows of one
        // sequence; with several sequences (server), their distinct sequences spread over
        // seq_split blocks (grid.z) so one row per sequence keeps one block each
        const int warps = 4, bc = 64;
        const int br = 16 * warps / group;
        const int seq_split = p_.n_seq > 1 ? std::min(br, p_.n_seq) : 1;
        Variant v("cuda/attention_prefill.cu", "");
        v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
            .set("KV_T", s_.kv_type).set("SCALE", fstr(a.scale)).set("N_CTX", p_.n_ctx)
            .set("WARPS", warps).set("BC", bc).set("SEQ_SPLIT", seq_split);
        kv_paged(v);
        if (windowed()) v.set("WINDOW", c_.sliding_window);
        auto& k = add({i}, "flash_mma_f16", v);
        k.grid = Dim3(unsigned(c_.n_kv_heads), unsigned((R + br - 1) / br), unsigned(seq_split));
        k.block = Dim3(unsigned(32 * warps));
        k.smem = unsigned(4 * bc * (2 * hd + 16));
        rows_grid(k, 1, 1, br);
        k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), slot(Slot::Positions), slot(Slot::Att),
                  slot(Slot::Seqs), kv_table(), rows_arg()};
        // q in, out: per row; K/V from L2 once per block of br rows and cached position (DRAM:
        // once per kv head and sequence); flops: QK^T and PV per attended position
        k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4 + 8;
        k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * kvsz / uint64_t(br);
        k.flops_per_pos = 4 * uint64_t(c_.n_heads) * hd;
        return;
    }
    Variant v("cuda/attention_decode.cu", "");
    v.set("N_HEADS", c_.n_heads).set("N_KV_HEADS", c_.n_kv_heads).set("HEAD_DIM", hd)
        .set("KV_T", s_.kv_type).set("SCALE", fstr(a.scale)).set("ALGO", 1).set("N_SPLITS", 1)
        .set("BLOCK", 128).set("REDUCE", int(g_.norm_warp)).set("TILE", group > 2 ? 2 : 4)
        .set("BATCH", 1).set("N_CTX", p_.n_ctx);
    kv_paged(v);
    if (windowed()) v.set("WINDOW", c_.sliding_window);
    const std::string kvt = o_.kv_f32 ? "f32" : "f16";
    auto& k = add({i}, "causal_rows_" + kvt, v);
    k.grid = Dim3(unsigned(c_.n_kv_heads), 1, unsigned(R));
    k.block = Dim3(128);
    rows_grid(k, 2);
    k.args = {slot(Slot::Q), kcache(a.layer), vcache(a.layer), slot(Slot::Positions), slot(Slot::Att),
              null(), slot(Slot::Seqs), null(), kv_table(), null()};
    k.bytes = 2 * uint64_t(c_.n_heads) * hd * 4;
    k.bytes_per_pos = uint64_t(c_.n_kv_heads) * hd * 2 * kvsz;
    k.flops_per_pos = 4 * uint64_t(c_.n_heads) * hd;
}

}  // namespace jitllm::lowering
