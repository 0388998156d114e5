#!/usr/bin/env bash
# Session 14, call C: the fp32 mlp, cov and decode groups with the models retrained on run52 (gemm.ffma_k v5 and
# gemm.ffma_kpk v2 with K_G 3..7 in their data); plan made on the CPU host. carry: build/ka-carry gpu-plan/ke
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
R=/tmp/ke-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
export LD_LIBRARY_PATH="$PWD/build/ka-carry/lib:/usr/local/cuda/lib64"
( SWEEP=40 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="mlp cov decode" RESULTS=gpu-plan/ke timeout 170 \
    bench/eval/run.sh gpu fp32 build/ka-carry/bin > $R/eval.log 2>&1; echo "eval rc=$? at ${SECONDS}s" )
cp -r gpu-plan/ke $R/; tar czf $OUT/ke.tgz -C /tmp ke-$name; tail -n 24 $R/eval.log
