#!/usr/bin/env bash
# gemm.gemv (fp32 decode, kernels/gemm_gemv.h) in one device call, carrying
# .deps (the project's air-gapped install, scripts/offline-deps.sh):
#   1. build everything into build-gpu (offline-deps.sh build);
#   2. its GPU test (tuner/gemm_gemv_gpu_test: 160 random cases, float64
#      reference);
#   3. on decode shapes, the best of a sweep of gemm.gemv and of gemm.ffma
#      beside cuBLASLt fp32 (mma_bench --profile with no parameters:
#      L2 read-flushed, median of 21, outputs checked against cuBLASLt's);
#   4. a campaign of gemm.gemv alone (MINUTES, default 1), the data of its
#      first model;
#   5. the fp32 evaluation's decode group, whose sweep now holds gemm.gemv
#      (PLAN: a folder with the fp32 plan.tsv; skipped without it).
# Writes $OUT/gemv.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
w=$OUT/gemv
mkdir -p "$w"
(time scripts/offline-deps.sh build) >"$w/build.log" 2>&1 || { tail -20 "$w/build.log"; }
export LD_LIBRARY_PATH="$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
b=build-gpu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$w/device.txt"
timeout 120 "$b/tuner/gemm_gemv_gpu_test" >"$w/gemv-tests.txt" 2>&1
grep -E "^\[  (PASSED|FAILED) |cases" "$w/gemv-tests.txt"
for s in "fp32 NT 4096 1 4096" "fp32 NT 11008 1 4096" "fp32 NT 14336 1 4096" \
         "fp32 NT 4096 1 11008" "fp32 NN 4096 1 4096" "fp32 NT 4096 2 4096" \
         "fp32 NT 4096 4 4096" "fp32 NT 4096 8 4096" "fp32 NT 1000 1 1000"; do
  timeout 90 "$b/bench/kernels/mma_bench" --families gemm.gemv,gemm.ffma \
    --configs 60 --profile "$s" "" 21 2>&1 | grep -E "^profile |rror" >>"$w/gemv.txt"
done
cat "$w/gemv.txt"
MINUTES=${MINUTES:-1} FAMILIES=gemm.gemv timeout 150 \
  scripts/campaigns_device.sh "$w/campaign" "$b" gemm:fp32:30000 >"$w/campaign.log" 2>&1
tail -2 "$w/campaign/report.txt" 2>/dev/null
if [[ -n ${PLAN:-} && -e $PLAN/plan.tsv ]]; then
  mkdir -p "$w/eval/fp32" && cp "$PLAN"/plan*.tsv "$w/eval/fp32/"
  RESULTS=$w/eval EVAL_GROUPS=decode TORCH_CONV=0 timeout 150 \
    bash bench/eval/run.sh gpu fp32 "$b/bench/kernels" >"$w/eval.log" 2>&1
  tail -12 "$w/eval/fp32/eval.txt"
fi
tar czf "$OUT/gemv.tgz" -C "$OUT" gemv
