// The end of attention_decode.cu's kernel body, textually included inside it (it uses the body's
// locals: the group states o, m, l, the shared arrays, the split geometry): the NG thread groups'
// states merged per query head, then, with several active split blocks, the ticket merge of their
// partial states by the last block. Not a header of its own: no #pragma once.
    // merge the NG group states, MRG_H query heads per round: every group's (o, m, l) into
    // shared memory, one thread per (head, group) for its weight 2^(m_g - M), then every
    // output dim of the round's heads in parallel (groups in order)
    constexpr int ROW = HEAD_DIM + 2;
    // a partial state in scratch: HEAD_DIM outputs, m, l (a float4 merge over 16-byte rows measured
    // slower: docs/performance.md)
    constexpr int SROW = HEAD_DIM + 2;
#pragma unroll
    for (int h0 = 0; h0 < HPB; h0 += MRG_H) {
#pragma unroll
        for (int hh = 0; hh < MRG_H; ++hh) {
            if (h0 + hh >= HPB) break;
            float* st = mrg + (hh * NGM + gi) * ROW;
#pragma unroll
            for (int i = 0; i < VEC; ++i) st[gl * VEC + i] = o[h0 + hh][i];
            if (gl == 0) {
                st[HEAD_DIM] = m[h0 + hh];
                st[HEAD_DIM + 1] = l[h0 + hh];
            }
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
                // the block's state into scratch
                float* sc = scratch + ((unsigned long long)hq * N_SPLITS + blockIdx.y) * SROW;
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
    for (int idx = tid; idx < HPB * HEAD_DIM; idx += BLOCK) {
        const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
        const float* sc = scratch + (unsigned long long)(hb + h) * N_SPLITS * SROW;
        combine([&](int sp, int i) { return __ldcg(sc + sp * SROW + (i == 0 ? d : HEAD_DIM + i - 1)); },
                (hb + h) * HEAD_DIM + d, IntTag<1>());
    }
    } else {
        // (m_s, l_s) of every split read once, in parallel; the per-head loop below touches only
        // shared memory (it used to re-read l_s from L2 split by split, one latency per split)
        __shared__ float wsm[HPB * N_SPLITS], lss[HPB * N_SPLITS], lsm[HPB];
        load_split_ml<HPB, HEAD_DIM, N_SPLITS, BLOCK, SROW>(scratch, hb, n_active, wsm, lss);
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
        for (int idx = tid; idx < HPB * HEAD_DIM; idx += BLOCK) {
            const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
            const float* sc = scratch + (unsigned long long)(hb + h) * N_SPLITS * SROW + d;
            float O = 0.0f;
#pragma unroll 8
            for (int sp = 0; sp < n_active; ++sp) O += __ldcg(sc + sp * SROW) * wsm[h * N_SPLITS + sp];
            put((hb + h) * HEAD_DIM + d, O / lsm[h]);
        }
    }
    if (tid == 0) tickets[bx] = 0u;
#endif
    (void)out;
    (void)scratch;
    (void)seq_ptr;
    (void)tickets;
