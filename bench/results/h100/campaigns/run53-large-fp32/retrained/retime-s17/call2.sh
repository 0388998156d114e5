#!/usr/bin/env bash
# Session 17, call 2 (H100). carry: build/ka-carry gpu-plan/s17
# The 31 fp32 contexts whose answer the run53-retrained models change: their top 10 and family top 3, the shipped
# models' top 10 and the evaluation's oracle configuration, one run beside cuBLASLt (SWEEP=0).
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
echo "device: $name"
R=/tmp/s17c2-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $R/device.txt
( SWEEP=0 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="square mlp cov decode deepbench proj prefill odd" PART=s17 RESULTS=gpu-plan/s17/ship \
    timeout 330 bench/eval/run.sh gpu fp32 $PWD/build/ka-carry/bin > $R/eval.log 2>&1; echo "eval rc=$? at ${SECONDS}s" )
cp -r gpu-plan/s17/ship/fp32 $R/ship; tar czf $OUT/s17c2.tgz -C /tmp s17c2-$name; tail -n 8 $R/eval.log | cut -c1-170
