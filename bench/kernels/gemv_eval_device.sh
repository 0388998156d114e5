#!/usr/bin/env bash
# The fp32 evaluation's groups that gemm.gemv answers (mlp, cov, decode,
# deepbench, odd; EVAL_GROUPS overrides) on the GPU host, from a plan made
# here (bench/eval/run.sh plan fp32 h200) and carried in .eval/fp32, with
# the carried binaries (scripts/gpu_carry.sh build):
#   bash bench/kernels/gemv_eval_device.sh build/gpu-carry/bin
# Writes $OUT/eval.tgz (eval.csv, eval.txt, eval-times.tsv.gz, device.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
b=${1:?usage: gemv_eval_device.sh BIN}
export LD_LIBRARY_PATH="$b/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RESULTS=.eval EVAL_GROUPS=${EVAL_GROUPS:-"mlp cov decode deepbench odd"} TORCH_CONV=${TORCH_CONV:-1} \
  timeout 540 bash bench/eval/run.sh gpu fp32 "$b" >.eval/run.log 2>&1
tail -45 .eval/fp32/eval.txt
tar czf "$OUT/eval.tgz" .eval
