// attention_decode_staged: split-KV decode attention (gate attn.stage=smem, sm_80+) in which each
// block copies its chunk of K and V rows into shared memory with cp.async and then serves every
// query head of its kv head from there, so a K/V byte is read from L2/DRAM once per token (the
// register kernel, attention_decode.cu with one query head per block, reads it once per query
// head: 4 times for Llama-3's groups of 4).
//   s_p = (q_h . k_p) * SCALE,  out_h = sum_p softmax(s)_p * v_p,  kv head = h / (N_HEADS/N_KV_HEADS)
//
// Work of a block (kv head blockIdx.x, split blockIdx.y): chunks of CH = BLOCK / 2 positions,
// c_lo + y, c_lo + y + N_SPLITS, ... (c_lo: the first chunk in range; as attention_decode.cu ALGO
// 2). A context within one chunk (short contexts) is served per query head instead: blocks y <
// QPG take head y each, the same chunk (its K/V read QPG times, from L2 after the first) and
// write out themselves, so a short context is QPG blocks a kv head, not one doing QPG heads'
// work. For each chunk, with NH = QPG (or 1) heads:
//   1. copy: K rows into padded rows of KROW bytes, V rows into rows of VROW bytes, one 16-byte
//      cp.async per piece, 16 consecutive threads a row (K first, V second: two commit groups);
//      rows outside [first, end) are zero filled. EARLY_KV: the first chunk's copies (every row
//      but the current position's) go out before griddepcontrol.wait, the current row (stored by
//      the q/k/v gemv) is read after it and written to shared memory by 2 * NP threads.
//   2. scores: two threads per position, each over half of the 16-byte pieces (2k + j) for all
//      QPG query heads (q in shared memory, pre-scaled to base 2), one shuffle to add the halves.
//      Bank check (HEAD_DIM 128): KROW = 288 bytes, so a quarter warp's 8 lanes (4 positions x 2
//      halves) read 8 distinct 16-byte bank groups; q reads are 2 addresses a warp instruction.
//   3. softmax: warp h (< QPG) takes head h's CH scores: running max m and sum l (in the warp's
//      registers), weights 2^(s - m) back in place, the rescale alpha of earlier chunks.
//   4. V sums: thread (pg, dg) sums rows pg, pg + PL, ... of piece dg (8 dims) for all heads,
//      weights read as float4s (broadcast across the 16 lanes of a row).
// After the last chunk the PL position lanes' sums are added through shared memory; one active
// block writes out = O / l, several write their (O, m, l) to scratch and the last one (atomic
// ticket per kv head) combines them: out = sum_s w_s O_s / sum_s w_s l_s, w_s = 2^(m_s - max m)
// (the splits' (m, l) in one round trip, then every split's O in another, a thread's all in flight).
//
// params:  N_HEADS, N_KV_HEADS, HEAD_DIM (64 | 128), SCALE (float), N_SPLITS, BLOCK (256; CH =
//          BLOCK / 2 positions a chunk), WINDOW (optional: the last WINDOW positions only),
//          EARLY_KV (0 | 1, above), PDL
// launch:  grid (N_KV_HEADS, N_SPLITS), block BLOCK, smem SMEM_BYTES below:
//          CH * (2 * HEAD_DIM + 32 + 2 * HEAD_DIM) bytes (69632 for HEAD_DIM 128)
// args:    (q, k_cache, v_cache, pos_ptr, out, scratch, seq_ptr, tickets, next_w) as
//          attention_decode.cu (seq_ptr and next_w unused); the cache is half
//          [n_ctx][N_KV_HEADS * HEAD_DIM]; scratch N_HEADS * N_SPLITS * (HEAD_DIM + 4) floats;
//          tickets N_KV_HEADS zeroed counters (left zeroed)
//          PRECOND: 16-byte aligned pointers; 0 <= *pos_ptr < n_ctx; with EARLY_KV the position
//          and the rows before it final before the launch (the host's copy or the previous
//          step's pick kernel)
// bytes:   n_pos * N_KV_HEADS * HEAD_DIM * 4 + 2 * N_HEADS * HEAD_DIM * 4
//          (+ 2 * N_HEADS * min(N_SPLITS, chunks) * (HEAD_DIM + 4) * 4 with several chunks)
// reference: cpu::attention   test: tests/unit/kernels_vs_cpu_test.cpp (variants attn-staged*)
#include "common/common.cuh"
#include "common/async_copy.cuh"
#include "common/attn_split.cuh"

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME attention_decode_staged
#define N_HEADS 32
#define N_KV_HEADS 8
#define HEAD_DIM 128
#define SCALE 0.08838834764831845f
#define N_SPLITS 33
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef WINDOW
#define WINDOW 0
#endif
#ifndef EARLY_KV
#define EARLY_KV 0
#endif

constexpr int QPG = N_HEADS / N_KV_HEADS;  // query heads per kv head: every one in this block
constexpr int NP = HEAD_DIM / 8;           // 16-byte pieces of a row
constexpr int CH = BLOCK / 2;              // positions per chunk (two threads a position)
constexpr int KROW = 2 * HEAD_DIM + 32;    // K row stride in shared memory (padded: banks)
constexpr int VROW = 2 * HEAD_DIM;         // V row stride
constexpr int PL = BLOCK / NP;             // position lanes of the V sums
constexpr int QP4 = (QPG + 3) / 4 * 4;     // weights per position, whole float4s
constexpr int KV_DIM = N_KV_HEADS * HEAD_DIM;
constexpr int SROW = HEAD_DIM + 4;         // a split's state in scratch: O, m, l (16-byte rows)
constexpr int SMEM_KV = CH * (KROW + VROW);
constexpr int SMEM_RED = PL * QPG * HEAD_DIM * 4;
constexpr int SMEM_BYTES = SMEM_KV > SMEM_RED ? SMEM_KV : SMEM_RED;
static_assert(N_HEADS % N_KV_HEADS == 0, "GQA: whole groups");
static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "HEAD_DIM: 64 or 128");
static_assert(BLOCK % 32 == 0 && (CH * NP) % BLOCK == 0 && BLOCK % NP == 0 && CH % 32 == 0, "BLOCK: whole warps, rows");
static_assert(QPG <= BLOCK / 32, "QPG: a warp per query head for the softmax");
static_assert(NP % 2 == 0, "two threads a position");

// 8 halves -> 8 floats
__device__ __forceinline__ void half8_to_float(const uint4& w, float* f) {
    const uint32_t u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = f16_lo(u[i]);
        f[2 * i + 1] = f16_hi(u[i]);
    }
}

// Chunk c's rows of one cache (K or V, from src) except row `skip` (-1: none) into shared memory
// at dst, rows `stride` bytes apart, as one commit group; rows outside [first, n_pos) zero filled
__device__ __forceinline__ void issue_rows(uint32_t dst, int stride, const half* src, int c, int first, int n_pos,
                                           int skip) {
#pragma unroll
    for (int i = 0; i < CH * NP / BLOCK; ++i) {
        const int e = threadIdx.x + i * BLOCK, r = e / NP, pc = e % NP, p = c * CH + r;
        const bool ok = p >= first && p < n_pos;
        if (p != skip) cp_async16(dst + r * stride + pc * 16, src + (unsigned long long)(ok ? p : 0) * KV_DIM + pc * 8, ok ? 16 : 0);
    }
    cp_async_commit();
}
// Chunk c's K rows (one commit group), then its V rows (another)
__device__ __forceinline__ void issue_chunk(uint8_t* kv, const half* kb, const half* vb, int c, int first, int n_pos,
                                            int skip) {
    const uint32_t ks = smem_addr(kv);
    issue_rows(ks, KROW, kb, c, first, n_pos, skip);
    issue_rows(ks + CH * KROW, VROW, vb, c, first, n_pos, skip);
}

// Shared memory of a block: K rows [CH][KROW], then V rows [CH][VROW] (dynamic; after the last
// chunk the V sums' reduction); q of the block's heads * SCALE * log2(e); the chunk's scores,
// then weights, [position][head]; the rescale of earlier chunks and (m, l) per head; the merge's
// per-split weights and sums
struct Smem {
    uint8_t* kv;
    float *qs, *wts, *alpha, *mls, *wsp, *lsp, *lsum;
    bool* last;
};

// The chunk loop and the output of a block serving NH query heads hq0 .. hq0 + NH - 1 of kv head
// kvh over chunks c0, c0 + N_SPLITS, .. <= c_hi; n_active blocks serve these heads (> 1: the
// scratch states and the ticket merge, NH = QPG). EARLY_KV: c0's copies are already out (all
// rows but `pos`), the PDL wait passed.
template <int NH>
__device__ __forceinline__ void attend(const Smem& sm, const float* q, const half* kb, const half* vb, float* out,
                                       float* scratch, unsigned* tickets, int kvh, int hq0, int y, int n_active,
                                       int c0, int c_hi, int first, int pos, bool early) {
    constexpr int QPN = (NH + 3) / 4 * 4;  // weights per position, whole float4s
    const int tid = threadIdx.x, wp = tid / 32, lane = tid % 32;
    const int n_pos = pos + 1;
    uint8_t* kv = sm.kv;
    float* qs = sm.qs;
    float* wts = sm.wts;
    {
        constexpr float QS = (float)(SCALE) * 1.4426950408889634f;  // scores in base 2
        const float* qg = q + hq0 * HEAD_DIM;
        for (int i = tid; i < NH * HEAD_DIM / 4; i += BLOCK) {
            const float4 v = ld_act4(qg + 4 * i);
            *reinterpret_cast<float4*>(qs + 4 * i) = make_float4(v.x * QS, v.y * QS, v.z * QS, v.w * QS);
        }
    }
    float m_run = -JL_INF, l_run = 0.0f;  // head wp's running max and sum (warps wp < NH)
    const int dg = tid % NP, pg = tid / NP;
    float acc[NH][8];
#pragma unroll
    for (int h = 0; h < NH; ++h)
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[h][i] = 0.0f;

    for (int c = c0; c <= c_hi; c += N_SPLITS, early = false) {
        if (!early) {
            issue_chunk(kv, kb, vb, c, first, n_pos, -1);
        } else if (pos / CH == c && tid < 2 * NP) {
            // the current row, after the wait: K by threads 0..NP-1, V by NP..2NP-1
            const int pc = tid % NP, r = pos - c * CH;
            const bool isv = tid >= NP;
            const uint4 w = ld_stream16_act((isv ? vb : kb) + (unsigned long long)pos * KV_DIM + pc * 8);
            *reinterpret_cast<uint4*>(kv + (isv ? CH * KROW + r * VROW : r * KROW) + pc * 16) = w;
        }
        cp_async_wait<1>();  // this thread's K copies
        __syncthreads();     // everyone's, q, the current row

        // 2. scores: position pl of the chunk, pieces 2k + j
        {
            const int pl = tid / 2, j = tid % 2;
            float s[NH];
#pragma unroll
            for (int h = 0; h < NH; ++h) s[h] = 0.0f;
            const uint8_t* kr = kv + pl * KROW;
#pragma unroll
            for (int k = 0; k < NP / 2; ++k) {
                const int pc = 2 * k + j;
                float f[8];
                half8_to_float(*reinterpret_cast<const uint4*>(kr + pc * 16), f);
#pragma unroll
                for (int h = 0; h < NH; ++h) {
                    const float4 a = *reinterpret_cast<const float4*>(qs + h * HEAD_DIM + pc * 8);
                    const float4 b = *reinterpret_cast<const float4*>(qs + h * HEAD_DIM + pc * 8 + 4);
                    s[h] = fmaf(a.x, f[0], s[h]);
                    s[h] = fmaf(a.y, f[1], s[h]);
                    s[h] = fmaf(a.z, f[2], s[h]);
                    s[h] = fmaf(a.w, f[3], s[h]);
                    s[h] = fmaf(b.x, f[4], s[h]);
                    s[h] = fmaf(b.y, f[5], s[h]);
                    s[h] = fmaf(b.z, f[6], s[h]);
                    s[h] = fmaf(b.w, f[7], s[h]);
                }
            }
            const int p = c * CH + pl;
            const bool in = p >= first && p < n_pos;
#pragma unroll
            for (int h = 0; h < NH; ++h) {
                s[h] += __shfl_xor_sync(0xffffffffu, s[h], 1);
                if ((h & 1) == j) wts[pl * QPN + h] = in ? s[h] : -JL_INF;
            }
        }
        __syncthreads();

        // 3. softmax of head wp over the chunk (a chunk in [c_lo, c_hi] holds a position in range)
        if (wp < NH) {
            float x[CH / 32], cm = -JL_INF;
#pragma unroll
            for (int i = 0; i < CH / 32; ++i) {
                x[i] = wts[(lane + 32 * i) * QPN + wp];
                cm = fmaxf(cm, x[i]);
            }
            const float mn = fmaxf(m_run, warp_max(cm));
            float sum = 0.0f;
#pragma unroll
            for (int i = 0; i < CH / 32; ++i) {
                const float e = exp2f(x[i] - mn);  // 0 for positions out of range
                wts[(lane + 32 * i) * QPN + wp] = e;
                sum += e;
            }
            const float a = exp2f(m_run - mn);  // 0 on the first chunk
            l_run = l_run * a + warp_sum(sum);
            m_run = mn;
            if (lane == 0) sm.alpha[wp] = a;
        }
        cp_async_wait<0>();  // this thread's V copies
        __syncthreads();

        // 4. V sums: rows pg, pg + PL, ... of piece dg (rows past the last in range: weight 0,
        // zero filled; a short context stops at its rows)
        {
#pragma unroll
            for (int h = 0; h < NH; ++h) {
                const float a = sm.alpha[h];
#pragma unroll
                for (int i = 0; i < 8; ++i) acc[h][i] *= a;
            }
            const uint8_t* vr = kv + CH * KROW + dg * 16;
            const int r_end = min(CH, n_pos - c * CH);
#pragma unroll 4
            for (int r = pg; r < r_end; r += PL) {
                float f[8];
                half8_to_float(*reinterpret_cast<const uint4*>(vr + r * VROW), f);
#pragma unroll
                for (int h4 = 0; h4 < QPN; h4 += 4) {
                    const float4 w4 = *reinterpret_cast<const float4*>(wts + r * QPN + h4);
                    const float w[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
                    for (int hh = 0; hh < 4; ++hh) {
                        if (h4 + hh >= NH) break;
#pragma unroll
                        for (int i = 0; i < 8; ++i) acc[h4 + hh][i] = fmaf(w[hh], f[i], acc[h4 + hh][i]);
                    }
                }
            }
        }
        __syncthreads();  // shared memory is rewritten by the next chunk's copies
    }

    // the position lanes' sums, through shared memory: red[pg][h][d]
    float* red = reinterpret_cast<float*>(kv);
#pragma unroll
    for (int h = 0; h < NH; ++h) {
        float* r = red + (pg * NH + h) * HEAD_DIM + dg * 8;
        *reinterpret_cast<float4*>(r) = make_float4(acc[h][0], acc[h][1], acc[h][2], acc[h][3]);
        *reinterpret_cast<float4*>(r + 4) = make_float4(acc[h][4], acc[h][5], acc[h][6], acc[h][7]);
    }
    if (wp < NH && lane == 0) {
        sm.mls[wp] = m_run;
        sm.mls[NH + wp] = l_run;
    }
    __syncthreads();
    for (int idx = tid; idx < NH * HEAD_DIM; idx += BLOCK) {
        const int h = idx / HEAD_DIM, d = idx % HEAD_DIM, hq = hq0 + h;
        float o = 0.0f;
#pragma unroll
        for (int g = 0; g < PL; ++g) o += red[g * NH * HEAD_DIM + idx];
        if (n_active > 1) {
            float* sc = scratch + ((unsigned long long)hq * N_SPLITS + y) * SROW;
            sc[d] = o;
            if (d == 0) {
                sc[HEAD_DIM] = sm.mls[h];
                sc[HEAD_DIM + 1] = sm.mls[NH + h];
            }
        } else {
            out[hq * HEAD_DIM + d] = o / sm.mls[NH + h];  // l > 0: an active block has a position in range
        }
    }
    if (n_active == 1) return;

    // the last of the kv head's active blocks combines their states, then resets the counter
    __threadfence();  // every thread's scratch writes are visible before the block's ticket
    __syncthreads();
    if (tid == 0) *sm.last = atomicAdd(tickets + kvh, 1u) == (unsigned)n_active - 1u;
    __syncthreads();
    if (!*sm.last) return;
    __threadfence();
    merge_split_states<NH, HEAD_DIM, N_SPLITS, BLOCK>(scratch, [&](int i, float v) { out[i] = v; }, hq0, n_active, sm.wsp, sm.lsp,
                                                      sm.lsum);
    if (tid == 0) tickets[kvh] = 0u;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
KERNEL_NAME(const float* q, const half* k_cache, const half* v_cache, const int* pos_ptr,
            float* out, float* scratch, const int* seq_ptr, unsigned* tickets, const void* next_w) {
    TRACE_BEGIN();
    JITLLM_DYN_SMEM(uint8_t, kv);
    __shared__ __align__(16) float qs[QPG * HEAD_DIM];
    __shared__ __align__(16) float wts[CH * QP4];
    __shared__ float alpha[QPG], mls[2 * QPG], wsp[QPG * N_SPLITS], lsp[QPG * N_SPLITS], lsum[QPG];
    __shared__ bool last;
    (void)seq_ptr;
    (void)next_w;
    pdl_launch_dependents();  // small grid: let the next kernel get scheduled
    const int kvh = blockIdx.x, y = blockIdx.y;
#if !EARLY_KV
    pdl_wait();
#endif
    const int pos = *pos_ptr, n_pos = pos + 1;
    const int first = WINDOW > 0 ? max(0, n_pos - WINDOW) : 0;
    const int c_lo = first / CH, c_hi = pos / CH;
    // one chunk in range: a block per query head (y < QPG), else a block per kv head and split
    const bool per_head = QPG > 1 && c_hi == c_lo && N_SPLITS >= QPG;
    const int n_active = per_head ? 1 : min(N_SPLITS, c_hi - c_lo + 1);  // blocks a head set (block-uniform)
    if (y >= (per_head ? QPG : n_active)) return;
    const half* kb = k_cache + kvh * HEAD_DIM;
    const half* vb = v_cache + kvh * HEAD_DIM;
    const int c0 = c_lo + (per_head ? 0 : y);
#if EARLY_KV
    issue_chunk(kv, kb, vb, c0, first, n_pos, pos);  // every row but the current one (the q/k/v gemv stores it)
    pdl_wait();
#endif
    const Smem sm{kv, qs, wts, alpha, mls, wsp, lsp, lsum, &last};
    if (per_head)
        attend<1>(sm, q, kb, vb, out, scratch, tickets, kvh, kvh * QPG + y, 0, 1, c0, c_hi, first, pos, EARLY_KV);
    else
        attend<QPG>(sm, q, kb, vb, out, scratch, tickets, kvh, kvh * QPG, y, n_active, c0, c_hi, first, pos, EARLY_KV);
}
