#!/usr/bin/env bash
# Session 16, call 1 (H100). carry: build/ka-carry build/s16-carry gpu-plan/s16
#  1. dram_pattern_probe: gemm.ffma_k's global->shared pattern on 7168x7168 fp32 A, no arithmetic (KC, ST, rows, KG, ROT).
#  2. KC=128 (a domain extension built into build/s16-carry/eval_bench) on the MLP 7168/4096 and cov 65536/131072
#     shapes: 506 configurations (make-extra-kc.sh) beside their KC=32/64 bases and the vendor, one run.
#  3. the two fp32 evaluation shapes left out in session 15 (odd 777x333x1555 NT, prefill 8192x4096x11008 NT).
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
R=/tmp/s16c1-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $R/device.txt
ck() { tar czf $OUT/s16c1.tgz -C /tmp s16c1-$name; }
timeout 120 build/s16-carry/dram_pattern_probe 7168 7168 > $R/dram_pattern.tsv 2> $R/dram_pattern.err
echo "probe rc=$? at ${SECONDS}s"; ck
sort -t$'\t' -k8,8g $R/dram_pattern.tsv | head -25; grep -E "^linear|^#|FAIL" $R/dram_pattern.tsv | head
grep -P "^tile\t128\t64\t4\t2\t0" $R/dram_pattern.tsv
( SWEEP=40 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="mlp cov" PART=kc RESULTS=gpu-plan/s16kc timeout 200 \
    bench/eval/run.sh gpu fp32 $PWD/build/s16-carry > $R/eval-kc.log 2>&1; echo "eval kc rc=$? at ${SECONDS}s" )
cp -r gpu-plan/s16kc/fp32 $R/kc; ck; tail -n 8 $R/eval-kc.log | cut -c1-200
B=$PWD/build/ka-carry/bin
( SWEEP=40 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="odd prefill" PART=s16 RESULTS=gpu-plan/s16 timeout $((575 - SECONDS)) \
    bench/eval/run.sh gpu fp32 $B > $R/eval.log 2>&1; echo "eval rc=$? at ${SECONDS}s" )
cp -r gpu-plan/s16/fp32 $R/; ck; tail -n 12 $R/eval.log | cut -c1-160
ls -la $OUT
