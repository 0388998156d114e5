#!/usr/bin/env bash
# gemm.wgmma on the H100 in one device call: its GPU tests, the square
# sweep against cuBLASLt (mma_bench, gemm.wgmma only), the SASS check and
# the stall profile of the 2048^3 and 4096^3 picks. Carry build/gpu-carry.
#   bash bench/kernels/wgmma_check_device.sh [CONFIGS] [ONLY]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/wgmma-check}
mkdir -p "$out/ptx"
export PATH="$PATH:/usr/local/cuda/bin"
bin=build/gpu-carry/bin
configs=${1:-40}
only=${2:-square}
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$out/device.txt" 2>&1
timeout 240 "$bin/gemm_wgmma_gpu_test" >"$out/gpu_test.txt" 2>&1
echo "gpu test rc $? at $((SECONDS - t0))s"
timeout 300 "$bin/mma_bench" --families gemm.wgmma --flush read --configs "$configs" \
  --only "$only" --ptx-dir "$out/ptx" >"$out/bench.txt" 2>"$out/bench.err"
echo "bench rc $? at $((SECONDS - t0))s"
gzip -f "$out/bench.err"
bash bench/kernels/sass_counts.sh "$out/ptx" >"$out/sass.txt" 2>&1
rm -rf "$out/ptx"
for n in 2048 4096; do
  best=$(grep -m1 "^square  *${n}x${n}x${n} NN *bf16" "$out/bench.txt" |
    sed -n 's/.*gemm.wgmma .* ratio .* \[\([^]]*\)\].*/\1/p')
  [ -n "$best" ] || continue
  timeout 120 ncu -k regex:blocktune_gemm --launch-skip 2 --launch-count 1 --set full \
    -o "$out/p$n" "$bin/mma_bench" --families gemm.wgmma --profile "bf16 NN $n $n $n" "$best" 3 >/dev/null 2>&1
  { echo "# $best"; ncu --import "$out/p$n.ncu-rep"; } >"$out/ncu$n.txt" 2>&1
  ncu --import "$out/p$n.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip >"$out/ncu$n-sass.csv.gz"
  rm -f "$out/p$n.ncu-rep"
done
echo "done at $((SECONDS - t0))s"
