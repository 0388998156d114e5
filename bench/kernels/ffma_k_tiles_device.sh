#!/usr/bin/env bash
# gemm.ffma_k's large lane tiles (v5: TM or TN of 16) on the compute-bound
# NT products, in one device call. BIN holds gemm_gemv_gpu_test and
# mma_bench (scripts/gpu_carry.sh build, then build/gpu-carry/bin):
#   1. the GPU test of gemm.ffma_k (GPU_TEST=0 skips it);
#   2. each of TILES on each of SHAPES (mma_bench --profile: cuBLASLt fp32,
#      TF32 off, best of its heuristic's algorithms, L2 read-flushed,
#      median of 21, our output checked against cuBLASLt's);
#   3. a sweep of SWEEP configurations per shape (the family's priors,
#      then a random sample that passes the rules), SWEEP=0 skips it.
# Writes $OUT/tiles.txt (and gemv-tests.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
b=${1:?usage: ffma_k_tiles_device.sh BIN}
out=${OUT:-/tmp/ffma-k-tiles}
mkdir -p "$out"
export LD_LIBRARY_PATH="$b/../lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$out/device.txt"
if [[ ${GPU_TEST:-1} != 0 ]]; then
  timeout 240 "$b/gemm_gemv_gpu_test" --gtest_filter="${GPU_FILTER:-*FfmaK*}" >"$out/gemv-tests.txt" 2>&1
  grep -E "^\[  (PASSED|FAILED) |cases|Failure" "$out/gemv-tests.txt" | head -20
fi
shapes=${SHAPES:-"fp32 NT 4096 4096 4096;fp32 NT 2048 4096 4096;fp32 NT 4096 3072 768;fp32 NT 4096 768 3072;fp32 NT 2048 11008 4096;fp32 NT 1024 1024 1024"}
tiles=${TILES:-"LM=8 TM=8 TN=8 WM=2 WN=2 KC=16 ST=3 KG=1 WK=1"}
IFS=';' read -ra slist <<<"$shapes"
IFS=';' read -ra tlist <<<"$tiles"
for s in "${slist[@]}"; do
  for t in "${tlist[@]}"; do
    echo "# [$t]" >>"$out/tiles.txt"
    timeout 90 "$b/mma_bench" --families gemm.ffma_k --profile "$s" "$t" 21 2>&1 |
      grep -E "^profile |rror|spill" >>"$out/tiles.txt"
  done
  if [[ ${SWEEP:-0} != 0 ]]; then
    echo "# sweep $SWEEP" >>"$out/tiles.txt"
    timeout 200 "$b/mma_bench" --families gemm.ffma_k --configs "$SWEEP" \
      --profile "$s" "" 21 2>&1 | grep -E "^profile |rror" >>"$out/tiles.txt"
  fi
done
cat "$out/tiles.txt"
