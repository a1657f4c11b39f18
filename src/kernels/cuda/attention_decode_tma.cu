// attention_decode_tma: split-KV decode attention (gate attn.kv=tma, sm_90) whose K/V tiles come
// into a shared-memory ring by tensor-map copies (cp.async.bulk.tensor: one instruction a 64-dim x
// TP-position box, issued by one thread, completed on the slot's mbarrier) and whose dot products
// run on tensor cores (mma.sync m16n8k16, operands by ldmatrix from the 128-byte-swizzled boxes).
//   s_p = (q_h . k_p) * SCALE,  out_h = sum_p softmax(s)_p * v_p,  kv head = h / (N_HEADS/N_KV_HEADS)
// Sibling: attention_decode.cu (the threads' own 16-byte loads into registers, SIMT arithmetic).
//
// Why: at long contexts the register kernel is bound by its per-position instruction chain (without
// its K/V loads it still cost 8.1 us a layer at depth 4096 on the 8B shape, 2026-12-03) and by the
// registers that hold its loads in flight. Here no thread holds a K/V load: a block's first STAGES
// tiles (all of its work at depth 4096 with 16 splits) are requested at its start, before the PDL
// wait, and the arithmetic per 16 positions and warp is 16 ldmatrix + 32 mma for all QPG heads.
// The current position's row (the q/k/v gemv's store, racing with that copy) is loaded after the
// wait by the warp whose rows hold it and written over the copy's row in shared memory.
//
// Work of a block (kv head blockIdx.x, split blockIdx.y): tiles of TP = 16 * WARPS positions
// t = c_lo + y, c_lo + y + N_SPLITS, ... up to the current position's tile (c_lo: the first tile in
// range); warp w takes rows 16w .. 16w + 15 of every tile, with its own running (m, l, O) for the
// group's heads (mma rows g = lane / 4 < QPG):
//   S = Q K^T: A = q (rows = heads, pre-scaled by SCALE * log2 e, rounded to f16; rows 8..15 zero),
//              B = K rows by ldmatrix (no transpose), 2 n-tiles of 8 positions x HEAD_DIM / 16 k-steps
//   softmax:   positions out of range masked, base 2, the row max over the quad's 4 lanes (2 shuffles)
//   O += P V:  A = P (the S accumulators rounded to f16: the m16n8k16 C -> A identity),
//              B = V rows by ldmatrix.trans, HEAD_DIM / 8 n-tiles, one k-step of 16 positions
// The warps' states merge through shared memory (the ring, once drained); one active block writes
// out = O / l, several write (O, m, l) to scratch and the last one (atomic ticket per kv head)
// combines them (common/attn_split.cuh merge_split_states, as attention_decode_staged.cu), or
// (CLUSTER) keep (O, m, l) in their own shared memory and, after a cluster barrier, each block of
// the kv head's cluster combines its share of the group's outputs through distributed shared
// memory (one round trip of ld.shared::cluster), a second barrier keeping every block until the
// last read. A block trace at depth 4096 (8B Q8_0, 12 splits; 2026-12-04, 93adfff): the ticket path's merge ends
// the kernel ~5 us after the last block's tile loop (fence, ticket, two loaded L2 round trips).
//
// Shared memory: 1024 bytes of alignment slack, then STAGES slots of [K box 0 .. NB-1][V box 0 ..
// NB-1], a box = TP rows of 128 bytes (64 halves), 1024-byte aligned, swizzled by the copy engine
// (CU_TENSOR_MAP_SWIZZLE_128B: the 16-byte chunk j of row r sits at chunk j ^ (r % 8)), so the 8 row
// addresses of an ldmatrix matrix hit 8 distinct bank groups.
//
// params:  N_HEADS, N_KV_HEADS, HEAD_DIM (64 | 128), SCALE (float), N_SPLITS, WARPS (4 | 8 | 16: TP =
//          64 | 128 | 256 positions a tile), STAGES (ring slots, 1 .. 8), WINDOW (optional: the
//          last WINDOW positions only), CLUSTER (0 default; 1:
//          attn.tma_cluster, launched as clusters of 1 x N_SPLITS blocks, N_SPLITS <= 16: above 8
//          the non-portable size), PDL, XQ_OUT (0 default; 1: gate gemv.xq=producer): every output
//          also written quantized to Q8_0 blocks at xq in the next gemv's x layout (XQ_PLANES 1: Q4_0's
//          planes), by the warp that writes the group's 32 outputs (attention_decode.cu XQ_OUT)
// launch:  grid (N_KV_HEADS, N_SPLITS), block 32 * WARPS, smem 1024 + STAGES * 2 * HEAD_DIM * TP * 2
// args:    (q, k_cache, v_cache, tmaps, pos_ptr, out, scratch, tickets, xq)   q, out: (N_HEADS, HEAD_DIM)
//          floats; caches: this layer's half [rows][N_KV_HEADS * HEAD_DIM] (the current row read
//          from there); tmaps: the same caches' two CUtensorMaps in global memory (K at +0, V at
//          +128 bytes): 2-D f16, box 64 x TP, 128-byte swizzle, rows past the cache zero filled
//          (cuda_backend.cpp encode_kv_maps); scratch N_HEADS * N_SPLITS * (HEAD_DIM + 4) floats;
//          tickets N_KV_HEADS zeroed counters (left zeroed)
//          PRECOND: 0 <= *pos_ptr < the cache's rows; the position and the rows before it final
//          before the launch (as attention_decode.cu EARLY_KV); the cache's rows past the position
//          finite (zeroed at allocation; later only K/V values are stored)
// bytes:   n_pos * N_KV_HEADS * HEAD_DIM * 4 (whole tiles) + 2 * N_HEADS * HEAD_DIM * 4
//          (+ 2 * N_HEADS * min(N_SPLITS, tiles) * (HEAD_DIM + 4) * 4 with several tiles)
// reference: cpu::attention   test: tests/gpu/kernels_vs_cpu_test.cpp (variants attn-tma*)
#include "common/common.cuh"
#include "common/async_copy.cuh"
#include "common/attn_split.cuh"
#include "common/xq8_group.cuh"  // XQ_OUT

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME attention_decode_tma
#define N_HEADS 32
#define N_KV_HEADS 8
#define HEAD_DIM 128
#define SCALE 0.08838834764831845f
#define N_SPLITS 16
#endif
#ifndef WARPS
#define WARPS 4
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef WINDOW  // sliding window in positions; 0 = attend to the whole cache
#define WINDOW 0
#endif
#ifndef CLUSTER  // 1 (attn.tma_cluster): a kv head's splits are one cluster, merged through DSMEM
#define CLUSTER 0
#endif

#define QPG (N_HEADS / N_KV_HEADS)
#define BLOCK (32 * WARPS)
constexpr int TP = 16 * WARPS;                 // positions a tile (box rows)
constexpr int NB = HEAD_DIM / 64;              // 128-byte boxes a row
constexpr int BOX_B = TP * 128;                // bytes a box
constexpr int SLOT_B = 2 * NB * BOX_B;         // K and V boxes of a tile
constexpr int KSTEPS = HEAD_DIM / 16;          // mma k-steps of q . k
constexpr int DT = HEAD_DIM / 8;               // n-tiles of the output
constexpr int SROW = HEAD_DIM + 4;             // a split's state in scratch: O, m, l (16-byte rows)
constexpr int MROW = HEAD_DIM + 2;             // a warp's state in the block merge: O, m, l

static_assert(N_HEADS % N_KV_HEADS == 0 && QPG <= 8, "GQA: whole groups of at most 8 heads (the mma rows)");
static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "HEAD_DIM: 64 or 128");
static_assert(WARPS == 4 || WARPS == 8 || WARPS == 16, "WARPS: 4, 8 or 16 (box rows <= 256)");
static_assert(STAGES >= 1 && STAGES <= 8, "STAGES: 1 .. 8");
static_assert(WARPS * 8 * MROW * 4 <= STAGES * SLOT_B, "the warps' merge fits the drained ring");
static_assert(!CLUSTER || (N_SPLITS >= 2 && N_SPLITS <= 16), "CLUSTER: 2 .. 16 splits a cluster");

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "attention_decode_tma needs sm_90 (tensor-map copies, mbarrier transaction counts)"
#endif

// One box (64 columns from column x, TP rows from row y) of the tensor map at generic address
// `map` into shared address dst, completing its bytes on `bar`.
__device__ __forceinline__ void tma_box(uint32_t dst, const void* map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}

// the 16-byte chunk `chunk` (0..7) of row `row` of a swizzled box at shared address box
__device__ __forceinline__ uint32_t swz(uint32_t box, int row, int chunk) {
    return box + uint32_t(row) * 128u + (uint32_t((chunk ^ (row & 7))) << 4);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const float* q, const half* k_cache, const half* v_cache, const uint8_t* tmaps, const int* pos_ptr, float* out,
            float* scratch, unsigned* tickets, uint8_t* xq) {
    // output i = v (i: head * HEAD_DIM + dim); XQ_OUT: also into its group's Q8_0 block, by the warp
    // whose 32 lanes hold the group's 32 outputs in this call (every write loop covers whole warps)
    auto put = [&](int i, float v) { store_out_xq8<N_HEADS * HEAD_DIM, XQ_PLANES, XQ_OUT>(out, xq, i, v); };
    JITLLM_DYN_SMEM(uint8_t, dsm);
    __shared__ __align__(8) unsigned long long bars[STAGES];
    __shared__ float wsp[QPG * N_SPLITS], lsp[QPG * N_SPLITS], lsum[QPG];
    __shared__ bool last;
    __shared__ __align__(16) float cst[CLUSTER ? QPG * SROW : 1];  // CLUSTER: this block's state (O, m, l a head)
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    const int kvh = blockIdx.x, y = blockIdx.y, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const int g = lane >> 2, c = lane & 3;  // mma fragment row (head) and column pair
    // the position (PRECOND: final before the launch) and this block's tiles
    const int pos = *pos_ptr;
    const int first_pos = WINDOW > 0 ? max(0, pos + 1 - WINDOW) : 0;  // the first position attended to
    const int c_lo = first_pos / TP, cur = pos / TP, n_tiles = cur - c_lo + 1;
    const int n_active = min(N_SPLITS, n_tiles);  // blocks a kv head (block-uniform)
#if CLUSTER
    // with several active blocks the cluster's inactive ones stay for its two barriers (they hold
    // no state and write no outputs: the active blocks merge, reading ranks below n_active only)
    if (y >= n_active) {
        if (n_active > 1) {
            cluster_barrier();
            cluster_barrier();
        }
        return;
    }
#else
    if (y >= n_active) return;
#endif
    const int my_tiles = (n_tiles - 1 - y) / N_SPLITS + 1;
    const uint32_t ring = (smem_addr(dsm) + 1023u) & ~1023u;
    const uint32_t bar0 = smem_addr(bars);
    const uint8_t* kmap = tmaps;
    const uint8_t* vmap = tmaps + 128;
    auto issue = [&](int i) {  // this block's i-th tile into slot i % STAGES (thread 0)
        const int t = c_lo + y + i * N_SPLITS, st = i % STAGES;
        const uint32_t bar = bar0 + 8u * uint32_t(st), slot = ring + uint32_t(st) * SLOT_B;
        mbar_arrive_expect_tx(bar, SLOT_B);  // boxes past the cache's rows are zero filled and counted
#pragma unroll
        for (int b = 0; b < NB; ++b) {
            tma_box(slot + b * BOX_B, kmap, kvh * HEAD_DIM + 64 * b, t * TP, bar);
            tma_box(slot + (NB + b) * BOX_B, vmap, kvh * HEAD_DIM + 64 * b, t * TP, bar);
        }
    };
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(bar0 + 8u * s, 1);
        mbar_init_fence();
        // the maps were written by a host copy before any launch: acquire them for the tensor proxy
        asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(kmap) : "memory");
        asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(vmap) : "memory");
        // the first tiles before the PDL wait, the current position's too: its row `pos` (the q/k/v
        // gemv's store, racing with this copy) is replaced in shared memory below
        for (int i = 0; i < min(STAGES, my_tiles); ++i) issue(i);
    }
    pdl_wait();
    // the current row's K and V pieces (16 bytes a lane: HEAD_DIM / 8 of K, then of V), loaded by the
    // warp whose rows hold it, in the block whose tiles hold it, written over the copy's row below
    const int i_cur = (cur - c_lo - y) % N_SPLITS == 0 ? (cur - c_lo - y) / N_SPLITS : -1;  // its tile, or none
    const int r_cur = pos - cur * TP;  // its row in that tile
    constexpr int NCH = HEAD_DIM / 8;  // 16-byte pieces a row
    uint4 cur_piece = make_uint4(0u, 0u, 0u, 0u);
    const bool patcher = i_cur >= 0 && w == r_cur / 16;
    if (patcher && lane < 2 * NCH) {
        const half* src = (lane < NCH ? k_cache : v_cache) + (size_t)pos * (N_KV_HEADS * HEAD_DIM) + kvh * HEAD_DIM +
                          8 * (lane % NCH);
        cur_piece = ld_stream16_act(src);
    }
    // q fragments (rows g < QPG: heads kvh * QPG + g), scaled to base 2, f16 pairs
    uint32_t qa0[KSTEPS], qa2[KSTEPS];
    {
        const float qs = SCALE * 1.4426950408889634f;
        const float* qh = q + (size_t)(kvh * QPG + (g < QPG ? g : 0)) * HEAD_DIM + 2 * c;
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk) {
            const float2 lo = *reinterpret_cast<const float2*>(qh + 16 * kk);
            const float2 hi = *reinterpret_cast<const float2*>(qh + 16 * kk + 8);
            qa0[kk] = g < QPG ? pack_16x2<0>(lo.x * qs, lo.y * qs) : 0u;
            qa2[kk] = g < QPG ? pack_16x2<0>(hi.x * qs, hi.y * qs) : 0u;
        }
    }
    __syncthreads();  // the barriers' initialisation before any wait on them
    float o[DT][2];
#pragma unroll
    for (int d = 0; d < DT; ++d) o[d][0] = o[d][1] = 0.0f;
    float m_run = -JL_INF, l_run = 0.0f;  // l_run: this lane's share of its row's sum
    const int r0 = 16 * w;                // this warp's rows in every tile
    for (int i = 0; i < my_tiles; ++i) {
        const int t = c_lo + y + i * N_SPLITS, st = i % STAGES;
        mbar_wait(bar0 + 8u * uint32_t(st), uint32_t(i / STAGES) & 1u);
        const uint32_t kb = ring + uint32_t(st) * SLOT_B, vb = kb + NB * BOX_B;
        if (patcher && i == i_cur) {  // this warp's rows hold the current one: the stored row over the copy's
            if (lane < 2 * NCH) {
                const int j = lane % NCH;
                const uint32_t a = swz((lane < NCH ? kb : vb) + (j / 8) * BOX_B, r_cur, j % 8);
                asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(cur_piece.x), "r"(cur_piece.y),
                             "r"(cur_piece.z), "r"(cur_piece.w) : "memory");
                fence_proxy_async();  // ordered before the slot's next tensor-map copy (a refill)
            }
            __syncwarp();
        }
        // S = Q K^T for 16 positions: n-tile nt = rows r0 + 8 nt .. + 7; an ldmatrix.x4 serves two
        // k-steps (lanes 8j .. 8j + 7 address matrix j: k-step 2 kp + j / 2, dims 8 (j % 2) ..)
        float s[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
        for (int kp = 0; kp < KSTEPS / 2; ++kp) {
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
                const int row = r0 + 8 * nt + (lane & 7);
                const int kk = 2 * kp;  // even: kk and kk + 1 lie in one box
                uint32_t b[4];
                ldsm_x4(b, swz(kb + (kk / 4) * BOX_B, row, 2 * (kk % 4) + (lane >> 3)));
                mma_rows8(s[nt][0], s[nt][1], qa0[kk], qa2[kk], b[0], b[1]);
                mma_rows8(s[nt][0], s[nt][1], qa0[kk + 1], qa2[kk + 1], b[2], b[3]);
            }
        }
        // online softmax (base 2) of row g over these 16 positions; positions out of range masked
        const int p0 = t * TP + r0 + 2 * c;
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                if (p0 + 8 * nt + e > pos || p0 + 8 * nt + e < first_pos) s[nt][e] = -JL_INF;
        float mx = fmaxf(fmaxf(s[0][0], s[0][1]), fmaxf(s[1][0], s[1][1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run, mx);
        const float mu = m_new == -JL_INF ? 0.0f : m_new;  // a row with nothing in range yet
        const float alpha = exp2f(m_run - mu);
        float p[2][2];
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) p[nt][e] = exp2f(s[nt][e] - mu);
        l_run = l_run * alpha + ((p[0][0] + p[0][1]) + (p[1][0] + p[1][1]));
        m_run = m_new;
#pragma unroll
        for (int d = 0; d < DT; ++d) {
            o[d][0] *= alpha;
            o[d][1] *= alpha;
        }
        const uint32_t pa0 = pack_16x2<0>(p[0][0], p[0][1]), pa2 = pack_16x2<0>(p[1][0], p[1][1]);
        // O += P V: an ldmatrix.x4.trans serves two n-tiles (matrix j: rows r0 + 8 (j % 2) .., dims
        // of n-tile 2 dp + j / 2)
#pragma unroll
        for (int dp = 0; dp < DT / 2; ++dp) {
            const int j = lane >> 3, dt = 2 * dp + (j >> 1);
            const int row = r0 + 8 * (j & 1) + (lane & 7);
            uint32_t b[4];
            ldsm_x4_t(b, swz(vb + (dt / 8) * BOX_B, row, dt % 8));
            mma_rows8(o[2 * dp][0], o[2 * dp][1], pa0, pa2, b[0], b[1]);
            mma_rows8(o[2 * dp + 1][0], o[2 * dp + 1][1], pa0, pa2, b[2], b[3]);
        }
        if (i + STAGES < my_tiles) {  // the slot is drained by every warp: its next tile
            __syncthreads();
            if (tid == 0) issue(i + STAGES);
        }
    }
    // the warps' states through shared memory (the ring, drained: every tile was waited for)
    l_run += __shfl_xor_sync(0xffffffffu, l_run, 1);
    l_run += __shfl_xor_sync(0xffffffffu, l_run, 2);
    __syncthreads();
    float* mrg = reinterpret_cast<float*>(dsm + (ring - smem_addr(dsm)));
    if (g < QPG) {
        float* r = mrg + (w * QPG + g) * MROW;
#pragma unroll
        for (int d = 0; d < DT; ++d) *reinterpret_cast<float2*>(r + 8 * d + 2 * c) = make_float2(o[d][0], o[d][1]);
        if (c == 0) {
            r[HEAD_DIM] = m_run;
            r[HEAD_DIM + 1] = l_run;
        }
    }
    __syncthreads();
    // block state of head h: M = max_w m_w (finite: every tile of the block holds a position in
    // range), O = sum_w 2^(m_w - M) O_w, l likewise
    for (int idx = tid; idx < QPG * HEAD_DIM; idx += BLOCK) {
        const int h = idx / HEAD_DIM, d = idx % HEAD_DIM, hq = kvh * QPG + h;
        float M = -JL_INF;
#pragma unroll
        for (int ww = 0; ww < WARPS; ++ww) M = fmaxf(M, mrg[(ww * QPG + h) * MROW + HEAD_DIM]);
        float ov = 0.0f, lv = 0.0f;
#pragma unroll
        for (int ww = 0; ww < WARPS; ++ww) {
            const float* r = mrg + (ww * QPG + h) * MROW;
            const float wt = exp2f(r[HEAD_DIM] - M);  // 0 for a warp with nothing in range
            ov = fmaf(wt, r[d], ov);
            lv = fmaf(wt, r[HEAD_DIM + 1], lv);
        }
        if (n_active > 1) {
            float* sc = CLUSTER ? cst + h * SROW : scratch + ((size_t)hq * N_SPLITS + y) * SROW;
            sc[d] = ov;
            if (d == 0) {
                sc[HEAD_DIM] = M;
                sc[HEAD_DIM + 1] = lv;
            }
        } else {
            put(hq * HEAD_DIM + d, ov / lv);
        }
    }
    if (n_active == 1) return;
#if CLUSTER
    // the cluster (1 x N_SPLITS blocks: rank = split) combines through distributed shared memory:
    // active block r (r < n_active) writes outputs [r * per, (r + 1) * per) of the group's QPG x HEAD_DIM
    cluster_barrier();
    {
        constexpr int ITEMS = QPG * HEAD_DIM;
        const int per = XQ_OUT ? (ITEMS / 32 + n_active - 1) / n_active * 32 : (ITEMS + n_active - 1) / n_active;
        const int rank = cluster_rank();
        for (int j = tid; j < per; j += BLOCK) {
            const int idx = rank * per + j;
            if (idx < ITEMS) {
                const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
                const uint32_t a_o = smem_addr(cst + h * SROW + d), a_m = smem_addr(cst + h * SROW + HEAD_DIM);
                put((kvh * QPG + h) * HEAD_DIM + d,
                    merge_one<N_SPLITS>([&](int sp, int i) { return ld_cluster_f32(i == 0 ? a_o : a_m + 4u * uint32_t(i - 1), sp); },
                                        n_active));
            }
        }
    }
    cluster_barrier();  // every block's shared memory stays until the last read
    (void)tickets;
    (void)last;
    return;
#endif

    // the last of the kv head's active blocks combines their states, then resets the counter
    __threadfence();  // every thread's scratch writes are visible before the block's ticket
    __syncthreads();
    if (tid == 0) last = atomicAdd(tickets + kvh, 1u) == (unsigned)n_active - 1u;
    __syncthreads();
    if (!last) return;
    __threadfence();
    merge_split_states<QPG, HEAD_DIM, N_SPLITS, BLOCK>(scratch, put, kvh * QPG, n_active, wsp, lsp, lsum);
    if (tid == 0) tickets[kvh] = 0u;
}
