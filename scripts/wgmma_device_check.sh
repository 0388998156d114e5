#!/usr/bin/env bash
# gemm.wgmma's first checks on a lent H100 (compute capability 9.0), in one
# device call. The binaries are built here on the CPU machine and carried:
#   cmake --build build-k --target gemm_wgmma_test gemm_wgmma_gpu_test -j2
#   run(carry=["build-k/kernels/gemm_wgmma_test",
#              "build-k/kernels/gemm_wgmma_gpu_test"],
#       command="bash scripts/wgmma_device_check.sh")
# Every step has a time limit: a wrong mbarrier phase or expect_tx count
# hangs the kernel rather than failing it. Logs go to $OUT (or /tmp).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/wgmma-check}
mkdir -p "$out"
bin=build-k/kernels
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version \
  --format=csv >"$out/device.txt" 2>&1
# 1. SASS: HGMMA in one kernel (ptxas and cuobjdump of the device image).
export PATH="$PATH:/usr/local/cuda/bin"
BLOCKTUNE_PTXAS=$(command -v ptxas) BLOCKTUNE_CUOBJDUMP=$(command -v cuobjdump) \
  timeout 120 \
  "$bin/gemm_wgmma_test" --gtest_filter='GemmWgmmaPtxasTest.SassHasHgmma' \
  >"$out/sass.txt" 2>&1
echo "sass: rc $?"
# 2. The smallest kernel per layout, under compute-sanitizer (races, bad
#    shared-memory addresses, TMA faults).
timeout 180 compute-sanitizer --tool memcheck "$bin/gemm_wgmma_gpu_test" \
  --gtest_filter='*Smoke*' >"$out/smoke_memcheck.txt" 2>&1
echo "smoke memcheck: rc $?"
timeout 180 compute-sanitizer --tool synccheck "$bin/gemm_wgmma_gpu_test" \
  --gtest_filter='*Smoke*' >"$out/smoke_synccheck.txt" 2>&1
echo "smoke synccheck: rc $?"
# 3. Everything else.
timeout 420 "$bin/gemm_wgmma_gpu_test" >"$out/gpu_test.txt" 2>&1
echo "gpu test: rc $?"
# 4. First speed readings, only worth having once step 3 passed.
if grep -q "PASSED" "$out/gpu_test.txt" && ! grep -q "FAILED" "$out/gpu_test.txt"; then
  BLOCKTUNE_WGMMA_TIME=1 timeout 240 "$bin/gemm_wgmma_gpu_test" \
    --gtest_filter='*TimeSquare*' >"$out/time.txt" 2>&1
  echo "time: rc $?"
  grep "^time" "$out/time.txt"
fi
tail -n 5 "$out"/sass.txt "$out"/smoke_*.txt
grep -E "OK|FAILED|pass|Failure|error" "$out/gpu_test.txt" | tail -n 20
