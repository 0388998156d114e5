#!/usr/bin/env python3
"""PyTorch channels-last cross-check of mma_bench --op conv (issue 18).

Reads `mma_bench --op conv --list-shapes` lines ("group prec conv n=.. h=..
w=.. c=.. k=.. r=.. s=.. pad=HxW stride=HxW dilation=HxW dtype=..") from
--shapes FILE and times torch.nn.functional.conv2d on the same layer:
channels_last input and weight, cudnn.benchmark on (PyTorch picks cuDNN's
fastest), bf16/fp16, or fp32 with TF32 allowed for tf32. CUDA events, 10
warm-ups, then the median over 10 batches of 20 back-to-back calls per
pair of events (one call per pair measures the host's dispatch, ~40 us, not
the kernel), no L2 flush (PyTorch's own steady state). Prints "group prec
shape us" per layer.
"""
import argparse
import re
import statistics

import torch


def parse(line):
    group, prec, ctx = line.split(" ", 2)
    kv = dict(re.findall(r"(\w+)=([\dx]+)", ctx))
    pair = lambda v: tuple(int(x) for x in v.split("x")) if "x" in v else (int(v),) * 2
    return group, prec, ctx.strip(), dict(
        n=int(kv["n"]), h=int(kv["h"]), w=int(kv["w"]), c=int(kv["c"]), k=int(kv["k"]),
        r=int(kv["r"]), s=int(kv["s"]), pad=pair(kv["pad"]), stride=pair(kv["stride"]),
        dilation=pair(kv["dilation"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"# torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}; channels_last, cudnn.benchmark")
    for line in open(args.shapes):
        if not line.strip() or line.startswith("#"):
            continue
        group, prec, ctx, d = parse(line)
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(prec, torch.float32)
        x = torch.rand(d["n"], d["c"], d["h"], d["w"], device="cuda", dtype=dtype) * 2 - 1
        wt = torch.rand(d["k"], d["c"], d["r"], d["s"], device="cuda", dtype=dtype) * 2 - 1
        x = x.to(memory_format=torch.channels_last)
        wt = wt.to(memory_format=torch.channels_last)
        f = lambda: torch.nn.functional.conv2d(x, wt, None, d["stride"], d["pad"], d["dilation"])
        for _ in range(10):
            f()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(20):
                f()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3 / 20)
        print(f"{group} {prec} {ctx} {statistics.median(times):.1f}", flush=True)


if __name__ == "__main__":
    main()
