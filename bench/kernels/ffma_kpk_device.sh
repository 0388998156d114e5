#!/usr/bin/env bash
# gemm.ffma_kpk (gemm.ffma_k on packed operands) in one device call:
#   1. the GPU tests of gemm.ffma_k and gemm.ffma_kpk (tuner/
#      gemm_gemv_gpu_test, random NT shapes against float64; the packed
#      family's with lda or ldb no multiple of 4);
#   2. on NT products whose rows are not whole 16-byte units (odd K), the
#      best of a 60-configuration sweep of gemm.ffma_kpk and of gemm.ffma
#      beside cuBLASLt fp32 (mma_bench --profile: TF32 off, best of its
#      heuristic's algorithms, L2 read-flushed, median of 21, outputs
#      checked against cuBLASLt's).
# Carry build/gpu-carry (scripts/gpu_carry.sh build); writes
# $OUT/device.txt, gpu-test.txt and sweep.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=$PWD/build/gpu-carry/lib:/usr/local/cuda/lib64
b=build/gpu-carry/bin
out=${OUT:-/tmp/ffma-kpk}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$out/device.txt"
timeout 300 "$b/gemm_gemv_gpu_test" --gtest_filter='*FfmaK*' >"$out/gpu-test.txt" 2>&1
grep -E "^\[  (PASSED|FAILED) |cases|Failure" "$out/gpu-test.txt" | head
shapes=${SHAPES:-"fp32 NT 777 333 1555;fp32 NT 3000 50 3001;fp32 NT 1023 16 1023;fp32 NT 64 64 65535;fp32 NT 4097 1 4095;fp32 NT 2047 2049 1023"}
IFS=';' read -ra list <<<"$shapes"
for s in "${list[@]}"; do
  for f in gemm.ffma_kpk gemm.ffma; do
    timeout 150 "$b/mma_bench" --families "$f" --configs "${SWEEP:-60}" \
      --profile "$s" "" 21 2>&1 | grep -E "^profile |rror"
  done
done | tee "$out/sweep.txt"
