#!/usr/bin/env bash
# The thesis evaluation (issue 8) in three steps; results go to
# bench/results/h100/eval unless RESULTS says otherwise.
#
#   bench/eval/run.sh plan            # any machine: blocktune's answers (the
#                                     # query path over the shipped models)
#   bench/eval/run.sh gpu EVAL_BENCH  # the GPU host: time the plan (about
#                                     # 5 min on an H100), then Triton
#                                     # (TRITON=0: not)
#   bench/eval/run.sh report          # any machine: summary.md and the PNGs
#
# EVAL_BENCH is bench/kernels/eval_bench from a build with the CUDA toolkit
# (it needs no gRPC, SQLite or libtorch, so it can be built elsewhere and
# copied). The Triton step runs where python3 can import torch and triton.
set -euo pipefail
cd "$(dirname "$0")/../.."
results=${RESULTS:-bench/results/h100/eval}
mkdir -p "$results"

case "${1:-}" in
  plan)
    build=${BUILD_DIR:-build}
    scripts/setup.sh
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" --target blocktuned eval_plan
    "$build/bench/eval_plan" --blocktuned "$build/server/blocktuned" \
      --models models/pretrained/h100-sxm/models.json.gz \
      --shapes bench/eval/shapes.txt --out "$results/plan.tsv" --top 10
    ;;
  gpu)
    bench=${2:?usage: run.sh gpu EVAL_BENCH}
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    "$bench" --plan "$results/plan.tsv" --family square --family mlp --family cov \
      --csv "$results/eval-gemm.csv" --json "$results/eval-gemm.json" \
      --sweep 300 --budget-ms 6000 | tee "$results/eval-gemm.txt"
    "$bench" --plan "$results/plan.tsv" --family deepbench --family conv56 \
      --family conv256 --family resnet50_b1 --family resnet50_b32 \
      --csv "$results/eval-rest.csv" --json "$results/eval-rest.json" \
      --sweep 300 --budget-ms 6000 | tee "$results/eval-rest.txt"
    if [[ "${TRITON:-1}" != 0 ]]; then
      python3 bench/eval/triton_gemm.py --plan "$results/plan.tsv" \
        --csv "$results/triton.csv" | tee "$results/triton.txt"
    fi
    ;;
  report)
    python=python3
    [[ -x /usr/bin/python3 ]] && python=/usr/bin/python3  # Debian's, with matplotlib
    "$python" bench/eval/report.py --results "$results" --out "$results"
    ;;
  *)
    sed -n '2,14p' "$0" >&2
    exit 2
    ;;
esac
