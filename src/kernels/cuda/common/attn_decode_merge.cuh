// The end of attention_decode.cu's kernel body, textually included inside it (it uses the body's
// locals: the group states o, m, l, the shared arrays, the split geometry): the NG thread groups'
// states merged per query head, then, with several active split blocks, the ticket (or cluster)
// merge of their partial states by the last block. Not a header of its own: no #pragma once.
    // merge the NG group states, MRG_H query heads per round: every group's (o, m, l) into
    // shared memory, one thread per (head, group) for its weight 2^(m_g - M), then every
    // output dim of the round's heads in parallel (groups in order)
    constexpr int ROW = HEAD_DIM + 2;
    // a partial state in scratch; MMA: 16-byte rows for the float4 merge below (the SIMT kernel keeps
    // HEAD_DIM + 2 and the scalar merge: with the float4 one, H200 8B Q8_0 tg128 at depth 4096 fell
    // 379.1 -> 369.2 on 2026-12-01, a0a5b73; MMA at 16 splits rose 362.9 -> 368.3)
    constexpr int SROW = MMA ? HEAD_DIM + 4 : HEAD_DIM + 2;
    __shared__ __align__(16) float cst[CLUSTER ? HPB * SROW : 1];  // CLUSTER: this block's state
    (void)cst;
#if MERGE_WARP
    // groups gi ^ (off / GS) of a warp hold the same dims: merge pairwise at lane distance
    // GS, 2 GS, .. 16 (every lane ends with its warp's state), then one writer group per warp
#pragma unroll
    for (int off = GS; off < 32; off *= 2) {
#pragma unroll
        for (int h = 0; h < HPB; ++h) {
            const float mo = __shfl_xor_sync(0xffffffffu, m[h], off);
            const float lo = __shfl_xor_sync(0xffffffffu, l[h], off);
            const float mm = fmaxf(m[h], mo);
            const float a = m[h] == -JL_INF ? 0.0f : exp2f(m[h] - mm);
            const float b = mo == -JL_INF ? 0.0f : exp2f(mo - mm);
            l[h] = l[h] * a + lo * b;
#pragma unroll
            for (int i = 0; i < VEC; ++i) {
                const float oo = __shfl_xor_sync(0xffffffffu, o[h][i], off);
                o[h][i] = o[h][i] * a + oo * b;
            }
            m[h] = mm;
        }
    }
    const int gm = tid / 32;                 // this thread's state slot: its warp
    const bool writer = (tid % 32) < GS;     // the warp's first group writes it
#else
    const int gm = gi;
    const bool writer = true;
#endif
#pragma unroll
    for (int h0 = 0; h0 < HPB; h0 += MRG_H) {
#pragma unroll
        for (int hh = 0; hh < MRG_H; ++hh) {
            if (h0 + hh >= HPB) break;
#if MMA
            // the lanes of head h0 + hh write their warp's state (state slot: the warp)
            if (mg != h0 + hh) continue;
            float* st = mrg + (hh * NGM + wp) * ROW;
#pragma unroll
            for (int t = 0; t < MNT; ++t) {
                st[VD(2 * mc, t)] = o[t][0];
                st[VD(2 * mc + 1, t)] = o[t][1];
            }
            if (mc == 0) {
                st[HEAD_DIM] = m;
                st[HEAD_DIM + 1] = l;
            }
#else
            if (!writer) continue;
            float* st = mrg + (hh * NGM + gm) * ROW;
#pragma unroll
            for (int i = 0; i < VEC; ++i) st[gl * VEC + i] = o[h0 + hh][i];
            if (gl == 0) {
                st[HEAD_DIM] = m[h0 + hh];
                st[HEAD_DIM + 1] = l[h0 + hh];
            }
#endif
        }
        __syncthreads();
        const int nh = min(MRG_H, HPB - h0);
        for (int idx = tid; idx < nh * NGM; idx += BLOCK) {
            const int hh = idx / NGM;
            float M = -JL_INF;
            for (int g = 0; g < NGM; ++g) M = fmaxf(M, mrg[(hh * NGM + g) * ROW + HEAD_DIM]);
            const float m_g = mrg[idx * ROW + HEAD_DIM];
            wgt[idx] = m_g == -JL_INF ? 0.0f : exp2f(m_g - M);  // 0 for empty groups
        }
        __syncthreads();
        for (int idx = tid; idx < nh * HEAD_DIM; idx += BLOCK) {
            const int hh = idx / HEAD_DIM, d = idx % HEAD_DIM;
            float M = -JL_INF, L = 0.0f, O = 0.0f;
            for (int g = 0; g < NGM; ++g) {
                const float* st = mrg + (hh * NGM + g) * ROW;
                M = fmaxf(M, st[HEAD_DIM]);
                L += st[HEAD_DIM + 1] * wgt[hh * NGM + g];
                O += st[d] * wgt[hh * NGM + g];
            }
            const int hq = hb + h0 + hh;
            if (ALGO == 2 && n_active > 1) {
                // the block's state: scratch in global memory, or (CLUSTER) its own shared memory
                float* sc = CLUSTER ? cst + (h0 + hh) * SROW : scratch + ((unsigned long long)hq * N_SPLITS + blockIdx.y) * SROW;
                sc[d] = O;
                if (d == 0) {
                    sc[HEAD_DIM] = M;
                    sc[HEAD_DIM + 1] = L;
                }
            } else {
                put(hq * HEAD_DIM + d, O / L);  // L > 0: an active block has a position in range
            }
        }
        __syncthreads();  // mrg is rewritten by the next round
    }
#if ALGO == 2
    // More than one active block: the last of this kv head's (and head set's) blocks to finish (a
    // ticket from an atomic counter per block x) combines the n_active partial states of its HPB
    // query heads: out = sum_s w_s o_s / sum_s w_s l_s, w_s = 2^(m_s - max m); it then resets the
    // counter for the next launch.
    if (n_active == 1) return;
    // out = sum_s w_s o_s / sum_s w_s l_s over the active splits for DV dims (common/attn_split.cuh
    // merge_dv: get(sp, i) reads split sp's value i, i < DV the dims, DV its m_s, DV + 1 its l_s) into
    // outputs o .. o + DV - 1
    auto combine = [&](auto get, int o, auto dv_tag) {
        constexpr int DV = decltype(dv_tag)::value;
        float O[DV];
        merge_dv<N_SPLITS, DV>(get, n_active, O);
#pragma unroll
        for (int i = 0; i < DV; ++i) put(o + i, O[i]);
    };
    (void)combine;
#if CLUSTER
    // the cluster (1 x N_SPLITS blocks: rank = blockIdx.y) combines through distributed shared
    // memory: every state is in its block's cst after the barrier; block r writes items
    // [r * PER, (r + 1) * PER) of the HPB x HEAD_DIM outputs (XQ_OUT: whole groups of 32); the second
    // barrier keeps every block (and its shared memory) until the last read
    cluster_barrier();
    {
        constexpr int ITEMS = HPB * HEAD_DIM;
        constexpr int PER = XQ_OUT ? (ITEMS / 32 + N_SPLITS - 1) / N_SPLITS * 32 : (ITEMS + N_SPLITS - 1) / N_SPLITS;
        for (int j = tid; j < PER; j += BLOCK) {
            const int idx = (int)blockIdx.y * PER + j;
            if (idx < ITEMS) {
                const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
                const unsigned a_o = smem_addr(cst + h * SROW + d), a_m = smem_addr(cst + h * SROW + HEAD_DIM);
                combine([&](int sp, int i) { return ld_cluster_f32(i == 0 ? a_o : i == 1 ? a_m : a_m + 4, sp); },
                        (hb + h) * HEAD_DIM + d, IntTag<1>());
            }
        }
    }
    cluster_barrier();
    return;
#endif
    __shared__ bool last;
    // the block's scratch writes (ordered before thread 0's fence by the barrier, the fence being
    // cumulative) are visible before its ticket: one release fence a block, not a sequentially
    // consistent fence in every thread (Nsight Compute: 3 % of the kernel's stall samples there)
    __syncthreads();
    if (tid == 0) {
        fence_acq_rel_gpu();
        last = atomicAdd(tickets + bx, 1u) == (unsigned)n_active - 1u;
        if (last) fence_acq_rel_gpu();  // acquire: the other blocks' states, read after the barrier
    }
    __syncthreads();
    if (!last) return;
    if constexpr (MERGE1 && N_SPLITS <= 16) {
    // MERGE1, one round trip: each thread loads its dims' partial outputs of every active split together
    // with the splits' (m_s, l_s) (the same addresses across a warp: broadcast)
    constexpr int DV = MMA ? 4 : 1;  // dims per thread (MMA: float4 loads of its 16-byte rows)
    for (int idx = tid; idx < HPB * HEAD_DIM / DV; idx += BLOCK) {
        const int h = idx / (HEAD_DIM / DV), d = DV * (idx % (HEAD_DIM / DV));
        const float* sc = scratch + (unsigned long long)(hb + h) * N_SPLITS * SROW;
        if constexpr (DV == 4) {
            float4 xo[N_SPLITS];
#pragma unroll
            for (int sp = 0; sp < N_SPLITS; ++sp)
                if (sp < n_active) xo[sp] = __ldcg(reinterpret_cast<const float4*>(sc + sp * SROW + d));
            combine([&](int sp, int i) {
                        return i == 0 ? xo[sp].x : i == 1 ? xo[sp].y : i == 2 ? xo[sp].z : i == 3 ? xo[sp].w
                               : __ldcg(sc + sp * SROW + HEAD_DIM + i - DV);
                    },
                    (hb + h) * HEAD_DIM + d, IntTag<DV>());
        } else {
            combine([&](int sp, int i) { return __ldcg(sc + sp * SROW + (i == 0 ? d : HEAD_DIM + i - 1)); },
                    (hb + h) * HEAD_DIM + d, IntTag<1>());
        }
    }
    } else {
        // (m_s, l_s) of every split read once, in parallel; the per-head loop below touches only
        // shared memory (it used to re-read l_s from L2 split by split, one latency per split)
        __shared__ float wsm[HPB * N_SPLITS], lss[HPB * N_SPLITS], lsm[HPB];
        for (int idx = tid; idx < HPB * n_active; idx += BLOCK) {
            const int h = idx / n_active, sp = idx % n_active;
            const float* st = scratch + ((unsigned long long)(hb + h) * N_SPLITS + sp) * SROW;
            wsm[h * N_SPLITS + sp] = __ldcg(st + HEAD_DIM);  // m_s for now
            lss[h * N_SPLITS + sp] = __ldcg(st + HEAD_DIM + 1);
        }
        __syncthreads();
        if (tid < HPB) {
            float* w = wsm + tid * N_SPLITS;
            float M = -JL_INF;
            for (int sp = 0; sp < n_active; ++sp) M = fmaxf(M, w[sp]);
            float L = 0.0f;
            for (int sp = 0; sp < n_active; ++sp) {
                const float wgt = exp2f(w[sp] - M);
                L += lss[tid * N_SPLITS + sp] * wgt;
                w[sp] = wgt;
            }
            lsm[tid] = L;
        }
        __syncthreads();
        if constexpr (!MMA) {
        for (int idx = tid; idx < HPB * HEAD_DIM; idx += BLOCK) {
            const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
            const float* sc = scratch + (unsigned long long)(hb + h) * N_SPLITS * SROW + d;
            float O = 0.0f;
#pragma unroll 8
            for (int sp = 0; sp < n_active; ++sp) O += __ldcg(sc + sp * SROW) * wsm[h * N_SPLITS + sp];
            put((hb + h) * HEAD_DIM + d, O / lsm[h]);
        }
        } else {
        // MMA: four dims per thread (16-byte loads, up to 16 splits' in flight at once)
        for (int idx = tid; idx < HPB * HEAD_DIM / 4; idx += BLOCK) {
            const int h = idx / (HEAD_DIM / 4), d = 4 * (idx % (HEAD_DIM / 4));
            const float* sc = scratch + (unsigned long long)(hb + h) * N_SPLITS * SROW + d;
            float4 O = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 16
            for (int sp = 0; sp < n_active; ++sp) {
                const float4 x = __ldcg(reinterpret_cast<const float4*>(sc + sp * SROW));
                const float w = wsm[h * N_SPLITS + sp];
                O.x += x.x * w, O.y += x.y * w, O.z += x.z * w, O.w += x.w * w;
            }
            const float L = lsm[h];
            *reinterpret_cast<float4*>(out + (hb + h) * HEAD_DIM + d) = make_float4(O.x / L, O.y / L, O.z / L, O.w / L);
        }
        }
    }
    if (tid == 0) tickets[bx] = 0u;
#endif
    (void)out;
    (void)scratch;
    (void)seq_ptr;
    (void)tickets;
