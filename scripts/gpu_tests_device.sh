#!/usr/bin/env bash
# Every GPU test binary of scripts/gpu_carry.sh's folder, on a lent GPU, in
# one device call, each under a time limit (a wrong mbarrier phase hangs a
# kernel rather than failing it). Logs to $OUT/<binary>.txt; the summary
# (one line per binary: rc, passed, failed) to stdout and $OUT/summary.txt.
#   gpu_tests_device.sh DIR [FILTER_REGEX]   (binaries whose name matches)
set -uo pipefail
dir=${1:?usage: gpu_tests_device.sh DIR [FILTER]}
filter=${2:-.}
out=${OUT:-/tmp/gpu-tests}
mkdir -p "$out"
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/cuda/bin"
export BLOCKTUNE_PTXAS=$(command -v ptxas) BLOCKTUNE_CUOBJDUMP=$(command -v cuobjdump)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,temperature.gpu \
  --format=csv >"$out/device.txt" 2>&1
t0=$(date +%s)
run() {  # name limit_s args...
  local name=$1 limit=$2
  shift 2
  [ -x "$dir/bin/$name" ] || return 0
  [[ "$name" =~ $filter ]] || return 0
  local log="$out/$name${TAG:+_$TAG}.txt"
  timeout "$limit" "$dir/bin/$name" "$@" >"$log" 2>&1
  local rc=$?
  printf '%-28s rc %3d  passed %3d  failed %3d  skipped %3d  %4ds\n' \
    "$name${TAG:+ $TAG}" "$rc" "$(grep -c '^\[       OK \]' "$log")" \
    "$(grep -c '^\[  FAILED  \] .* ms)$' "$log")" \
    "$(grep -c '^\[  SKIPPED \]' "$log")" "$(( $(date +%s) - t0 ))" |
    tee -a "$out/summary.txt"
}
# One binary's tests matching FILTER under compute-sanitizer memcheck, its
# log in $OUT/<binary>_memcheck.txt, one summary line naming LABEL.
memcheck() {  # name limit filter label
  local name=$1 limit=$2 filter_tests=$3 label=$4
  [ -x "$dir/bin/$name" ] || return 0
  [[ "$name" =~ $filter ]] || return 0
  local log="$out/${name}_memcheck.txt"
  timeout "$limit" compute-sanitizer --tool memcheck "$dir/bin/$name" \
    --gtest_filter="$filter_tests" >"$log" 2>&1
  echo "$name $label memcheck rc $? ($(grep -m1 'ERROR SUMMARY' "$log"))" |
    tee -a "$out/summary.txt"
}
run cuda_driver_test 60
run gemm_wgmma_test 90 --gtest_filter='*Sass*'
run gemm_gpu_test 150
# The fp32 families' cp.async stages under memcheck: zero-filled copies past
# K read no memory (their source is the operand's base).
memcheck gemm_gpu_test 240 '*CpAsync*' cp.async
run gemm_mma_gpu_test 150
for t in gemm_wgmma_gpu_test conv_mma_gpu_test; do
  memcheck "$t" 180 '*Smoke*' smoke
done
run gemm_wgmma_gpu_test 240
run conv_mma_gpu_test 240
# gemm.gemv, gemm.ffma_k and gemm.ffma_kpk; the packed family's pack entry
# under memcheck too (it reads rows whose length is no multiple of 16 bytes).
run gemm_gemv_gpu_test 240
memcheck gemm_gemv_gpu_test 300 '*FfmaKPacked*' packed
run gpu_worker_test 240
grep -h '^\[  FAILED  \]' "$out"/*.txt | sort -u | head -40
