#!/usr/bin/env bash
# conv.wgmma_sk (conv.wgmma with each tile's reduction split over programs)
# in one device call on a compute-capability-9.0 GPU:
#   1. its GPU tests: kernels/conv_mma_gpu_test (random convolutions with
#      the reduction split 2-32 ways and issue 18's batch-1 layers against
#      float64, every precision; the memcheck smoke under compute-sanitizer)
#      and tuner/gpu_worker_test (through the daemon's launcher: the
#      workspace and the dependent reduce launch; beside conv.wgmma's
#      kernel of the same tile; then sampled candidates);
#   2. mma_bench --op conv on the groups BENCH_GROUPS (default c56,hw; c56: 3x3,
#      batch 1, 56x56, C = K 64-1024; hw: 3x3, batch 1, C = K = 256, H = W
#      8-256; r50: ResNet-50's 3x3 layers at batch 1 and 32, and by prefix
#      r50_1x1): every conv family's best of CONFIGS sampled configurations
#      (default 32) against cuDNN's best algorithm in the same precision
#      (cudnnFind Ex, each algorithm timed with our flush, events and
#      median), one run.
# Carry build/gpu-carry (scripts/gpu_carry.sh build); writes $OUT/device.txt,
# tests.txt, memcheck.txt, worker.txt, conv_bench.txt, conv_bench.err.gz.
# conv.wgmma_sc (the same split added inside a cluster) with
#   TESTS='*ClusterSplit*' WORKER='*ConvClusterSplit*' \
#   FAMILIES=conv.wgmma_sk,conv.wgmma_sc bench/kernels/conv_sk_device.sh
# (FAMILIES: mma_bench --families; default every conv family). CARRY names
# another folder of the binaries (bin/, lib/). The groups are BENCH_GROUPS
# (bash's own GROUPS is the user's group ids: set in the environment it is
# ignored, and the 2026-12-05 H200 run of conv.wgmma_sc got --only 0).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/cuda/bin"
carry=${CARRY:-build/gpu-carry}
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64
b=$carry/bin
out=${OUT:-/tmp/conv-sk}
mkdir -p "$out"
t0=$(date +%s)
el() { echo "$1 at $(( $(date +%s) - t0 ))s"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,temperature.gpu \
  --format=csv >"$out/device.txt" 2>&1
timeout 240 "$b/conv_mma_gpu_test" --gtest_filter="${TESTS:-*WgmmaSplit*:*WgmmaLayers*}" \
  >"$out/tests.txt" 2>&1
el "conv_mma_gpu_test rc $?"
grep -E "^\[  (PASSED|FAILED) |random convolutions|Failure" "$out/tests.txt" | head -20
timeout 120 compute-sanitizer --tool memcheck "$b/conv_mma_gpu_test" \
  --gtest_filter='*WgmmaSmokeUnderMemcheck*' >"$out/memcheck.txt" 2>&1
el "memcheck rc $?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$out/memcheck.txt" | head -5
timeout 200 "$b/gpu_worker_test" --gtest_filter="${WORKER:-*ConvSplit*}" >"$out/worker.txt" 2>&1
el "gpu_worker_test rc $?"
grep -E "^\[  (PASSED|FAILED) |^  (sk|sc|base) |Failure" "$out/worker.txt" | head -30
[ "${BENCH:-1}" = 0 ] && exit 0
timeout "${BENCH_LIMIT:-280}" "$b/mma_bench" --op conv --flush read \
  --configs "${CONFIGS:-32}" --only "${BENCH_GROUPS:-c56,hw}" \
  --deadline "$(( ${BENCH_LIMIT:-280} * 4 / 5 ))" \
  ${FAMILIES:+--families "$FAMILIES"} \
  >"$out/conv_bench.txt" 2>"$out/conv_bench.err"
el "mma_bench rc $?"
gzip -f "$out/conv_bench.err"
grep -vE "^#" "$out/conv_bench.txt" | tail -40
