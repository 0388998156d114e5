#!/usr/bin/env python3
"""Triton baseline for the tensor-core GEMM benchmark (bench/kernels/mma_bench).

Times an autotuned Triton matmul (bf16, fp16, and tf32 = fp32 storage with
tl.dot(input_precision="tf32")) on one GPU for a list of shapes and prints one
JSON object to stdout:

  {"device": "...", "torch": "...", "triton": "...", "device_info": {...},
   "method": "...", "error_defs": "...", "rows": [{...}, ...]}

one row per shape: family, precision, m, n, k, layout_a, layout_b, lda, ldb,
padded, median_us (and the median of a second batch, median2_us), torch_us
(torch.matmul, i.e. cuBLAS, timed the same way), the winning config,
max_abs_err / max_rel_err / rel_fro_err against torch.matmul in fp32 (TF32
off), ok, and error (a message, only when the shape failed).

Layouts, as mma_bench: A is M x K row-major ("N") or stored K x M row-major
("T"); B is K x N row-major ("N") or stored N x K row-major ("T"); C is M x N
row-major, ldc = N, in the inputs' type (fp32 for tf32). lda / ldb are the
leading dimensions of the stored matrices (tight: K or M for A, N or K for B;
padded rows when larger). The kernel takes all four layouts through strides;
nothing is copied or transposed.

The kernel: a tiled tl.dot matmul, fp32 accumulators, grouped program order
(GROUP_M rows of tiles share B), ragged M / N edges by index wrap-around and a
masked store, a ragged K edge by masked loads (compiled in only when K is not
a multiple of BLOCK_K). Split-K (SPLIT_K > 1, only for shapes whose tiles
cannot fill the SMs) in one launch: each K slice adds its partial tile into an
fp32 workspace with atomic adds, then bumps a per-tile counter (acq_rel); the
last slice to arrive writes C and leaves workspace and counter zeroed for the
next launch. Every tile shape is also offered split-free (SPLIT_K = 1).
@triton.autotune picks the config, keyed on M, N, K and the strides (the input
types are part of Triton's key).

Timing (/work/.library/device/METHOD.md, as mma_bench): the autotuner runs
first (untimed; its own do_bench with a short warm-up), then 3 warm-up
launches, then --reps timed launches: before each, a 256 MiB buffer is
written (L2 flush, outside the events), then a spin kernel
(torch.cuda._sleep, ~100 us) so that the host has queued the launch before
the start event fires; CUDA events around the launch alone;
the median. Inputs are random in [-1, 1]. The output is poisoned with NaN
before the checked launch.

  python3 bench/kernels/triton_bench.py [--shapes FILE] [--only S] [--reps N]
      [--budget-s S] [--partial FILE] [--no-precompile] [--list]

A shapes file has one shape a line, '#' comments:
  [family] precision layout m n k [lda ldb]     e.g.  decode bf16 NT 4096 1 4096
Without --shapes, the default list below (mma_bench's shapes plus three
transformer projections). Progress, versions, clocks and a markdown table go
to stderr.
"""
import argparse
import json
import math
import multiprocessing
import os
import subprocess
import sys
import time

import torch
import triton
import triton.language as tl
import triton.testing

# ----------------------------------------------------------------------------
# Shapes
# ----------------------------------------------------------------------------


def default_shapes():
    s = []
    for n in (1, 2, 4, 8, 16):
        s.append(("decode", "bf16", "NT", 4096, n, 4096, 0, 0))
        s.append(("decode", "bf16", "NT", 16384, n, 8192, 0, 0))
    s.append(("decode", "bf16", "NT", 8192, 4, 8192, 0, 0))
    for n in (1024, 4096, 7168):
        s.append(("mlp", "bf16", "NT", n, 16, n, 0, 0))
    for k in (16384, 65536, 131072):
        s.append(("cov", "bf16", "NT", 64, 64, k, 0, 0))
        s.append(("cov", "tf32", "NT", 64, 64, k, 0, 0))
    for n in (1024, 2048, 4096, 8192):
        s.append(("square", "bf16", "NN", n, n, n, 0, 0))
    s.append(("square", "fp16", "NN", 4096, 4096, 4096, 0, 0))
    s.append(("square", "tf32", "NN", 4096, 4096, 4096, 0, 0))
    s.append(("square", "tf32", "NN", 2048, 2048, 2048, 0, 0))
    s.append(("odd", "bf16", "NN", 1000, 1000, 1000, 0, 0))
    s.append(("odd", "bf16", "NN", 1023, 4097, 515, 520, 4104))
    s.append(("odd", "bf16", "NN", 1023, 4097, 515, 0, 0))
    # transformer projections: activations (M tokens x K) times weights
    # stored N x K, as a linear layer keeps them.
    s.append(("transformer", "bf16", "NT", 2048, 4096, 4096, 0, 0))
    s.append(("transformer", "bf16", "NT", 4096, 4096, 11008, 0, 0))
    s.append(("transformer", "bf16", "NT", 512, 768, 768, 0, 0))
    return s


PRECISIONS = ("bf16", "fp16", "tf32")


def parse_shapes(path):
    out = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            family = "custom"
            if line[0] not in PRECISIONS:
                family, line = line[0], line[1:]
            if len(line) not in (5, 7) or line[0] not in PRECISIONS or \
                    len(line[1]) != 2 or any(c not in "NT" for c in line[1]):
                raise SystemExit(f"{path}:{lineno}: want '[family] "
                                 "bf16|fp16|tf32 NN|NT|TN|TT m n k [lda ldb]'")
            nums = [int(v) for v in line[2:]] + [0, 0]
            out.append((family, line[0], line[1]) + tuple(nums[:5]))
    return out


def shape_line(s):
    family, prec, lay, m, n, k, lda, ldb = s
    tail = f" {lda} {ldb}" if (lda or ldb) else ""
    return f"{family} {prec} {lay} {m} {n} {k}{tail}"


def leading_dims(s):
    """Actual (lda, ldb) of the stored matrices; 0 in the shape means tight."""
    _, _, lay, m, n, k, lda, ldb = s
    tight_a = k if lay[0] == "N" else m
    tight_b = n if lay[1] == "N" else k
    lda = lda or tight_a
    ldb = ldb or tight_b
    if lda < tight_a or ldb < tight_b:
        raise ValueError(f"leading dimension below the tight one: {shape_line(s)}")
    return lda, ldb, (lda != tight_a or ldb != tight_b)


# ----------------------------------------------------------------------------
# Configurations
# ----------------------------------------------------------------------------

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
LARGE_TILES = [
    (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4),
    (128, 128, 32, 4, 4), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4),
    (64, 64, 64, 4, 4), (128, 256, 32, 8, 3),
]
# N <= 32: decode / MLP with a few activation columns.
SKINNY_N_TILES = [
    (64, 16, 256, 4, 3), (128, 16, 128, 4, 4), (64, 16, 128, 4, 5),
    (32, 16, 256, 2, 4), (64, 32, 128, 4, 4), (128, 32, 128, 4, 4),
    (64, 32, 256, 4, 3),
]
# M <= 32 (not in the default list; the mirror image of the above).
SKINNY_M_TILES = [
    (16, 64, 256, 4, 3), (16, 128, 128, 4, 4), (32, 64, 128, 4, 4),
    (32, 128, 128, 4, 4),
]
# Small C with long K (covariance): split-K does the work.
SMALL_TILES = [
    (64, 64, 128, 4, 4), (64, 64, 64, 4, 5), (32, 64, 128, 4, 4),
    (32, 32, 128, 4, 4),
]
SPLITS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
GROUP_M = 8
SMEM_LIMIT = 200 * 1024  # of the H100's 227 KiB, leaving room for the epilogue
SM_COUNT = 132  # replaced by the device's count in main()


def _all_configs():
    tiles = []
    for t in LARGE_TILES + SKINNY_N_TILES + SKINNY_M_TILES + SMALL_TILES:
        if t not in tiles:
            tiles.append(t)
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                           "GROUP_M": GROUP_M, "SPLIT_K": s},
                          num_warps=w, num_stages=st)
            for (bm, bn, bk, w, st) in tiles for s in SPLITS]


def _pow2_ceil(x):
    return 1 << max(0, (int(x) - 1).bit_length())


def workspace_elems(m, n):
    """fp32 split-K workspace size; split-K tiles must fit in it."""
    r = lambda v: (v + 255) // 256 * 256
    return min(r(m) * r(n), 16 << 20)


def choose(M, N, K, elem_bytes, ws_elems, lock_elems):
    """The (tile, split) pairs offered to the autotuner for one shape."""
    if N <= 32:
        bn = 16 if N <= 16 else 32
        tiles = [t for t in SKINNY_N_TILES if t[1] == bn]
    elif M <= 32:
        bm = 16 if M <= 16 else 32
        tiles = [t for t in SKINNY_M_TILES if t[0] == bm]
    elif M <= 128 and N <= 128:
        tiles = [t for t in SMALL_TILES
                 if t[0] <= _pow2_ceil(M) and t[1] <= _pow2_ceil(N)]
    else:
        tiles = [t for t in LARGE_TILES
                 if t[0] <= max(64, _pow2_ceil(M)) and t[1] <= max(64, _pow2_ceil(N))]
    tiles = [t for t in tiles
             if t[4] * (t[0] * t[2] + t[2] * t[1]) * elem_bytes <= SMEM_LIMIT]
    picks = []
    for (bm, bn, bk, w, st) in tiles:
        n_tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
        iters = triton.cdiv(K, bk)
        splits = [1]
        if n_tiles < SM_COUNT and n_tiles * bm * bn <= ws_elems and \
                n_tiles <= lock_elems:
            cand = [s for s in SPLITS if s > 1 and n_tiles * s <= 4 * SM_COUNT
                    and iters >= 4 * s]
            splits += cand[-2:]  # the two largest that keep >= 4 K steps
        picks += [((bm, bn, bk, w, st), s) for s in splits]
    return picks


def _prune(configs, named_args, **kwargs):
    a = named_args["a_ptr"]
    keep = set(choose(named_args["M"], named_args["N"], named_args["K"],
                      a.element_size(), named_args["ws_ptr"].numel(),
                      named_args["lock_ptr"].numel()))
    out = [c for c in configs
           if ((c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"],
                c.num_warps, c.num_stages), c.kwargs["SPLIT_K"]) in keep]
    return out or configs[:1]


def _tune_bench(fn, quantiles):
    # Short warm-up and repetition window: the winner is re-timed properly.
    return triton.testing.do_bench(fn, warmup=5, rep=20, quantiles=quantiles)


# ----------------------------------------------------------------------------
# Kernel
# ----------------------------------------------------------------------------


@triton.autotune(
    configs=_all_configs(),
    key=["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn"],
    prune_configs_by={"early_config_prune": _prune},
    do_bench=_tune_bench,
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, ws_ptr, lock_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, SPLIT_K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  K_MOD256: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    # SPLIT_K is a run-time argument (Triton still specialises the value 1),
    # so the split counts share one compiled kernel per tile shape.
    tile_id = tl.program_id(0)
    pid_k = tl.program_id(1)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # Grouped order: consecutive programs walk GROUP_M tile rows column by
    # column, so the B tiles they share are read from L2.
    per_group = GROUP_M * tiles_n
    group_first_m = (tile_id // per_group) * GROUP_M
    group_rows = min(tiles_m - group_first_m, GROUP_M)
    pid_m = group_first_m + (tile_id % per_group) % group_rows
    pid_n = (tile_id % per_group) // group_rows

    # Rows / columns past the edge wrap around (their results are never
    # stored), so the operand loads need no M / N mask.
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    kk = tl.arange(0, BLOCK_K)

    EVEN_K = K_MOD256 % BLOCK_K == 0  # K_MOD256 = K % 256, BLOCK_K | 256
    if EVEN_K:
        k_steps = K // BLOCK_K
    else:
        k_steps = tl.cdiv(K, BLOCK_K)
    steps_per_split = tl.cdiv(k_steps, SPLIT_K)
    step_lo = pid_k * steps_per_split
    step_hi = min(step_lo + steps_per_split, k_steps)

    k0 = step_lo * BLOCK_K
    a_ptrs = a_ptr + rows[:, None] * stride_am + (k0 + kk)[None, :] * stride_ak
    b_ptrs = b_ptr + (k0 + kk)[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(step_lo, step_hi):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - step * BLOCK_K
            a = tl.load(a_ptrs, mask=kk[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=kk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    out_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    out_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + out_m[:, None] * stride_cm + out_n[None, :] * stride_cn
    c_mask = (out_m[:, None] < M) & (out_n[None, :] < N)
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
    else:
        tile = pid_m * tiles_n + pid_n
        w_ptrs = (ws_ptr + tile * (BLOCK_M * BLOCK_N)
                  + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N
                  + tl.arange(0, BLOCK_N)[None, :])
        tl.atomic_add(w_ptrs, acc, sem="relaxed", scope="gpu")
        tl.debug_barrier()  # every thread's adds issued before the release
        arrived = tl.atomic_add(lock_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:  # the last slice: the sum is complete
            total = tl.load(w_ptrs, cache_modifier=".cg")
            tl.store(c_ptrs, total.to(c_ptr.dtype.element_ty), mask=c_mask)
            tl.store(w_ptrs, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32))
            tl.atomic_xchg(lock_ptr + tile, 0, sem="relaxed", scope="gpu")


def _grid(meta):
    return (triton.cdiv(meta["M"], meta["BLOCK_M"]) *
            triton.cdiv(meta["N"], meta["BLOCK_N"]), meta["SPLIT_K"])


def kernel_args(a, b, c, ws, locks, M, N, K, sam, sak, sbk, sbn):
    return (a, b, c, ws, locks, M, N, K, sam, sak, sbk, sbn, N, 1)


def meta_args(K):
    return {"K_MOD256": K % 256, "INPUT_PRECISION": "tf32"}


# ----------------------------------------------------------------------------
# Parallel pre-compilation (fills Triton's disk cache; the autotuner then
# loads the kernels instead of compiling them one after another)
# ----------------------------------------------------------------------------

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}


def strides(s):
    _, _, lay, m, n, k, _, _ = s
    lda, ldb, _ = leading_dims(s)
    sam, sak = (lda, 1) if lay[0] == "N" else (1, lda)
    sbk, sbn = (ldb, 1) if lay[1] == "N" else (1, ldb)
    return sam, sak, sbk, sbn


def _spec(v):
    return "1" if v == 1 else ("D" if v % 16 == 0 else "x")


def compile_jobs(shapes):
    jobs, seen = [], set()
    for s in shapes:
        _, prec, _, m, n, k, _, _ = s
        try:
            sam, sak, sbk, sbn = strides(s)
        except ValueError:
            continue
        ws = workspace_elems(m, n)
        esize = torch.empty(0, dtype=DTYPES[prec]).element_size()
        for tile, split in choose(m, n, k, esize, ws, ws // 256 + 1):
            ints = (m, n, k, sam, sak, sbk, sbn, n, 1, split)
            key = (prec, tuple(_spec(v) for v in ints), k % 256, tile,
                   split == 1)
            if key in seen:
                continue
            seen.add(key)
            jobs.append((prec, m, n, k, sam, sak, sbk, sbn, tile, split))
    return jobs


def _compile_worker(jobs):
    done, failed = 0, []
    for (prec, m, n, k, sam, sak, sbk, sbn, tile, split) in jobs:
        bm, bn, bk, w, st = tile
        dt = DTYPES[prec]
        a = torch.empty(64, dtype=dt, device="cuda")
        c = torch.empty(64, dtype=dt, device="cuda")
        ws = torch.empty(64, dtype=torch.float32, device="cuda")
        locks = torch.empty(64, dtype=torch.int32, device="cuda")
        cfg = triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                             "GROUP_M": GROUP_M, "SPLIT_K": split},
                            num_warps=w, num_stages=st)
        try:
            matmul_kernel.fn.warmup(
                *kernel_args(a, a, c, ws, locks, m, n, k, sam, sak, sbk, sbn),
                grid=(1,), **meta_args(k), **cfg.all_kwargs())
            done += 1
        except Exception as e:  # the autotuner will see it again
            failed.append(f"{prec} {tile} split {split}: "
                          f"{str(e).splitlines()[0][:120] if str(e) else type(e).__name__}")
    return done, failed


def precompile(shapes, workers, timeout_s):
    jobs = compile_jobs(shapes)
    if not jobs:
        return
    t0 = time.time()
    workers = max(1, min(workers, len(jobs)))
    chunks = [jobs[i::workers] for i in range(workers)]
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(workers)
    try:
        res = pool.map_async(_compile_worker, chunks).get(timeout=timeout_s)
        done = sum(r[0] for r in res)
        failed = [f for r in res for f in r[1]]
        log(f"# precompile: {done}/{len(jobs)} kernels in {time.time() - t0:.1f} s "
            f"({workers} processes); {len(failed)} failed")
        for f in failed[:10]:
            log(f"#   {f}")
        pool.close()
    except Exception as e:
        log(f"# precompile stopped after {time.time() - t0:.1f} s: "
            f"{type(e).__name__}: {e}; the autotuner compiles the rest")
        pool.terminate()
    pool.join()


# ----------------------------------------------------------------------------
# Measurement
# ----------------------------------------------------------------------------

START = time.time()


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def set_tf32(on):
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):
        m.fp32_precision = "tf32" if on else "ieee"
    else:
        m.allow_tf32 = on


def make_operand(rows, cols, ld, transposed, dtype, gen):
    """A logical rows x cols matrix. Not transposed: stored rows x ld
    (row-major, ld >= cols). Transposed: stored cols x ld (ld >= rows), the
    logical matrix its transpose."""
    srows = cols if transposed else rows
    store = torch.rand(srows, ld, device="cuda", generator=gen,
                       dtype=torch.float32).mul_(2).sub_(1).to(dtype)
    view = store[:, :rows] if transposed else store[:, :cols]
    return view.t() if transposed else view


FLUSH_READ = False
SPIN_CYCLES = 200_000  # ~100 us at 1.98 GHz (torch_conv_bench.py's)


def timed_median_us(launch, flush, reps):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if FLUSH_READ:  # 256 MiB read: A and B leave the L2, which stays clean
            flush.sum(dtype=torch.int64)
        else:
            flush.zero_()  # 256 MiB written: A and B leave the 50 MB L2
        # The launch goes through Triton's Python launcher and autotuner
        # (tens of us of host time): a spin keeps the GPU busy while the host
        # queues the start event and the kernel, so the events hold the
        # kernel's GPU time, not the host's (without it, 512^3 read 31 us).
        torch.cuda._sleep(SPIN_CYCLES)
        starts[i].record()
        launch()
        ends[i].record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))
    return t[len(t) // 2], t[0]


def run_shape(s, flush, reps, gen):
    family, prec, lay, M, N, K, _, _ = s
    lda, ldb, padded = leading_dims(s)
    row = {"family": family, "precision": prec, "m": M, "n": N, "k": K,
           "layout_a": lay[0], "layout_b": lay[1], "lda": lda, "ldb": ldb,
           "padded": padded}
    dt = DTYPES[prec]
    A = make_operand(M, K, lda, lay[0] == "T", dt, gen)
    B = make_operand(K, N, ldb, lay[1] == "T", dt, gen)
    C = torch.empty(M, N, device="cuda", dtype=dt)
    ws_n = workspace_elems(M, N)
    ws = torch.zeros(ws_n, device="cuda", dtype=torch.float32)
    locks = torch.zeros(ws_n // 256 + 1, device="cuda", dtype=torch.int32)
    sam, sak = A.stride()
    sbk, sbn = B.stride()
    assert (sam, sak, sbk, sbn) == strides(s), (A.stride(), B.stride())
    args = kernel_args(A, B, C, ws, locks, M, N, K, sam, sak, sbk, sbn)
    meta = meta_args(K)

    def launch():
        matmul_kernel[_grid](*args, **meta)

    matmul_kernel.configs_timings = {}
    t0 = time.time()
    launch()  # autotunes (untimed)
    torch.cuda.synchronize()
    row["tune_s"] = round(time.time() - t0, 2)
    best = matmul_kernel.best_config
    timings = getattr(matmul_kernel, "configs_timings", None) or {}
    row["configs_tried"] = len(timings)
    row["configs_failed"] = sum(1 for v in timings.values()
                                if not math.isfinite(v[0] if isinstance(v, (list, tuple)) else v))
    kw = best.kwargs
    row.update({"block_m": kw["BLOCK_M"], "block_n": kw["BLOCK_N"],
                "block_k": kw["BLOCK_K"], "group_m": kw["GROUP_M"],
                "split_k": kw["SPLIT_K"], "num_warps": best.num_warps,
                "num_stages": best.num_stages})
    row["config"] = (f"BLOCK_M={kw['BLOCK_M']} BLOCK_N={kw['BLOCK_N']} "
                     f"BLOCK_K={kw['BLOCK_K']} GROUP_M={kw['GROUP_M']} "
                     f"SPLIT_K={kw['SPLIT_K']} num_warps={best.num_warps} "
                     f"num_stages={best.num_stages}")

    # Check: poisoned output, one launch, against torch.matmul in fp32.
    C.fill_(float("nan"))
    launch()
    set_tf32(False)
    ref = torch.matmul(A.float(), B.float())
    out = C.float()
    finite = bool(torch.isfinite(out).all().item())
    diff = (out - ref).abs()
    ref_max = ref.abs().max().item()
    row["max_abs_err"] = diff.max().item() if finite else None
    row["max_rel_err"] = (diff.max().item() / max(ref_max, 1e-30)) if finite else None
    row["rel_fro_err"] = ((out - ref).norm() / ref.norm()).item() if finite else None
    limit = 1e-2 if prec == "tf32" else 5e-2  # of max|ref|: bf16 C rounding ~4e-3
    row["ok"] = finite and row["max_rel_err"] <= limit
    del ref, out, diff

    for _ in range(3):
        launch()
    row["median_us"], row["min_us"] = timed_median_us(launch, flush, reps)
    row["median2_us"], _ = timed_median_us(launch, flush, reps)
    row["reps"] = reps

    set_tf32(prec == "tf32")
    Ct = torch.empty(M, N, device="cuda", dtype=dt)
    tlaunch = lambda: torch.matmul(A, B, out=Ct)
    for _ in range(3):
        tlaunch()
    row["torch_us"], _ = timed_median_us(tlaunch, flush, reps)
    set_tf32(False)

    us = row["median_us"]
    flops = 2.0 * M * N * K
    nbytes = (M * K + K * N + M * N) * C.element_size()
    row["tflops"] = flops / (us * 1e-6) / 1e12
    row["gbps"] = nbytes / (us * 1e-6) / 1e9
    row["torch_over_triton"] = row["torch_us"] / us
    return row


def device_info():
    p = torch.cuda.get_device_properties(0)
    info = {"name": p.name, "sms": p.multi_processor_count,
            "l2_mb": getattr(p, "L2_cache_size", 0) / 2**20,
            "memory_gib": round(p.total_memory / 2**30, 1),
            "cc": f"{p.major}.{p.minor}", "cuda_runtime": torch.version.cuda}
    q = ("driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
         "power.draw,power.limit,temperature.gpu,persistence_mode")
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}",
                              "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip().splitlines()
        if out:
            info["nvidia_smi"] = dict(zip(q.split(","),
                                          [v.strip() for v in out[0].split(",")]))
    except Exception as e:  # no nvidia-smi: clocks unknown
        info["nvidia_smi_error"] = str(e)
    return info


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def table(rows):
    lines = ["| family | M x N x K layout | prec | Triton us | torch us | "
             "torch/Triton | TFLOP/s | GB/s | max rel err | config |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        shape = (f"{r['m']}x{r['n']}x{r['k']} {r['layout_a']}{r['layout_b']}"
                 + (f" lda={r['lda']} ldb={r['ldb']}" if r.get("padded") else ""))
        if "median_us" not in r:
            lines.append(f"| {r['family']} | {shape} | {r['precision']} | - | - | - "
                         f"| - | - | - | {r.get('error', '')} |")
            continue
        cfg = (f"{r['block_m']}x{r['block_n']}x{r['block_k']} w{r['num_warps']} "
               f"s{r['num_stages']} sk{r['split_k']}")
        lines.append(
            f"| {r['family']} | {shape} | {r['precision']} | {r['median_us']:.1f} | "
            f"{fmt(r.get('torch_us'), '.1f')} | {fmt(r.get('torch_over_triton'), '.2f')} | "
            f"{r['tflops']:.1f} | {r['gbps']:.0f} | {fmt(r['max_rel_err'], '.1e')}"
            f"{'' if r['ok'] else ' FAIL'} | {cfg} |")
    return "\n".join(lines)


def clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v


def main():
    global SM_COUNT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help="shape file (default: the built-in list)")
    ap.add_argument("--only", default="", help="substring of 'family prec layout m n k'")
    ap.add_argument("--reps", type=int, default=51, help="timed launches (>= 21)")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="start no new shape after this many seconds (0: none)")
    ap.add_argument("--partial", help="rewrite this JSON file after every shape")
    ap.add_argument("--no-precompile", action="store_true")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--list", action="store_true", help="print the shapes and exit")
    ap.add_argument("--flush", choices=("write", "read"), default="write",
                    help="L2 flush before each timed launch: write 256 MiB "
                    "(leaves L2 dirty) or read it (as mma_bench --flush read)")
    ap.add_argument("--tsv", help="also write one line per timed shape, "
                    "'precision layout m n k lda ldb median_us config', "
                    "for mma_bench --triton")
    args = ap.parse_args()
    args.reps = max(21, args.reps)
    global FLUSH_READ
    FLUSH_READ = args.flush == "read"

    shapes = parse_shapes(args.shapes) if args.shapes else default_shapes()
    shapes = [s for s in shapes if args.only in shape_line(s)]
    if args.list:
        print("\n".join(shape_line(s) for s in shapes))
        return 0
    if not torch.cuda.is_available():
        log("triton_bench: no GPU")
        return 1

    info = device_info()
    SM_COUNT = info["sms"]
    log(f"# device {info['name']}, {info['sms']} SMs, L2 {info['l2_mb']:.0f} MB, "
        f"cc {info['cc']}, CUDA runtime {info['cuda_runtime']}")
    log(f"# nvidia-smi: {info.get('nvidia_smi', info.get('nvidia_smi_error'))}")
    log(f"# torch {torch.__version__}, triton {triton.__version__}, python "
        f"{sys.version.split()[0]}; {len(shapes)} shapes, {args.reps} reps")

    result = {
        "device": info["name"], "torch": torch.__version__,
        "triton": triton.__version__, "device_info": info,
        "method": ("Triton matmul autotuned per shape (untimed; its do_bench "
                   "warmup 5 ms rep 20 ms), 3 warm-ups, then per timed launch "
                   f"a 256 MiB buffer {'read' if FLUSH_READ else 'write'} (L2 flush, outside the events) and a "
                   "~100 us spin (torch.cuda._sleep: the host queues the launch before the start event fires), CUDA "
                   "events around the launch alone, median of reps "
                   "(median2_us: a second batch); torch_us: torch.matmul "
                   "(cuBLAS) timed the same way; inputs uniform in [-1, 1]"),
        "error_defs": ("against torch.matmul of the fp32-upcast inputs with "
                       "TF32 off: max_abs_err = max|C - ref|, max_rel_err = "
                       "max|C - ref| / max|ref|, rel_fro_err = ||C - ref||_F / "
                       "||ref||_F; C poisoned with NaN before the checked launch"),
        "layouts": ("A: N = M x K row-major, T = stored K x M; B: N = K x N "
                    "row-major, T = stored N x K; C: M x N row-major; lda/ldb "
                    "are the stored leading dimensions"),
        "rows": [],
    }

    if not args.no_precompile:
        precompile(shapes, args.workers, timeout_s=75)

    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(17)
    for i, s in enumerate(shapes):
        if args.budget_s and time.time() - START > args.budget_s:
            row = dict(zip(("family", "precision"), s[:2]))
            row.update({"m": s[3], "n": s[4], "k": s[5], "layout_a": s[2][0],
                        "layout_b": s[2][1], "error": "skipped: --budget-s spent"})
            result["rows"].append(row)
            log(f"# [{i + 1}/{len(shapes)}] {shape_line(s)}: skipped (budget)")
            continue
        t0 = time.time()
        try:
            row = run_shape(s, flush, args.reps, gen)
        except Exception as e:
            row = {"family": s[0], "precision": s[1], "m": s[3], "n": s[4],
                   "k": s[5], "layout_a": s[2][0], "layout_b": s[2][1],
                   "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
        result["rows"].append(row)
        torch.cuda.empty_cache()
        if "median_us" in row:
            log(f"# [{i + 1}/{len(shapes)}] {shape_line(s)}: {row['median_us']:.1f} us "
                f"(again {row['median2_us']:.1f}; torch {row['torch_us']:.1f}) "
                f"{row['tflops']:.1f} TFLOP/s, rel err {fmt(row['max_rel_err'], '.1e')}"
                f"{'' if row['ok'] else ' FAIL'}; {row['config']}; tuned "
                f"{row['configs_tried']} configs in {row['tune_s']} s; "
                f"{time.time() - t0:.1f} s, at {time.time() - START:.0f} s")
        else:
            log(f"# [{i + 1}/{len(shapes)}] {shape_line(s)}: {row['error']}")
        if args.partial:
            with open(args.partial + ".tmp", "w") as f:
                json.dump(clean(result), f, indent=1)
            os.replace(args.partial + ".tmp", args.partial)

    try:
        after = device_info().get("nvidia_smi")
        if after:
            result["device_info"]["nvidia_smi_after"] = after
            log(f"# nvidia-smi after: {after}")
    except Exception:
        pass
    if args.tsv:
        with open(args.tsv, "w") as f:
            for r in result["rows"]:
                if "median_us" not in r or not r.get("ok"):
                    continue
                f.write(f"{r['precision']} {r['layout_a']}{r['layout_b']} "
                        f"{r['m']} {r['n']} {r['k']} {r['lda']} {r['ldb']} "
                        f"{r['median_us']:.3f} {str(r['config']).replace(' ', '_')}\n")
    log(f"# total {time.time() - START:.0f} s")
    log(table(result["rows"]))
    print(json.dumps(clean(result), indent=1))
    bad = [r for r in result["rows"] if not r.get("ok")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
