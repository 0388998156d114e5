#!/usr/bin/env bash
# Where gemm.wgmma loses to cuBLASLt, in one device call: the vendor's
# kernels (names carry tile, stages and cluster) with their times, and an
# ncu profile with per-SASS stall sampling of our kernel and of cuBLASLt's
# fastest, for each "SHAPE|PARAMS" argument, e.g.
#   "bf16 NN 2048 2048 2048|bm=128 bn=256 bk=64 st=4 wg=2 gm=1 kg=1 cm=1"
# FAMILY (default gemm.wgmma), KERNEL (the regex of its entries, default
# blocktune_gemm) and VENDOR (the regex of the vendor's kernels) profile
# another family, e.g. FAMILY=gemm.ffma with "fp32 NN 4096 4096 4096|ML=..".
# Carry build/gpu-carry (scripts/gpu_carry.sh). Writes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/wgmma-profile}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
bin=${MMA_BENCH:-build/gpu-carry/bin/mma_bench}
family=${FAMILY:-gemm.wgmma}
ours=${KERNEL:-blocktune_gemm}
vendor=${VENDOR:-nvjet|sm90|cutlass}
count=${COUNT:-1} # launches of ours profiled in full: 2 takes a reduce too
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$out/device.txt" 2>&1
i=0
for arg in "$@"; do
  i=$((i + 1))
  shape=${arg%%|*} params=${arg#*|}
  echo "# $shape [$params]" >"$out/$i-bench.txt"
  timeout 60 "$bin" --families "$family" --profile "$shape" "$params" 21 >>"$out/$i-bench.txt" 2>&1
  # Every kernel of the run: the vendor's candidates and ours, by name.
  timeout 150 ncu --print-summary per-kernel -k "regex:$vendor|$ours" \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__cluster_dim_x,launch__cluster_dim_y,launch__shared_mem_per_block_dynamic \
    "$bin" --families "$family" --profile "$shape" "$params" 3 >"$out/$i-kernels.txt" 2>&1
  # Ours in detail, with per-instruction stall samples.
  timeout 120 ncu -k "regex:$ours" --launch-skip 2 --launch-count "$count" --set full \
    --import-source no -o "$out/$i-ours" "$bin" --families "$family" --profile "$shape" "$params" 3 >/dev/null 2>&1
  ncu --import "$out/$i-ours.ncu-rep" >"$out/$i-ours.txt" 2>&1
  ncu --import "$out/$i-ours.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip >"$out/$i-ours-sass.csv.gz"
  # cuBLASLt's first candidate (its heuristic's pick) in detail.
  timeout 120 ncu -k "regex:$vendor" --launch-skip 2 --launch-count 1 --set full \
    -o "$out/$i-vendor" "$bin" --families "$family" --profile "$shape" "$params" 3 >/dev/null 2>&1
  ncu --import "$out/$i-vendor.ncu-rep" >"$out/$i-vendor.txt" 2>&1
  ncu --import "$out/$i-vendor.ncu-rep" --page source --csv --print-source sass 2>&1 | gzip >"$out/$i-vendor-sass.csv.gz"
  rm -f "$out"/*.ncu-rep
  echo "$i done at ${SECONDS}s"
done
