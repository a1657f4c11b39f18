// attention_prefill: causal attention of the batch phase on tensor cores (flash-attention-2 style).
// Row r of the step (position pos_ptr[r] of sequence seq_ptr[r]) attends to the cached positions
// first(r)..pos_ptr[r] of its sequence (first = 0, or pos - WINDOW + 1 with a sliding window):
//   s_p = (q . k_p) * SCALE,  out = sum_p softmax(s)_p * v_p,  kv head = h / (N_HEADS/N_KV_HEADS)
// attention_decode.cu with BATCH=1 (one block per (kv head, row), SIMT) is the sibling.
//
// design: a block serves one kv head and a tile of BR = BQ / QPG consecutive rows: its BQ query
// vectors are (row, head) pairs, vector i = row (i / QPG) of the tile, head kvh * QPG + i % QPG,
// so the K/V tiles it loads serve every head of the group and every row of the tile. WARPS warps,
// 16 query vectors each (one m16 MMA tile), Q rounded to f16 once into registers (A fragments).
// K/V tiles of BC positions go through a 2-stage cp.async double buffer in shared memory (rows
// padded by 16 bytes: ldmatrix rows hit distinct banks for every HEAD_DIM multiple of 16).
// Per tile and warp: S = Q K^T with mma.sync m16n8k16 (f16 x f16 -> f32; K rows are the column-
// major B operand, ldmatrix), causal / window / sequence mask, online softmax in registers (base
// 2, the quad of lanes that share a row reduces max with shuffles, the sums at the end), P rounded
// to f16 is reused in place as the A operand of O += P V (V through ldmatrix.trans).
// Rows of one step may belong to different sequences (the server batches prompt bodies of several
// sequences, and one row per sequence for the logits step): K/V are shared only among rows of one
// sequence. The block walks the distinct sequences of its tile in order (rows of a prompt chunk
// are consecutive positions of one sequence: one pass); for each it loads positions
// min first(r) .. max pos(r) over the tile's rows of that sequence and masks the other rows. Warps
// skip tiles (and sequences) none of their rows need; blocks with the highest rows start first.
// SEQ_SPLIT > 1 spreads the distinct sequences of a tile over SEQ_SPLIT blocks (grid.z; sequence
// j of the tile goes to block z = j % SEQ_SPLIT, others exit): one row per sequence then gets one
// block, as in the sibling. A block writes only the rows whose sequence it processed.
//
// params:
//   N_HEADS, N_KV_HEADS (QPG = N_HEADS / N_KV_HEADS <= BQ), HEAD_DIM (multiple of 16, <= 256;
//   64 / 80 / 96 / 128 tested), KV_T (half only), SCALE (float), N_CTX (positions per sequence
//   in the cache), WINDOW (default 0 = whole cache), WARPS (default 4), BC (positions per K/V
//   tile, default 64, multiple of 16), SEQ_SPLIT (default 1), PDL (default 0), KV_BLOCK and KV_BPS
//   (the paged pool: positions a block, entries of a sequence's block table).
//   Needs sm_80+ (cp.async, ldmatrix, mma.sync f16).
// launch:  grid (N_KV_HEADS, ceil(m / BR), SEQ_SPLIT), BR = (16 * WARPS) / QPG rows per block,
//          block 32 * WARPS, dynamic smem 4 * BC * (2 * HEAD_DIM + 16) bytes (69632 for
//          HEAD_DIM 128, BC 64: the host raises the limit above 48 KiB)
// args:    (q, k_cache, v_cache, pos_ptr, out, seq_ptr, kv_table, m)
//          q, out: f32 [m][N_HEADS * HEAD_DIM]; caches: the pool's rows [N_KV_HEADS * HEAD_DIM]
//          half (this layer's base), position p of sequence s in row kv_table[s * KV_BPS + p /
//          KV_BLOCK] * KV_BLOCK + p % KV_BLOCK; pos_ptr, seq_ptr: i32 [m]; kv_table: i32
//          [n_seq][KV_BPS]; m: rows of the step.
//          PRECOND: 16-byte aligned pointers; 0 <= pos < N_CTX; every cache row first(r)..pos(r)
//          of seq(r) was written (this step's rows before the launch).
// bytes:   per block and sequence: (hi - lo + 1) * HEAD_DIM * 4 (K and V, half) from L2/DRAM;
//          DRAM: the union of the positions per (kv head, sequence), + 8 * m * N_HEADS * HEAD_DIM
// flops:   4 * HEAD_DIM * N_HEADS * sum_r (pos(r) - first(r) + 1) (useful; the MMA tiles do up
//          to BC more per row on the diagonal)
// precision: q and p rounded to f16 (2^-11 relative), f32 accumulation; exp2 in f32.
// reference: cpu::attention per row   test: tests/golden/prefill_modes_test.cpp (GPU)

#ifndef JITLLM_JIT  // defaults for a standalone syntax check only
#define KERNEL_NAME attention_prefill
#define N_HEADS 32
#define N_KV_HEADS 8
#define HEAD_DIM 128
#define KV_T half
#define SCALE 0.08838834764831845f
#define N_CTX 4096
#define KV_BLOCK 16
#define KV_BPS 256
#endif

#include "common/async_copy.cuh"

#define QPG (N_HEADS / N_KV_HEADS)
#ifndef WINDOW
#define WINDOW 0
#endif
#ifndef WARPS
#define WARPS 4
#endif
#ifndef BC
#define BC 64
#endif
#ifndef SEQ_SPLIT
#define SEQ_SPLIT 1
#endif
#define AP_NT (32 * WARPS)
#define AP_BQ (16 * WARPS)          // query vectors per block
#define AP_BR (AP_BQ / QPG)         // rows per block
#define AP_CH (HEAD_DIM / 8)        // 16-byte chunks per K/V row
#define AP_RS (HEAD_DIM * 2 + 16)   // smem row stride in bytes (padded)
#define AP_TILE (BC * AP_RS)        // bytes of one K (or V) tile

static_assert(N_HEADS % N_KV_HEADS == 0, "GQA: whole groups");
static_assert(QPG <= AP_BQ && AP_BR <= 64, "rows per block: 1..64");
static_assert(HEAD_DIM % 16 == 0 && HEAD_DIM <= 256, "HEAD_DIM: multiple of 16");
static_assert(BC % 16 == 0 && BC <= 128, "BC: multiple of 16");
static_assert(sizeof(KV_T) == 2, "KV_T: half (the float cache takes the SIMT sibling)");
static_assert(KV_BLOCK >= 1 && KV_BPS * KV_BLOCK >= N_CTX, "KV_BPS blocks of KV_BLOCK hold a sequence");

#ifndef JITLLM_EMU
__device__ __forceinline__ void ap_mma(float* c, const uint32_t* a, const uint32_t* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

extern "C" __global__ void __launch_bounds__(AP_NT)
KERNEL_NAME(const float* q, const KV_T* k_cache, const KV_T* v_cache, const int* pos_ptr, float* out,
            const int* seq_ptr, const int* kv_table, int m) {
    constexpr int KV_DIM = N_KV_HEADS * HEAD_DIM;
    constexpr float C = (float)(SCALE) * 1.4426950408889634f;  // scores in base 2
    JITLLM_DYN_SMEM(uint8_t, smem);  // [2 stages][K, V][BC][AP_RS]
    __shared__ int s_pos[AP_BR], s_seq[AP_BR];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    const int kvh = blockIdx.x;
    const int row0 = ((int)gridDim.y - 1 - (int)blockIdx.y) * AP_BR;  // last rows (most work) first
    pdl_wait();
    if (tid < AP_BR) {
        const int r = row0 + tid;
        s_pos[tid] = r < m ? pos_ptr[r] : -1;
        s_seq[tid] = r < m ? seq_ptr[r] : -1;
    }
    pdl_launch_dependents();

    // this thread's two query vectors (accumulator rows g and g + 8 of the warp's m16 tile)
    int lr[2], hq[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int v = warp * 16 + g + 8 * i;
        lr[i] = v / QPG;  // local row (>= AP_BR: unused vector)
        hq[i] = kvh * QPG + v % QPG;
    }
    // Q fragments (f16), once: a0 (g, k 2t..) a1 (g+8, k 2t..) a2 (g, k 2t+8..) a3 (g+8, k 2t+8..)
    uint32_t qf[HEAD_DIM / 16][4];
#pragma unroll
    for (int kk = 0; kk < HEAD_DIM / 16; ++kk)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int i = j & 1, r = row0 + lr[i];
            float2 v = make_float2(0.0f, 0.0f);
            if (lr[i] < AP_BR && r < m)
                v = *reinterpret_cast<const float2*>(q + (unsigned long long)r * (N_HEADS * HEAD_DIM) +
                                                     hq[i] * HEAD_DIM + kk * 16 + (j >> 1) * 8 + 2 * t4);
            qf[kk][j] = pack_16x2<0>(v.x, v.y);
        }
    float o[HEAD_DIM / 8][4];
#pragma unroll
    for (int d = 0; d < HEAD_DIM / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
    float mx[2] = {-JL_INF, -JL_INF}, l[2] = {0.0f, 0.0f};
    bool mine[2] = {false, false};  // this block processed the row's sequence
    __syncthreads();  // s_pos, s_seq

    const uint32_t sm = smem_addr(smem);
    unsigned long long done = 0;  // rows whose sequence was visited (block-uniform)
    for (int r = 0; r < AP_BR; ++r)
        if (s_seq[r] < 0) done |= 1ull << r;
    for (int j = 0;; ++j) {
        // next distinct sequence S of the tile: rows lo..hi of its cache are needed
        int r0 = 0;
        while (r0 < AP_BR && ((done >> r0) & 1)) ++r0;
        if (r0 == AP_BR) break;
        const int S = s_seq[r0];
        int lo = N_CTX, hi = -1;
        for (int r = r0; r < AP_BR; ++r)
            if (s_seq[r] == S) {
                done |= 1ull << r;
                const int p = s_pos[r];
                lo = min(lo, WINDOW > 0 ? max(0, p - WINDOW + 1) : 0);
                hi = max(hi, p);
            }
        if (j % SEQ_SPLIT != (int)blockIdx.z) continue;

        // per query vector: in S, attending first..last
        int first[2], last[2];
        int wlo = N_CTX, whi = -1;  // this warp's needed positions (warp-uniform)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            last[i] = -1;
            first[i] = 0;
            if (lr[i] < AP_BR && s_seq[lr[i]] == S) {
                last[i] = s_pos[lr[i]];
                first[i] = WINDOW > 0 ? max(0, last[i] - WINDOW + 1) : 0;
                mine[i] = true;
            }
        }
        for (int v = warp * 16; v < warp * 16 + 16; ++v) {
            const int r = v / QPG;
            if (r < AP_BR && s_seq[r] == S) {
                const int p = s_pos[r];
                whi = max(whi, p);
                wlo = min(wlo, WINDOW > 0 ? max(0, p - WINDOW + 1) : 0);
            }
        }
        const int* tab = kv_table + S * KV_BPS;  // S's blocks
        const KV_T* kb = k_cache + kvh * HEAD_DIM;
        const KV_T* vb = v_cache + kvh * HEAD_DIM;
        const int n_tiles = (hi - lo) / BC + 1;
        auto issue = [&](int t) {  // cp.async of K/V tile t into stage t & 1 (one group)
            const uint32_t st = sm + (uint32_t)((t & 1) * 2 * AP_TILE);
#if (BC * AP_CH) % AP_NT == 0 && AP_NT % AP_CH == 0
            // this thread's AP_NR rows of the tile (chunk tid % AP_CH of each): their block-table
            // entries read together first, then the K and V copies (not a table read between
            // two copies, each waiting on the one before)
            constexpr int AP_NR = BC * AP_CH / AP_NT;
            const int ch = tid % AP_CH;
            unsigned long long row[AP_NR];
            bool ok[AP_NR];
#pragma unroll
            for (int i = 0; i < AP_NR; ++i) {
                const int pt = lo + t * BC + tid / AP_CH + i * (AP_NT / AP_CH);
                ok[i] = pt <= hi;
                const int p = ok[i] ? pt : lo;  // (a zero fill past hi: any valid source address)
                row[i] = (unsigned long long)tab[p / KV_BLOCK] * KV_BLOCK + p % KV_BLOCK;
            }
#pragma unroll
            for (int kv = 0; kv < 2; ++kv)
#pragma unroll
                for (int i = 0; i < AP_NR; ++i) {
                    const int pr = tid / AP_CH + i * (AP_NT / AP_CH);
                    cp_async16(st + (uint32_t)(kv * AP_TILE + pr * AP_RS + ch * 16),
                               (kv ? vb : kb) + row[i] * KV_DIM + ch * 8, ok[i] ? 16 : 0);
                }
#else
#pragma unroll 4
            for (int c = tid; c < 2 * BC * AP_CH; c += AP_NT) {
                const int kv = c / (BC * AP_CH), rem = c % (BC * AP_CH);
                const int pr = rem / AP_CH, ch = rem % AP_CH;
                const int pt = lo + t * BC + pr;
                const bool ok = pt <= hi;
                const int p = ok ? pt : lo;  // (a zero fill past hi: any valid source address)
                const unsigned long long row = (unsigned long long)tab[p / KV_BLOCK] * KV_BLOCK + p % KV_BLOCK;
                const KV_T* src = (kv ? vb : kb) + row * KV_DIM + ch * 8;
                cp_async16(st + (uint32_t)(kv * AP_TILE + pr * AP_RS + ch * 16), src, ok ? 16 : 0);
            }
#endif
            cp_async_commit();
        };
        issue(0);
        for (int t = 0; t < n_tiles; ++t) {
            if (t + 1 < n_tiles) issue(t + 1);
            else cp_async_commit();  // empty group: the wait below always means "tile t landed"
            cp_async_wait<1>();
            __syncthreads();
            const int p0 = lo + t * BC;
            if (whi >= p0 && wlo <= p0 + BC - 1) {  // warp-uniform
                const uint32_t ks = sm + (uint32_t)((t & 1) * 2 * AP_TILE), vs = ks + AP_TILE;
                // S = Q K^T: n tiles of 8 positions
                float s[BC / 8][4];
#pragma unroll
                for (int n = 0; n < BC / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
                for (int kk = 0; kk < HEAD_DIM / 16; ++kk)
#pragma unroll
                    for (int np = 0; np < BC / 16; ++np) {
                        uint32_t b[4];
                        const int pr = np * 16 + (lane & 7) + ((lane >> 4) << 3);
                        const int ch = kk * 2 + ((lane >> 3) & 1);
                        ldsm_x4(b, ks + (uint32_t)(pr * AP_RS + ch * 16));
                        ap_mma(s[2 * np], qf[kk], b);
                        ap_mma(s[2 * np + 1], qf[kk], b + 2);
                    }
                // mask, online softmax (element e: row e >> 1, position p0 + 8n + 2t + (e & 1))
                float tm[2] = {-JL_INF, -JL_INF};
#pragma unroll
                for (int n = 0; n < BC / 8; ++n)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int i = e >> 1, p = p0 + n * 8 + 2 * t4 + (e & 1);
                        const float x = p >= first[i] && p <= last[i] ? s[n][e] * C : -JL_INF;
                        s[n][e] = x;
                        tm[i] = fmaxf(tm[i], x);
                    }
                float base[2];
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    tm[i] = fmaxf(tm[i], __shfl_xor_sync(0xffffffffu, tm[i], 1));
                    tm[i] = fmaxf(tm[i], __shfl_xor_sync(0xffffffffu, tm[i], 2));
                    const float mn = fmaxf(mx[i], tm[i]);
                    base[i] = mn == -JL_INF ? 0.0f : mn;  // nothing valid yet: every p is 0
                    const float corr = exp2f(mx[i] - base[i]);  // 0 when mx was -inf
                    mx[i] = mn;
                    l[i] *= corr;
#pragma unroll
                    for (int d = 0; d < HEAD_DIM / 8; ++d) {
                        o[d][2 * i] *= corr;
                        o[d][2 * i + 1] *= corr;
                    }
                }
                uint32_t pa[BC / 16][4];
#pragma unroll
                for (int n = 0; n < BC / 8; ++n) {
                    float pv[4];
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        pv[e] = exp2f(s[n][e] - base[e >> 1]);
                        l[e >> 1] += pv[e];
                    }
                    // A fragment of positions 16 * (n / 2) ..: n even -> a0, a1; n odd -> a2, a3
                    pa[n >> 1][(n & 1) * 2] = pack_16x2<0>(pv[0], pv[1]);
                    pa[n >> 1][(n & 1) * 2 + 1] = pack_16x2<0>(pv[2], pv[3]);
                }
                // O += P V: V rows (positions) are the k dimension, ldmatrix.trans
#pragma unroll
                for (int kp = 0; kp < BC / 16; ++kp)
#pragma unroll
                    for (int dp = 0; dp < HEAD_DIM / 16; ++dp) {
                        uint32_t b[4];
                        const int pr = kp * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
                        const int ch = dp * 2 + (lane >> 4);
                        ldsm_x4_t(b, vs + (uint32_t)(pr * AP_RS + ch * 16));
                        ap_mma(o[2 * dp], pa[kp], b);
                        ap_mma(o[2 * dp + 1], pa[kp], b + 2);
                    }
            }
            __syncthreads();  // stage t & 1 is refilled by the next iteration's issue
        }
        cp_async_wait<0>();
    }

    // the quad's partial sums, then out = O / l for the rows this block owns
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
        const int r = row0 + lr[i];
        if (!mine[i] || r >= m) continue;
        const float inv = 1.0f / l[i];  // l > 0: position pos(r) is always attended
        float* orow = out + (unsigned long long)r * (N_HEADS * HEAD_DIM) + hq[i] * HEAD_DIM + 2 * t4;
#pragma unroll
        for (int d = 0; d < HEAD_DIM / 8; ++d)
            *reinterpret_cast<float2*>(orow + d * 8) = make_float2(o[d][2 * i] * inv, o[d][2 * i + 1] * inv);
    }
}
