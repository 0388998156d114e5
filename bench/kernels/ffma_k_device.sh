#!/usr/bin/env bash
# gemm.ffma_k in one device call, from the sources alone (carry .deps, from
# `scripts/offline-deps.sh download`): builds what it needs into build-gpu,
# runs the GPU test (tuner/gemm_gemv_gpu_test: both NT families against
# float64), sweeps gemm.ffma_k on the covariance, MLP and square shapes
# against cuBLASLt fp32 (bench/kernels/gemv_device.sh kernels), then runs a
# campaign of gemm.ffma_k alone (MINUTES, default 3) whose samples train its
# model here:
#   run(carry=[".deps"], command="bash bench/kernels/ffma_k_device.sh")
# Writes $OUT/ffma_k.tgz (ffma_k/: tests, sweep, campaign/).
set -uo pipefail
cd "$(dirname "$0")/../.."
w=$OUT/ffma_k
mkdir -p "$w"
(time OFFLINE_TARGETS="blocktuned blocktune blocktune-worker gemm_gemv_gpu_test mma_bench" \
  scripts/offline-deps.sh build) >"$w/build.log" 2>&1 || tail -20 "$w/build.log"
grep real "$w/build.log"
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bin=$PWD/build-gpu/bin
mkdir -p "$bin"
ln -sf "$PWD/build-gpu/tuner/gemm_gemv_gpu_test" "$PWD/build-gpu/bench/kernels/mma_bench" "$bin/"
FAMILIES=gemm.ffma_k SWEEP=${SWEEP:-100} \
  SHAPES=${SHAPES:-"fp32 NT 64 64 65536;fp32 NT 64 64 262144;fp32 NT 4096 16 4096;fp32 NT 7168 16 7168;fp32 NT 4096 4096 4096"} \
  timeout 260 bash bench/kernels/gemv_device.sh kernels "$bin"
cp -r "$OUT/gemv/." "$w/" && rm -rf "$OUT/gemv" "$OUT/gemv.tgz"
MINUTES=${MINUTES:-3} FAMILIES=gemm.ffma_k timeout 300 \
  scripts/campaigns_device.sh "$w/campaign" build-gpu "gemm:fp32:${SAMPLES:-60000}" \
  >"$w/campaign.log" 2>&1
tail -2 "$w/campaign/report.txt" 2>/dev/null
tar czf "$OUT/ffma_k.tgz" -C "$OUT" ffma_k
