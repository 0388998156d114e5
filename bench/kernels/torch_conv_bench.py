#!/usr/bin/env python3
"""PyTorch's cuDNN convolution, the cross-check of the evaluation's conv vendor.

eval_bench times cuDNN through cudnnFindConvolutionForwardAlgorithmEx, the
legacy API. In cuDNN 9 that API offers only a few engines for NHWC bf16,
fp16 and tf32 (IMPLICIT_GEMM and IMPLICIT_PRECOMP_GEMM), while PyTorch goes
through cuDNN's graph API, whose heuristics offer its other engines, and with
torch.backends.cudnn.benchmark it times them and keeps the fastest. A user
who runs a convolution in PyTorch gets that one, so the evaluation takes the
faster of the two as the vendor (bench/eval/report.py).

For every convolution context of an evaluation plan (bench/eval/run.sh plan
writes PREC/plan.tsv), channels-last input and filter in the plan's
precision (tf32: fp32 tensors with torch.backends.cudnn.allow_tf32; fp32:
TF32 off), F.conv2d with the context's padding, stride and dilation:
benchmark mode's own search first (untimed; benchmark_limit 0, so every
engine the heuristics offer, not their first 10), 3 warm-up launches, then --reps
timed launches: before each, a 256 MiB buffer is read (L2 flush, as
eval_bench's --flush read), CUDA events around the convolution alone; the
median. Inputs are random in [-1, 1]. The result is checked against the same
convolution in float64 on the GPU (from the same rounded inputs): the
largest error over the reference's magnitude is in the output.

A launch alone measures PyTorch's host dispatch (25-40 us) unless the GPU
is busy when it is queued: after the flush, a spin kernel
(torch.cuda._sleep) keeps it busy while the host queues the start event and
the convolution, so the events hold the convolution's GPU time.

Which engine PyTorch's cuDNN kept is not exposed; the names of the GPU
kernels one launch runs (torch.profiler, CUDA activity) say it, and are
written beside the time.

With --plan, writes --tsv, one row per context:
  context  torch_us  torch_us2  max_rel_err  kernels
(torch_us2: the median of a second batch, the timing noise; kernels: the
names, ';'-separated, or '-' where the profiler gave none), with '#' lines
for the versions and the method. With --shapes (mma_bench --op conv
--list-shapes lines, "group prec conv n=.. ..."), prints "group prec context
us" per layer (bench/kernels/conv_bench_device.sh). Progress goes to stderr.

  python3 bench/kernels/torch_conv_bench.py --plan PREC/plan.tsv --tsv OUT
      [--reps N] [--budget-s S]
  python3 bench/kernels/torch_conv_bench.py --shapes FILE
"""
import argparse
import math
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16,
          "tf32": torch.float32, "fp32": torch.float32}


def parse_context(text):
    """'conv n=1 h=28 ... pad=2x2 stride=1x1 dilation=2x2 dtype=bf16' -> dict."""
    words = text.split()
    if not words or words[0] != "conv":
        return None
    out = {}
    for w in words[1:]:
        key, _, value = w.partition("=")
        if key in ("pad", "stride", "dilation"):
            pair = tuple(int(v) for v in value.split("x"))
            out[key] = pair * 2 if len(pair) == 1 else pair
        elif key == "dtype":
            out[key] = value
        else:
            out[key] = int(value)
    for key in ("n", "h", "w", "c", "k", "r", "s", "pad", "stride", "dilation",
                "dtype"):
        if key not in out:
            raise ValueError(f"context '{text}': no {key}")
    return out


def contexts_of_shapes(path):
    """mma_bench --list-shapes lines: (group, prec, context, parsed)."""
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            group, prec, ctx = line.split(" ", 2)
            out.append((group, prec, ctx.strip(), parse_context(ctx.strip())))
    return out


def contexts_of(plan):
    seen, out = set(), []
    with open(plan) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 2 or fields[1] in seen:
                continue
            cv = parse_context(fields[1])
            if cv is not None:
                seen.add(fields[1])
                out.append((fields[1], cv))
    return out


def time_one(cv, reps, flush):
    dtype = DTYPES[cv["dtype"]]
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(1)
    x = (torch.rand(cv["n"], cv["c"], cv["h"], cv["w"], device=dev,
                    generator=g) * 2 - 1).to(dtype)
    wt = (torch.rand(cv["k"], cv["c"], cv["r"], cv["s"], device=dev,
                     generator=g) * 2 - 1).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    wt = wt.contiguous(memory_format=torch.channels_last)
    args = dict(stride=cv["stride"], padding=cv["pad"], dilation=cv["dilation"])

    def conv():
        return F.conv2d(x, wt, **args)

    y = conv()  # benchmark mode searches here
    torch.cuda.synchronize()
    # The check: float64 from the same inputs (for tf32, cuDNN rounds them
    # itself, so the error includes that rounding); reported, not judged.
    ref = F.conv2d(x.double(), wt.double(), **args)
    err = ((y.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
    for _ in range(3):
        conv()
    times = []
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(2 * reps):
        flush.sum()  # read 256 MiB: L2 holds none of the operands
        torch.cuda._sleep(200_000)  # ~100 us: the host queues what follows
        start.record()
        conv()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    first, second = sorted(times[:reps]), sorted(times[reps:])
    return first[reps // 2], second[reps // 2], err, kernels_of(conv)


def kernels_of(conv):
    """The GPU kernels one launch of conv runs, ';'-separated ('-': none seen,
    or the profiler failed)."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            conv()
            torch.cuda.synchronize()
        names = [e.name for e in prof.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA
                 and not e.name.startswith(("Memset", "Memcpy"))]
    except Exception as e:  # the time stands without the names
        print(f"profiler: {e}", file=sys.stderr)
        names = []
    return ";".join(dict.fromkeys(n.replace("\t", " ") for n in names)) or "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", help="an evaluation plan (PREC/plan.tsv)")
    ap.add_argument("--tsv", help="with --plan: the output")
    ap.add_argument("--shapes", help="mma_bench --op conv --list-shapes output")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--budget-s", type=float, default=240)
    a = ap.parse_args()
    if not 5 <= a.reps <= 1000:
        sys.exit(f"--reps {a.reps}: expected 5..1000")
    if bool(a.plan) == bool(a.shapes) or bool(a.plan) != bool(a.tsv):
        sys.exit("give --plan FILE --tsv OUT, or --shapes FILE")
    torch.backends.cudnn.benchmark = True
    # Benchmark mode times the first 10 engines cuDNN's heuristics rank
    # unless told otherwise; 0: every engine they offer. On the H200 the
    # kernel it kept for one layer moved between runs (56x56, C = 64,
    # K = 256, batch 1: 33.3 us, then 5.5; bench/results/h200/eval-v5/).
    limit = "default"
    if hasattr(torch.backends.cudnn, "benchmark_limit"):
        torch.backends.cudnn.benchmark_limit = 0
        limit = "0 (every engine)"
    if a.plan:
        contexts = [(None, None, text, cv) for text, cv in contexts_of(a.plan)]
    else:
        contexts = contexts_of_shapes(a.shapes)
    if not contexts:
        sys.exit(f"{a.plan or a.shapes}: no convolution contexts")
    flush = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    flush.uniform_()
    method = (f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
              f"{torch.cuda.get_device_name()}; channels-last, cudnn.benchmark "
              f"(benchmark_limit {limit}), "
              f"TF32 for tf32 only; {a.reps} repetitions, median; L2 read-flushed "
              f"(256 MiB) before each launch")
    out = open(a.tsv, "w") if a.plan else sys.stdout
    out.write(f"# {method}\n")
    if a.plan:
        out.write("context\ttorch_us\ttorch_us2\tmax_rel_err\tkernels\n")
    t0 = time.time()
    for i, (group, prec, text, cv) in enumerate(contexts):
        if time.time() - t0 > a.budget_s:
            print(f"budget of {a.budget_s} s spent: {len(contexts) - i} "
                  "contexts not timed", file=sys.stderr)
            break
        torch.backends.cudnn.allow_tf32 = cv["dtype"] == "tf32"
        try:
            t1, t2, err, kernels = time_one(cv, a.reps, flush)
        except Exception as e:  # one shape's failure leaves the others
            print(f"{text}: {e}", file=sys.stderr)
            continue
        if a.plan:
            out.write(f"{text}\t{t1:.3f}\t{t2:.3f}\t{err:.2e}\t{kernels}\n")
        else:
            out.write(f"{group} {prec} {text} {t1:.1f}\n")
        out.flush()
        print(f"{text}: {t1:.2f} us ({t2:.2f}), rel err {err:.1e}, {kernels}",
              file=sys.stderr)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
