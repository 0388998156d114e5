#!/usr/bin/env python3
"""gemm.ffma_k's PTX run by kernels/ptx_sim.py against a float64 reference.

  kernels/ffma_k_sim_test.py BLOCKTUNE_CLI

For each case, `blocktune kernel gemm --family gemm.ffma_k` writes the PTX
and its launch geometry; the interpreter runs the main entry over the grid
twice (cp.async landing late and early, see ptx_sim.py), the split over K
is added here as the reduce entry would, and C must match the reference
(relative Frobenius error below 1e-5; C poisoned with NaN where beta is 0,
padding past N untouched). Small shapes, chosen to hit what the generator
can get wrong: ragged M, N and K (a K tail that is no multiple of 4), a
split with no work, copies that do not fill the threads, every stage
count, N = 1, every WK, clusters of 2 to 8 splits (their sums added in
distributed shared memory); and gemm.ffma_kpk, whose pack entry runs first
(rows of A, B or both that are no multiple of 4 floats, copied into the
workspace, which starts as NaN). Not a GPU test: the GPU test is
tuner/gemm_gemv_gpu_test.cc.
"""
import math
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ptx_sim  # noqa: E402

CASES = [
    # m, n, k, lda, ldb, ldc, params, alpha, beta
    (40, 24, 70, 72, 72, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=3 KG=1", 1.0, 0.5),
    (40, 24, 70, 72, 76, 24, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=32 ST=2 KG=4", 0.75, 0.0),
    (64, 64, 130, 132, 132, 64, "LM=8 TM=4 TN=4 WM=2 WN=4 KC=32 ST=4 KG=2", 1.0, 0.0),
    (100, 1, 37, 40, 40, 1, "LM=32 TM=1 TN=1 WM=2 WN=1 KC=16 ST=2 KG=1", 1.0, -0.5),
    (7, 9, 5, 8, 8, 11, "LM=4 TM=2 TN=1 WM=1 WN=1 KC=16 ST=2 KG=4", 1.0, 0.0),
    (70, 20, 150, 152, 156, 21, "LM=16 TM=2 TN=4 WM=2 WN=2 KC=64 ST=3 KG=1", 1.0, 0.25),
    (33, 40, 61, 64, 64, 40, "LM=8 TM=1 TN=8 WM=4 WN=1 KC=16 ST=4 KG=8", 1.0, 0.0),
    # WK groups of warps splitting each stage, summed in shared memory: with
    # beta, a split over K, splits with no work, and the sums of 3 groups
    # larger than the ring (the shared memory is sized for them).
    (40, 24, 70, 72, 72, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=2 KG=1 WK=2", 1.0, 0.5),
    (64, 64, 130, 132, 132, 64, "LM=8 TM=4 TN=4 WM=1 WN=2 KC=32 ST=3 KG=2 WK=4", 1.0, 0.0),
    (33, 40, 61, 64, 64, 40, "LM=8 TM=1 TN=8 WM=2 WN=1 KC=64 ST=3 KG=8 WK=8", 0.5, 0.0),
    (40, 70, 50, 52, 52, 71, "LM=4 TM=8 TN=8 WM=1 WN=1 KC=16 ST=2 KG=1 WK=4", 1.0, -1.0),
    # CL splits per cluster adding their sums in distributed shared memory:
    # into fewer partial sums (K_G / CL), straight into C where K_G = CL
    # (with beta), with WK groups, a slice of the tile larger than the
    # program's threads, and splits with no work.
    (40, 24, 70, 72, 72, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=3 KG=4 CL=2", 1.0, 0.0),
    (40, 24, 70, 72, 72, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=2 KG=4 CL=4", 0.5, 0.5),
    (64, 64, 130, 132, 132, 64, "LM=8 TM=4 TN=4 WM=1 WN=2 KC=32 ST=3 KG=8 WK=2 CL=8", 1.0, -1.0),
    (33, 40, 61, 64, 64, 40, "LM=4 TM=8 TN=4 WM=2 WN=1 KC=16 ST=3 KG=16 CL=8", 1.0, 0.0),
    (7, 9, 5, 8, 8, 11, "LM=4 TM=2 TN=1 WM=1 WN=1 KC=16 ST=2 KG=8 CL=2", 1.0, 0.25),
    # K_G that is no power of two (v5: the share of K divided, not shifted):
    # 3 and 7 splits of a ragged K (the last split shorter, 7 x 16 > 70 / 16
    # stages: some with none), 6 in clusters of 2 and 3 of 3 never (CL is a
    # power of two), 5 for the packed family.
    (40, 24, 70, 72, 72, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=3 KG=3", 1.0, 0.5),
    (33, 40, 250, 252, 252, 40, "LM=8 TM=1 TN=8 WM=2 WN=1 KC=16 ST=2 KG=7", 1.0, 0.0),
    (40, 24, 130, 132, 132, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=2 KG=6 CL=2", 0.5, 0.0),
    (40, 24, 70, 70, 71, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=3 KG=5", 1.0, 0.0,
     "gemm.ffma_kpk"),
    # gemm.ffma_kpk: rows that are no multiple of 4 floats, copied by the
    # pack entry into the workspace first (after the partial sums): both
    # packed with a split, A only, B only with clusters.
    (40, 24, 70, 70, 71, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=3 KG=4", 1.0, 0.5,
     "gemm.ffma_kpk"),
    (33, 40, 61, 61, 64, 40, "LM=8 TM=1 TN=8 WM=4 WN=1 KC=16 ST=4 KG=1", 1.0, 0.0,
     "gemm.ffma_kpk"),
    (40, 24, 70, 72, 73, 26, "LM=8 TM=2 TN=2 WM=1 WN=2 KC=16 ST=2 KG=4 CL=2", 0.5, 0.5,
     "gemm.ffma_kpk"),
]


def geometry(text):
    def triple(key):
        m = re.search(key + r': (\d+) x (\d+) x (\d+)', text)
        return tuple(int(x) for x in m.groups())
    shared = re.search(r'dynamic shared bytes: (\d+)', text)
    work = re.search(r'workspace bytes: (\d+)', text)
    return (triple('grid'), triple('block'), int(shared.group(1)),
            int(work.group(1)) if work else 0)


def run_case(cli, case, mode, seed):
    m, n, k, lda, ldb, ldc, params, alpha, beta = case[:9]
    family = case[9] if len(case) > 9 else "gemm.ffma_k"
    with tempfile.TemporaryDirectory() as d:
        ptx_path = os.path.join(d, 'k.ptx')
        out = subprocess.run(
            [cli, 'kernel', 'gemm', '--m', str(m), '--n', str(n), '--k', str(k),
             '--layout', 'NT', '--family', family, '--params', params,
             '--lda', str(lda), '--ldb', str(ldb), '--ldc', str(ldc), '-o',
             ptx_path], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stdout + out.stderr)
        ptx = open(ptx_path).read()
    grid, block, shared, workspace = geometry(out.stdout)
    rng = random.Random(seed)
    a = [rng.uniform(-1, 1) for _ in range(m * lda)]
    b = [rng.uniform(-1, 1) for _ in range(n * ldb)]
    c0 = [rng.uniform(-1, 1) for _ in range(m * ldc)]
    mem = ptx_sim.Memory()
    pa, pb = mem.alloc(a), mem.alloc(b)
    c_init = c0 if beta != 0 else [float('nan')] * (m * ldc)
    pc = mem.alloc(c_init)
    # Partial sums the reduce entry adds: K_G / CL (none where K_G = CL:
    # the cluster wrote C). gemm.ffma_kpk's packs follow them.
    kg = int(re.search(r'KG=(\d+)', params).group(1))
    cl = re.search(r'CL=(\d+)', params)
    kg //= int(cl.group(1)) if cl else 1
    pw = mem.alloc([float('nan')] * (workspace // 4)) if workspace else 0
    args = [pa, pb, pc, pw, m, n, k, lda, ldb, ldc, alpha, beta]
    pack = re.search(r'pack entry: (\S+), grid (\d+) x 1 x 1, block (\d+)',
                     out.stdout)
    if pack:
        ptx_sim.run_grid(ptx, pack.group(1), args, mem,
                         (int(pack.group(2)), 1, 1), (int(pack.group(3)), 1, 1),
                         0, mode, seed)
    ptx_sim.run_grid(ptx, 'blocktune_ffma_k', args, mem, grid, block, shared,
                     mode, seed)
    got = [mem.words[pc + 4 * i] for i in range(m * ldc)]
    if kg > 1:  # the reduce entry: C = alpha * sum_z W[z] + beta * C
        for i in range(m):
            for j in range(n):
                s = sum(mem.words[pw + 4 * ((z * m + i) * n + j)]
                        for z in range(kg))
                got[i * ldc + j] = alpha * s + (beta * c0[i * ldc + j]
                                                if beta != 0 else 0.0)
    err = norm = 0.0
    for i in range(m):
        for j in range(n):
            ref = alpha * sum(a[i * lda + l] * b[j * ldb + l] for l in range(k))
            if beta != 0:
                ref += beta * c0[i * ldc + j]
            g = got[i * ldc + j]
            if not math.isfinite(g):
                return 'C[%d][%d] = %r (not written?)' % (i, j, g)
            err += (g - ref) ** 2
            norm += ref * ref
        for j in range(n, ldc):
            want = ptx_sim.f32(c_init[i * ldc + j])
            g = got[i * ldc + j]
            if not (g == want or (math.isnan(g) and math.isnan(want))):
                return 'C[%d][%d] past N was written' % (i, j)
    rel = math.sqrt(err / max(norm, 1e-300))
    return None if rel < 1e-5 else 'relative error %.3g' % rel


def main():
    cli = sys.argv[1]
    failed = 0
    for idx, case in enumerate(CASES):
        for mode in ('late', 'early'):
            try:
                why = run_case(cli, case, mode, 100 + idx)
            except ptx_sim.PtxError as e:
                why = 'interpreter: %s' % e
            tag = '%dx%dx%d %s (%s)' % (case[0], case[1], case[2], case[6], mode)
            print(('ok     ' if why is None else 'FAILED ') + tag +
                  ('' if why is None else ': ' + why))
            failed += why is not None
    print('%d of %d runs failed' % (failed, 2 * len(CASES)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
