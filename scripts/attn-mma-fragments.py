#!/usr/bin/env python3
# A model of attention_decode.cu's MMA path (gate attn.decode=mma) for one warp and one 16-position
# step: the lanes' loads and fragments written as the kernel forms them, pushed through the PTX
# m16n8k16 .f16 fragment layouts (A rows g / g+8, k 2c.. / 2c+8..; B k 2c.. / 2c+8.., column g; C
# row g, columns 2c, 2c+1), compared with softmax(q K^T / sqrt(d)) V. It checks the index mapping
# (permuted k order of q/K, V row pairs, the output dims VD(n, t)) without a GPU; the kernel itself
# is tested on the GPU by kernels_vs_cpu (variants gated+attn-mma*). Needs numpy (python3-numpy).
# Run: python3 scripts/attn-mma-fragments.py  (prints the relative RMS error per case; exit 1 if > 3e-3)
import numpy as np
rng = np.random.default_rng(1)
# a register is a (low-k element, high-k element) pair
def mma(aregs, bregs, cregs):
    # aregs[lane] = 4 regs of pairs; bregs[lane] = 2 regs; cregs[lane] = 4 floats -> d per lane
    A = np.zeros((16, 16)); B = np.zeros((16, 8)); C = np.zeros((16, 8))
    for lane in range(32):
        g, c = lane >> 2, lane & 3
        a = aregs[lane]
        A[g, 2*c:2*c+2] = a[0]; A[g+8, 2*c:2*c+2] = a[1]; A[g, 2*c+8:2*c+10] = a[2]; A[g+8, 2*c+8:2*c+10] = a[3]
        b = bregs[lane]
        B[2*c:2*c+2, g] = b[0]; B[2*c+8:2*c+10, g] = b[1]
        cc = cregs[lane]
        C[g, 2*c:2*c+2] = cc[0:2]; C[g+8, 2*c:2*c+2] = cc[2:4]
    D = A @ B + C
    out = []
    for lane in range(32):
        g, c = lane >> 2, lane & 3
        out.append([D[g, 2*c], D[g, 2*c+1], D[g+8, 2*c], D[g+8, 2*c+1]])
    return out
def run(HD, QPG=4, pw=0, first=0, end=16):
    MKU, MVU, MNT = HD // 32, HD // 64, HD // 8
    K = rng.standard_normal((16, HD)).astype(np.float16).astype(np.float64)
    V = rng.standard_normal((16, HD)).astype(np.float16).astype(np.float64)
    q = rng.standard_normal((QPG, HD))
    QS = 1.0 / np.sqrt(HD) * 1.4426950408889634
    # q fragments per lane
    qa = {}
    for lane in range(32):
        g, c = lane >> 2, lane & 3
        regs = []
        for u in range(MKU):
            x = q[g, 32*u + 8*c: 32*u + 8*c + 8] if g < QPG else np.zeros(8)
            x = x.astype(np.float16).astype(np.float64)
            regs.append([(x[0], x[1]), (x[2], x[3])])  # k-step 2u: (a0, a2)
            regs.append([(x[4], x[5]), (x[6], x[7])])  # k-step 2u+1
        qa[lane] = regs
    def valid(p): return first <= p < end
    # K loads: kq[lane][j][u] = 8 halves
    kq = {}; vq = {}
    for lane in range(32):
        g, c = lane >> 2, lane & 3
        kq[lane] = [[K[pw + 8*j + g - 0, 32*u + 8*c: 32*u + 8*c + 8] if valid(pw + 8*j + g) else np.zeros(8) for u in range(MKU)] for j in range(2)]
        rows = []
        for r in range(4):
            p = pw + 2*c + (r & 1) + 8*(r >> 1)
            rows.append(np.concatenate([V[p, 64*x + 8*g: 64*x + 8*g + 8] for x in range(MVU)]) if valid(p) else np.zeros(MNT))
        vq[lane] = rows
    # S
    sc = {lane: [[0.0, 0.0], [0.0, 0.0]] for lane in range(32)}
    for j in range(2):
        for s in range(2*MKU):
            u, e = s // 2, s % 2
            a = {lane: [qa[lane][s][0], (0, 0), qa[lane][s][1], (0, 0)] for lane in range(32)}
            b = {}
            for lane in range(32):
                w = kq[lane][j][u]  # 8 halves = words x,y,z,w as pairs
                words = [(w[0], w[1]), (w[2], w[3]), (w[4], w[5]), (w[6], w[7])]
                b[lane] = [words[2*e], words[2*e + 1]]
            cin = {lane: [sc[lane][j][0], sc[lane][j][1], 0, 0] for lane in range(32)}
            d = mma(a, b, cin)
            for lane in range(32): sc[lane][j] = [d[lane][0], d[lane][1]]
    # softmax (single step from m = -inf)
    o = {}; mres = {}; lres = {}
    pr = {}
    for lane in range(32):
        g, c = lane >> 2, lane & 3
        vals = []
        for j in range(2):
            for i in range(2):
                p = pw + 8*j + 2*c + i
                sc[lane][j][i] = sc[lane][j][i] * QS if valid(p) else -np.inf
    for lane in range(32):
        quad = [l for l in range(32) if l >> 2 == lane >> 2]
        mx = max(max(sc[l][j][i] for j in range(2) for i in range(2)) for l in quad)
        mr = 0.0 if mx == -np.inf else mx
        pr[lane] = [[np.exp2(sc[lane][j][i] - mr) for i in range(2)] for j in range(2)]
        mres[lane] = mx
        lres[lane] = sum(pr[lane][j][i] for j in range(2) for i in range(2))
    # O
    for lane in range(32): o[lane] = [[0.0, 0.0] for _ in range(MNT)]
    for t in range(MNT):
        a = {}
        b = {}
        for lane in range(32):
            p16 = [np.float64(np.float16(x)) for x in (pr[lane][0][0], pr[lane][0][1], pr[lane][1][0], pr[lane][1][1])]
            a[lane] = [(p16[0], p16[1]), (0, 0), (p16[2], p16[3]), (0, 0)]
            rows = vq[lane]
            b[lane] = [(rows[0][t], rows[1][t]), (rows[2][t], rows[3][t])]
        cin = {lane: [o[lane][t][0], o[lane][t][1], 0, 0] for lane in range(32)}
        d = mma(a, b, cin)
        for lane in range(32): o[lane][t] = [d[lane][0], d[lane][1]]
    # gather per head
    out = np.zeros((QPG, HD))
    for h in range(QPG):
        L = sum(lres[l] for l in range(32) if l >> 2 == h)
        for lane in range(32):
            g, c = lane >> 2, lane & 3
            if g != h: continue
            for t in range(MNT):
                out[h, 64*(t//8) + 8*(2*c) + t%8] = o[lane][t][0] / L
                out[h, 64*(t//8) + 8*(2*c+1) + t%8] = o[lane][t][1] / L
    # reference
    ref = np.zeros((QPG, HD))
    for h in range(QPG):
        s = np.array([q[h] @ K[p] / np.sqrt(HD) if valid(p) else -np.inf for p in range(16)])
        w = np.exp(s - s.max()); w /= w.sum()
        ref[h] = w @ V
    err = np.sqrt(((out - ref)**2).sum() / (ref**2).sum())
    print(f"HD {HD} valid [{first},{end}): rel rms err {err:.2e}")
    if err > 3e-3: raise SystemExit(1)
run(128); run(64); run(128, first=3, end=11); run(64, end=5)
