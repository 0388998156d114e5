#!/usr/bin/env bash
# S_IC on Hopper (thesis §4.2.1's bound on the unrolled reduction loop,
# 16*(M_S*U + N_S*U + M_S*N_S*U) bytes), measured: gemm.ffma kernels of one
# thread tile with U doubling, so that only the loop's length changes, on
# fp32 4096^3 NN; each timed by mma_bench beside cuBLASLt and profiled by
# ncu for its stall reasons (no_instruction: the warp waits for
# instructions, an instruction-cache miss). Then the large thread tiles the
# old bound refused, on other compute-bound shapes beside today's best tile.
# mma_bench --profile takes any configuration (the rules are the sampler's
# business), so this runs on binaries built from any commit.
# Carry build/gpu-carry (scripts/gpu_carry.sh). Writes $OUT/sic.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/build/gpu-carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/cuda/bin"
bin=build/gpu-carry/bin/mma_bench
w=/tmp/sic
mkdir -p "$w"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$w/device.txt" 2>&1
time_one() { # shape params -> one line
  timeout 120 "$bin" --families gemm.ffma --profile "$1" "$2" 21 2>&1 |
    grep -E "^profile |rror" | head -1
}
stalls='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
loop=$w/loop.txt
for p in "ML=128 NL=128 MS=8 NS=16 U=2" "ML=128 NL=128 MS=8 NS=16 U=4" \
         "ML=128 NL=128 MS=8 NS=16 U=8" "ML=128 NL=128 MS=8 NS=16 U=16" \
         "ML=128 NL=128 MS=8 NS=8 U=4" "ML=128 NL=128 MS=8 NS=8 U=8" \
         "ML=128 NL=128 MS=8 NS=8 U=16" "ML=128 NL=128 MS=8 NS=8 U=32" \
         "ML=256 NL=128 MS=8 NS=16 U=8" "ML=256 NL=128 MS=8 NS=16 U=16" \
         "ML=128 NL=256 MS=16 NS=8 U=8" "ML=64 NL=128 MS=8 NS=8 U=8"; do
  p="$p KG=1 ST=1"
  echo "# [$p]" >>"$loop"
  time_one "fp32 NN 4096 4096 4096" "$p" >>"$loop"
  timeout 120 ncu -k regex:blocktune_gemm --launch-skip 2 --launch-count 1 \
    --metrics "$stalls,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,gpu__time_duration.sum" \
    "$bin" --families gemm.ffma --profile "fp32 NN 4096 4096 4096" "$p" 3 2>&1 |
    grep -E "stalled|issue_active|registers|duration" >>"$loop"
done
shapes=$w/shapes.txt
for s in "fp32 NN 2048 2048 2048" "fp32 NN 8192 8192 8192" "fp32 NT 2048 4096 11008" \
         "fp32 NT 2048 12288 4096" "fp32 NT 4096 3072 768" "fp32 NN 5124 700 2048" \
         "fp32 NN 1024 1024 1024" "fp32 NT 512 3072 768"; do
  for p in "ML=64 NL=128 MS=8 NS=8 U=8" "ML=128 NL=128 MS=8 NS=16 U=8" \
           "ML=256 NL=128 MS=8 NS=16 U=8" "ML=128 NL=128 MS=8 NS=16 U=4"; do
    time_one "$s" "$p KG=1 ST=1" >>"$shapes"
  done
done
cat "$loop" "$shapes"
tar czf "$OUT/sic.tgz" -C /tmp sic
