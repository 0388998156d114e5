#!/usr/bin/env bash
# The tensor-core GEMM benchmark (mma_bench: gemm.mma and gemm.wgmma against
# cuBLASLt) in one device call, with the SASS check of the benchmarked
# gemm.wgmma kernels and an ncu profile of the best one at 4096^3. Built on
# the CPU host and carried:
#   ninja -C build mma_bench
#   run(carry=["build/bench/kernels/mma_bench"],
#       command="bash bench/kernels/tc_bench_device.sh [CONFIGS] [ONLY]")
# Writes to $OUT: device.txt, tc_bench.txt (stdout: rows, the markdown
# table, geomeans), tc_bench.err.gz (every quick timing), sass.txt, ncu.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/tc-bench}
configs=${1:-24}
only=${2:-}
mkdir -p "$out/ptx"
export PATH="$PATH:/usr/local/cuda/bin"
bin=${MMA_BENCH:-build/bench/kernels/mma_bench}
t0=$(date +%s)
el() { echo "$1 at $(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version,temperature.gpu,power.draw \
  --format=csv >"$out/device.txt" 2>&1
args=(--flush read --configs "$configs" --ptx-dir "$out/ptx")
[ -n "$only" ] && args+=(--only "$only")
timeout 420 "$bin" "${args[@]}" >"$out/tc_bench.txt" 2>"$out/tc_bench.err"
el "bench rc $?"
gzip -f "$out/tc_bench.err"
# HGMMA in the SASS of every benchmarked gemm.wgmma kernel.
bash bench/kernels/sass_counts.sh "$out/ptx" >"$out/sass.txt" 2>&1
el "sass"
tar czf "$out/ptx.tar.gz" -C "$out" ptx && rm -rf "$out/ptx"
best=$(grep -m1 '^square  *4096x4096x4096 NN *bf16' "$out/tc_bench.txt" |
  sed -n 's/.*gemm.wgmma .* ratio .* \[\([^]]*\)\].*/\1/p')
if [ -n "$best" ]; then
  timeout 120 ncu -k regex:blocktune_gemm --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats \
    "$bin" --families gemm.wgmma --profile "bf16 NN 4096 4096 4096" "$best" 3 \
    >"$out/ncu.txt" 2>&1
  el "ncu rc $? [$best]"
fi
