#!/usr/bin/env bash
# The query path's ensemble ranking (models/search.h kEnsembleRisk) scored
# offline, without a GPU: for each evaluation of bench/results that kept
# its measured candidates (eval-times.tsv.gz), the shipped models of its
# GPU rank the measured set (oracle_eval eval --risk R) and the top 1 is
# compared with the set's best, for R = 0 (the ensemble's mean) to 2.
#   bench/eval/risk_offline.sh [BUILD] > bench/results/cpu/ensemble_risk.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# oracle_eval eval --risk R on the measured candidates of each evaluation"
echo "# (bench/eval/times_to_results.py), with the shipped models of its GPU; $(date -u +%F)"
one() {  # results-dir dtype op models-dir
  local dir=$1 dtype=$2 op=$3 models=$4
  local n
  n=$(echo "$dir-$op" | tr '/' '_')
  # The folder: its whole-run times file and every part's (eval_times.py).
  python3 bench/eval/times_to_results.py "$dir" "$tmp/$n.tsv" \
    "$tmp/$n.ctx" "$op" >/dev/null
  for r in 0 0.5 1 1.5 2; do
    printf '%-44s %-5s %-4s risk %-4s ' "$dir" "$dtype" "$op" "$r"
    "$build/bench/oracle_eval" eval --contexts "$tmp/$n.ctx" --dtype "$dtype" \
      --models "$models/models-$op-$dtype.json.gz" --results "$tmp/$n.tsv" \
      --risk "$r" 2>/dev/null | tail -1 | sed 's/^over the measured set of //'
  done
}
one bench/results/h100/eval/bf16 bf16 gemm models/pretrained/h100-sxm
one bench/results/h100/eval/bf16 bf16 conv models/pretrained/h100-sxm
one bench/results/h100/eval/tf32 tf32 gemm models/pretrained/h100-sxm
one bench/results/h100/eval/tf32 tf32 conv models/pretrained/h100-sxm
one bench/results/h100/eval/fp32 fp32 gemm models/pretrained/h100-sxm
one bench/results/h100/eval/fp32 fp32 conv models/pretrained/h100-sxm
one bench/results/h200/eval/bf16 bf16 gemm models/pretrained/h200
one bench/results/h200/eval/bf16 bf16 conv models/pretrained/h200
one bench/results/h200/eval/fp32 fp32 gemm models/pretrained/h200
one bench/results/h200/eval/fp32 fp32 conv models/pretrained/h200
one bench/results/h200/eval-gemv-v3/fp32 fp32 gemm models/pretrained/h200
