#!/usr/bin/env bash
# Here, after call.sh's device call: file its results, ship the gemv samples, retrain gemm.gemv's H100 fp32 model,
# plan the fp32 evaluation with it and score the changed answers on the evaluation's own measurements.
#   bench/results/h100/gemv-skip-prepared/after.sh FILES_AT/s18.tgz
set -euo pipefail
cd "$(dirname "$0")/../../../.."
tgz=${1:?usage: after.sh s18.tgz}
u=$(mktemp -d)
tar xzf "$tgz" -C "$u"
src=$(ls -d "$u"/s18-*)
D=bench/results/h100/campaigns/run54-gemv-skip
mkdir -p $D bench/results/h100/ffma_k-pipeline-ws
cp "$src"/device*.txt "$src"/build.log "$src"/campaign.log $D/ || true
cp "$src"/ws*.tsv "$src"/ws*.err bench/results/h100/ffma_k-pipeline-ws/ || true
tar xzf "$src/campaign.tgz" -C "$u"
cp "$u"/campaign/report.txt "$u"/campaign/*progress.json $D/
gzip -c "$u"/campaign/*watch.txt >$D/watch.txt.gz
cp "$u/campaign/gemm-fp32-samples.json.gz" models/pretrained/h100-sxm/gemm-fp32-samples-gemv-run54.json.gz
FAMILY=gemm.gemv scripts/train_pretrained.sh models/pretrained/h100-sxm gemm fp32
plan=$(mktemp -d)
BUILD_DIR=build RESULTS=$plan bench/eval/run.sh plan fp32 >/dev/null
cp $plan/fp32/plan.tsv $D/plan-after.tsv
python3 bench/eval/plan_diff.py bench/results/h100/eval/fp32/plan.tsv $plan/fp32/plan.tsv \
  bench/results/h100/eval/fp32 | tee $D/plan_diff.txt
