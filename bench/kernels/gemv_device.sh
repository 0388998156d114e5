#!/usr/bin/env bash
# gemm.gemv (fp32 skinny GEMMs, kernels/gemm_gemv.h) in one device call.
#
#   bash bench/kernels/gemv_device.sh kernels BIN
#     BIN: the carried binaries (scripts/gpu_carry.sh build, then
#     build/gpu-carry): the GPU test (tuner/gemm_gemv_gpu_test, float64
#     reference) and, on the decode, MLP, covariance and skinny shapes, the
#     best of a sweep of gemm.gemv (SWEEP configurations, default 150;
#     FFMA=1 sweeps gemm.ffma too) beside cuBLASLt fp32 (mma_bench
#     --profile with no parameters: L2 read-flushed, median of 21, outputs
#     checked against cuBLASLt's). FAMILIES=F,.. sweeps those families
#     instead, one run of mma_bench each (gemm.gemv,gemm.ffma_k: both NT
#     families side by side; the GPU test binary holds both families' tests;
#     GPU_TEST=0 skips it); SHAPES="fp32 NT m n k;
#     ..." replaces the shapes.
#   bash bench/kernels/gemv_device.sh campaign
#     builds everything into build-gpu (scripts/offline-deps.sh build,
#     carrying .deps), then a campaign of gemm.gemv alone (MINUTES, default
#     2; SAMPLES, default 60000; CAMPAIGN_FAMILIES=gemm.ffma_k samples
#     that family instead), the data of its model, and
#     bench/kernels/gemv_ncu_device.sh's profiles into ncu.txt (NCU=0
#     skips them). KERNELS=1 first runs `kernels` (above) on the binaries
#     just built, so one call needs only .deps:
#       KERNELS=1 FAMILIES=gemm.ffma_k CAMPAIGN_FAMILIES=gemm.ffma_k NCU=0 \
#         OFFLINE_TARGETS="blocktuned blocktune blocktune-worker gemm_gemv_gpu_test mma_bench" \
#         bash bench/kernels/gemv_device.sh campaign
#     (OFFLINE_TARGETS: scripts/offline-deps.sh builds those targets only.)
# Writes $OUT/gemv.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
w=$OUT/gemv
mkdir -p "$w"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$w/device.txt"
# The GPU test, then each family's sweep beside cuBLASLt on each shape;
# BIN holds gemm_gemv_gpu_test and mma_bench.
kernels() {
  local b=$1
  export LD_LIBRARY_PATH="$b/../lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [[ ${GPU_TEST:-1} == 0 ]] || timeout 200 "$b/gemm_gemv_gpu_test" >"$w/gemv-tests.txt" 2>&1
  grep -E "^\[  (PASSED|FAILED) |cases|Failure" "$w/gemv-tests.txt" 2>/dev/null | head -20
  fams=${FAMILIES:-gemm.gemv}
  [[ ${FFMA:-0} == 1 ]] && fams=$fams,gemm.ffma
  shapes=${SHAPES:-"fp32 NT 64 64 4096;fp32 NT 64 64 16384;fp32 NT 64 64 65536;fp32 NT 64 64 131072;fp32 NT 1024 16 1024;fp32 NT 4096 16 4096;fp32 NT 7168 16 7168;fp32 NT 4096 1 4096;fp32 NT 11008 1 4096;fp32 NT 4096 8 4096;fp32 NT 4096 16 11008;fp32 NT 12288 8 4096;fp32 NT 4096 128 4096"}
  IFS=';' read -ra list <<<"$shapes"
  # --profile sweeps the first of --families only: one run per family
  # (cuBLASLt is timed again in each).
  IFS=',' read -ra famlist <<<"$fams"
  for s in "${list[@]}"; do
    for f in "${famlist[@]}"; do
      timeout 120 "$b/mma_bench" --families "$f" --configs "${SWEEP:-150}" \
        --profile "$s" "" 21 2>&1 | grep -E "^profile |rror" >>"$w/gemv.txt"
    done
  done
  cat "$w/gemv.txt"
}
case "${1:-}" in
  kernels)
    kernels "${2:?usage: gemv_device.sh kernels BIN}"
    ;;
  campaign)
    (time scripts/offline-deps.sh build) >"$w/build.log" 2>&1 || tail -20 "$w/build.log"
    export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [[ ${KERNELS:-0} == 1 ]]; then
      mkdir -p build-gpu/bin
      ln -sf "$PWD/build-gpu/tuner/gemm_gemv_gpu_test" "$PWD/build-gpu/bench/kernels/mma_bench" build-gpu/bin/
      kernels "$PWD/build-gpu/bin"
    fi
    MINUTES=${MINUTES:-2} FAMILIES=${CAMPAIGN_FAMILIES:-gemm.gemv} timeout 400 \
      scripts/campaigns_device.sh "$w/campaign" build-gpu "gemm:fp32:${SAMPLES:-60000}" \
      >"$w/campaign.log" 2>&1
    tail -3 "$w/campaign.log"
    tail -2 "$w/campaign/report.txt" 2>/dev/null
    # What limits the covariance and MLP kernels: ncu of the v2 sweep's
    # best configurations.
    [[ ${NCU:-1} == 0 ]] || bash bench/kernels/gemv_ncu_device.sh build-gpu/bench/kernels "$w/ncu.txt"
    ;;
  *)
    echo "usage: gemv_device.sh kernels BIN | campaign" >&2
    exit 2
    ;;
esac
tar czf "$OUT/gemv.tgz" -C "$OUT" gemv
