#!/usr/bin/env bash
# The tensor-core convolution benchmark (mma_bench --op conv: conv.mma
# against cuDNN in the same precision) and the PyTorch channels-last
# cross-check, in one device call. Built on the CPU host and carried:
#   ninja -C build mma_bench && scripts/gpu_carry.sh build
#   run(carry=["build/gpu-carry"],
#       command="bash bench/kernels/conv_bench_device.sh [CONFIGS] [ONLY]")
# Writes to $OUT: device.txt, conv_bench.txt (rows, the markdown table,
# geomeans), conv_bench.err.gz (cudnnFind's list and every quick timing),
# torch_conv.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/conv-bench}
configs=${1:-32}
only=${2:-}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
bin=${MMA_BENCH:-build/gpu-carry/bin/mma_bench}
export LD_LIBRARY_PATH="$(dirname "$(dirname "$bin")")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
t0=$(date +%s)
el() { echo "$1 at $(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version,temperature.gpu,power.draw \
  --format=csv >"$out/device.txt" 2>&1
args=(--op conv --flush read --configs "$configs")
[ -n "$only" ] && args+=(--only "$only")
timeout 400 "$bin" "${args[@]}" >"$out/conv_bench.txt" 2>"$out/conv_bench.err"
el "bench rc $?"
gzip -f "$out/conv_bench.err"
"$bin" --op conv --list-shapes ${only:+--only "$only"} >"$out/shapes.txt"
timeout 120 python3 bench/kernels/torch_conv_bench.py --shapes "$out/shapes.txt" \
  >"$out/torch_conv.txt" 2>&1
el "torch rc $?"
