// Host side of gemm.cu: defines, geometry, bytes, flops (see gemm_variant.h and the kernel's
// header comment, which this mirrors).
#include "backends/cuda/gemm_variant.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "quant/quant.h"

namespace jitllm {
namespace {

std::string upper_type(GgmlType t) {
    std::string n = type_name(t);
    for (auto& c : n) c = char(std::toupper(static_cast<unsigned char>(c)));
    return n;  // F32 F16 BF16 Q8_0 ... Q4_K
}

std::string float_literal(float f) {
    std::string s = fmt::format("{:.9g}", f);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s + "f";
}

bool gemm_type_ok(GgmlType t) {
    switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0:
    case GgmlType::Q4_0: case GgmlType::Q4_1: case GgmlType::Q5_0: case GgmlType::Q5_1:
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
        return true;
    default:
        return false;
    }
}

int tile_m(const GemmSpec& s) {
    if (s.mma == 3) return s.bm > 0 ? s.bm : 32;
    return s.mma == 2 ? 128 : s.bm > 0 ? s.bm : s.mma ? 128 : 64;
}
int tile_n(const GemmSpec& s) { return s.bn > 0 ? s.bn : s.mma == 3 ? 64 : s.mma ? 128 : 64; }
int stages(const GemmSpec& s) { return s.stages > 0 ? s.stages : 4; }
int warps_k(const GemmSpec& s) { return s.warps_k > 0 ? s.warps_k : 2; }
bool i8_type(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }
// weight-row tiles of the grid's y dimension
int n_tiles(const GemmSpec& s) { return (gemm_weight_rows(s) + tile_n(s) - 1) / tile_n(s); }
bool async_w(const GemmSpec& s) { return s.wtype == GgmlType::F16 || s.wtype == GgmlType::BF16; }
// MMA=2 copies 32-element-block quants through a raw shared-memory ring (gemm_wgmma.cuh G2_RAW)
bool raw_ring(const GemmSpec& s) {
    const GgmlType t = s.wtype;
    return (t == GgmlType::Q8_0 || t == GgmlType::Q4_0 || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 ||
            t == GgmlType::Q5_1) && s.cols % 64 == 0 && !s.wsplit;
}

}  // namespace

bool gemm_type_supported(GgmlType t) { return gemm_type_ok(t); }

int gemm_producers(const GemmSpec& s) {
    if (s.mma != 2) return 0;
    if (s.producers > 0) return s.producers;
    return !async_w(s) && !raw_ring(s) && tile_n(s) <= 128 ? 2 : 1;
}

int gemm_out_rows(const GemmSpec& s) {
    if (s.epi == 2) return s.rows[0];
    int n = 0;
    for (int i = 0; i < s.n_mat; ++i) n += s.rows[i];
    return n;
}

int gemm_weight_rows(const GemmSpec& s) {
    if (s.epi == 2) return 2 * s.rows[0];
    return gemm_out_rows(s);
}

Variant gemm_variant(const GemmSpec& s, const std::string& symbol) {
    if (!gemm_type_ok(s.wtype)) fail("gemm: weight type {} is not supported", type_name(s.wtype));
    const int blk = int(type_traits(s.wtype).block_size);
    if (s.cols <= 0 || s.cols % 32 != 0 || s.cols % blk != 0)
        fail("gemm: cols {} must be a positive multiple of 32 and of the {} block ({})", s.cols, type_name(s.wtype), blk);
    if (s.n_mat < 1 || s.n_mat > 3) fail("gemm: n_mat {} not in 1..3", s.n_mat);
    if (s.epi < 0 || s.epi > 3) fail("gemm: epi {} not in 0..3", s.epi);
    if (s.epi == 1 && s.n_mat != 1) fail("gemm: epi 1 (residual) takes one matrix");
    if (s.epi == 2 && s.n_mat > 2) fail("gemm: epi 2 (swiglu) takes 1 or 2 matrices");
    if (s.epi == 2 && s.n_mat == 1 && s.up_offset_rows < s.rows[0]) fail("gemm: epi 2 with one matrix needs up_offset_rows >= rows[0]");
    if (s.mma < 0 || s.mma > 3) fail("gemm: mma {} not in 0..3", s.mma);
    if (s.mma == 3) {
        if (!i8_type(s.wtype) || !s.wsplit)
            fail("gemm: mma 3 takes split-layout Q4_0 / Q8_0 weights, not {}{}", type_name(s.wtype),
                 s.wsplit ? "" : " in GGUF blocks");
        if (s.grouped || s.split_k || s.x_f16) fail("gemm: mma 3 is neither grouped, split-K nor x_f16");
        const int bm = tile_m(s), bn = tile_n(s), wk = warps_k(s);
        if (bm < 8 || bm > 64 || bm % 8 != 0) fail("gemm: mma 3 tile rows {} not a multiple of 8 in 8..64", bm);
        if (bn != 16 && bn != 32 && bn != 64 && bn != 128) fail("gemm: mma 3 bn {} not 16/32/64/128", bn);
        if (wk != 1 && wk != 2 && wk != 4 && wk != 8) fail("gemm: mma 3 warps_k {} not 1/2/4/8", wk);
        if (bn / 16 * wk > 32) fail("gemm: mma 3 block of {} warps (bn / 16 x warps_k) above 32", bn / 16 * wk);
    }
    if (s.wsplit && (!split_layout_type(s.wtype) || s.cols % 256 != 0))
        fail("gemm: the split layout takes Q4_0/Q8_0 rows of a multiple of 256, not {} x {}", type_name(s.wtype), s.cols);
    if (s.x_f16 && s.mma != 2) fail("gemm: x_f16 needs mma 2");
    if (s.grouped < 0 || s.grouped > 2) fail("gemm: grouped {} not in 0..2", s.grouped);
    if (s.grouped && (s.mma == 2 || s.has_bias || !(s.epi == 0 || (s.epi == 2 && s.n_mat == 2)) ||
                      s.group_k < 1 || s.groups < 1))
        fail("gemm: grouped takes mma 0 / 1, no bias, epi 0 or epi 2 with two matrices, group_k and groups >= 1");
    if (s.split_k && (s.mma != 2 || s.grouped)) fail("gemm: split_k takes mma 2, not grouped");
    if (s.mma == 2) {
        if (s.wtype == GgmlType::F32) fail("gemm: mma 2 (wgmma) takes F16/BF16 or quantized weights, not F32");
        if (!async_w(s) && !s.x_f16)
            fail("gemm: mma 2 with {} weights needs x_f16 (16-bit activations)", type_name(s.wtype));
        if (s.bm > 0 && s.bm != 128) fail("gemm: mma 2 tile rows must be 128, not {}", s.bm);
        if (s.bn > 0 && s.bn != 64 && s.bn != 128 && s.bn != 256) fail("gemm: mma 2 bn {} not 64/128/256", s.bn);
    }
    Variant v("cuda/gemm.cu", symbol);
    v.set("WTYPE", upper_type(s.wtype)).set("COLS", s.cols).set("N_MAT", s.n_mat);
    v.set("ROWS0", s.rows[0]);
    if (s.n_mat > 1) v.set("ROWS1", s.rows[1]);
    if (s.n_mat > 2) v.set("ROWS2", s.rows[2]);
    v.set("HAS_BIAS", int(s.has_bias)).set("EPI", s.epi).set("MMA", s.mma);
    if (s.epi == 1) v.set("RES_SCALE", float_literal(s.res_scale));
    if (s.epi == 3) v.set("OUT_SCALE", float_literal(s.out_scale));
    if (s.epi == 2 && s.n_mat == 1) v.set("UP_OFFSET_ROWS", s.up_offset_rows);
    if (s.mma == 3) {
        v.set("BM", tile_m(s)).set("WARPS_N", tile_n(s) / 16).set("WARPS_K", warps_k(s));
    } else {
        if (s.bm > 0 && s.mma != 2) v.set("BM", s.bm);
        if (s.bn > 0) v.set("BN", s.bn);
    }
    if (s.mma && s.stages > 0) v.set("STAGES", s.stages);
    if (s.x_f16) v.set("X_F16", 1);
    if (s.wsplit) v.set("WSPLIT", 1);
    if (s.grouped) v.set("GROUPED", s.grouped).set("GROUP_K", s.group_k);
    if (s.split_k) v.set("SPLIT_K", 1);
    if (s.mma == 2) {
        const int pw = gemm_producers(s);
        if (pw < 1 || pw > 2) fail("gemm: mma 2 takes 1 or 2 producer warpgroups, not {}", pw);
        if (pw == 2 && tile_n(s) > 128) fail("gemm: 2 producer warpgroups need bn <= 128 (registers), not {}", tile_n(s));
        if (pw != 1) v.set("G2_PW", pw);
    }
    v.requires_arch_suffix_a = s.mma == 2;
    return v;
}

unsigned gemm_smem_bytes(const GemmSpec& s) {
    const int bm = tile_m(s), bn = tile_n(s), bk = 32;
    if (!s.mma) return unsigned(2 * bk * ((bm + 4) + (bn + 4)) * 4);
    const int st = stages(s);
    if (s.mma == 3) return gemm_i8_smem_rows(s, bm);
    if (s.mma == 2) {
        unsigned b = unsigned(1024 + st * (bm + bn) * 128 + 16 * st);
        if (raw_ring(s)) b += 16u + 4u * unsigned(bn) * 2u * unsigned(type_traits(s.wtype).type_size);  // G2_RS raw K steps
        return b;
    }
    const int w_slots = async_w(s) ? st : 2;
    return unsigned(st * bm * bk * 4 + 2 * bm * bk * 2 + w_slots * bn * bk * 2);
}

unsigned gemm_i8_smem_rows(const GemmSpec& s, int m) {
    // gemm_i8.cuh: the ring of STAGES x (the weight rows, the step's activation rows in n tiles),
    // reused at the end for the K shares' sums (4 floats a thread per n tile)
    const bool q4 = s.wtype == GgmlType::Q4_0;
    const int rows8 = (std::min(std::max(m, 1), tile_m(s)) + 7) / 8 * 8;
    const unsigned ring = unsigned(stages(s) * (tile_n(s) * (q4 ? 144 : 288) + rows8 * (q4 ? 272 : 288)));
    const unsigned red = unsigned((warps_k(s) - 1) * (tile_n(s) / 16) * 32 * (rows8 / 2) * 4);
    return std::max(ring, red);
}

namespace {
int split_tiles(const GemmSpec& s, int m) { return (std::max(m, 1) + tile_m(s) - 1) / tile_m(s) * n_tiles(s); }
}  // namespace

int gemm_k_splits(const GemmSpec& s, int m, int sm_count, int force) {
    if (!s.split_k) return 1;
    const int tiles = split_tiles(s, m);
    if (tiles >= sm_count) return 1;
    const int nk = (s.cols + 63) / 64;
    int z = force > 0 ? force : sm_count / tiles;
    z = std::max(1, std::min(z, nk / 8));
    const int per = (nk + z - 1) / z;
    return (nk + per - 1) / per;  // every split non-empty
}

uint64_t gemm_split_ws_floats(const GemmSpec& s, int m, int splits) {
    return uint64_t(split_tiles(s, m)) * uint64_t(splits) * 256u * uint64_t(tile_n(s) / 2);  // 256 consumer threads
}

int gemm_split_counters(const GemmSpec& s, int m) { return split_tiles(s, m); }

int gemm_group_tiles(const GemmSpec& s, int m) {
    const int64_t entries = int64_t(std::max(m, 1)) * s.group_k;
    return int((entries + tile_m(s) - 1) / tile_m(s) + std::min<int64_t>(s.groups, entries));
}

GemmLaunch gemm_launch(const GemmSpec& s, int m) {
    const int bm = tile_m(s);
    GemmLaunch l;
    const int mt = s.grouped ? gemm_group_tiles(s, m) : (std::max(m, 1) + bm - 1) / bm;
    l.grid = Dim3(unsigned(mt), unsigned(n_tiles(s)));
    l.block = Dim3(s.mma == 3   ? 32u * unsigned(tile_n(s) / 16 * warps_k(s))
                   : s.mma == 2 ? 128u * unsigned(2 + gemm_producers(s))
                                : 256u);
    l.smem = gemm_smem_bytes(s);
    return l;
}

uint64_t gemm_bytes(const GemmSpec& s, int m) {
    const uint64_t out = uint64_t(gemm_out_rows(s));
    uint64_t b = uint64_t(gemm_weight_rows(s)) * row_bytes(s.wtype, uint64_t(s.cols));
    if (s.grouped) {
        b *= uint64_t(s.groups);
        m *= s.group_k;
    }
    b += (s.mma == 3 ? gemm_xq8_row_bytes(s.cols) : (s.x_f16 ? 2ull : 4ull) * uint64_t(s.cols)) * uint64_t(m) +
         4ull * uint64_t(m) * out;
    if (s.epi == 1) b += 4ull * uint64_t(m) * out;
    if (s.has_bias) b += 4ull * uint64_t(gemm_weight_rows(s));
    return b;
}

uint64_t gemm_flops(const GemmSpec& s, int m) {
    if (s.grouped) m *= s.group_k;
    return 2ull * uint64_t(m) * uint64_t(s.cols) * uint64_t(gemm_weight_rows(s));
}

bool gemm_mma_supported(GgmlType wtype, int sm, std::string* why, int mma) {
    if (!gemm_type_ok(wtype)) {
        if (why) *why = fmt::format("weight type {} has no gemm kernel", type_name(wtype));
        return false;
    }
    if (mma == 3) {
        if (!i8_type(wtype)) {
            if (why) *why = fmt::format("mma 3 (integer tensor cores) takes Q4_0 / Q8_0 weights, not {}", type_name(wtype));
            return false;
        }
        if (sm < 80) {
            if (why) *why = fmt::format("compute capability {}.{} < 8.0: no mma.sync m16n8k32 s8", sm / 10, sm % 10);
            return false;
        }
        if (why) why->clear();
        return true;
    }
    if (mma == 2) {
        if (wtype == GgmlType::F32) {
            if (why) *why = "mma 2 (wgmma) takes 16-bit or quantized weights; F32 stays on mma 1 / SIMT";
            return false;
        }
        if (sm != 90) {
            if (why) *why = fmt::format("compute capability {}.{}: wgmma is sm_90a only", sm / 10, sm % 10);
            return false;
        }
        if (why) why->clear();
        return true;
    }
    if (sm < 80) {
        if (why) *why = fmt::format("compute capability {}.{} < 8.0: no mma.sync m16n8k16 with f32 accumulation of bf16/f16 (use the SIMT sibling)", sm / 10, sm % 10);
        return false;
    }
    if (why) why->clear();
    return true;
}

int gemm_mma_level(GgmlType wtype, int sm) {
    // level 2 where it beats mma.sync on the H200 (Q8_0 1.2-1.3x, Q4_0 1.4-1.6x at M=512 with the
    // raw smem ring); the other quantized types compile and pass on wgmma but are unmeasured
    // (K-quants: register-staged producer, slower than mma.sync for Q8_0/Q4_0 in that form)
    const bool wg = wtype == GgmlType::F16 || wtype == GgmlType::BF16 || wtype == GgmlType::Q8_0 || wtype == GgmlType::Q4_0;
    if (wg && gemm_mma_supported(wtype, sm, nullptr, 2)) return 2;
    return gemm_mma_supported(wtype, sm, nullptr, 1) ? 1 : 0;
}

}  // namespace jitllm
