#!/usr/bin/env bash
# Session 16, call 3 (H100). carry: build/ka-carry gpu-plan/s16 gpu-plan/s16lg
# The fp32 GEMMs above 2^36 flop with the models retrained on run53: the new top 10 and family top 3, and the
# previous models' top 10 as extras, one run, cuBLASLt beside them (SWEEP=0: the sweep's random draws of these
# products take minutes).
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
R=/tmp/s16c3-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $R/device.txt
timeout 60 build/s16-carry/dram_pattern_probe 7168 7168 > $R/dram_pattern_read.tsv 2>&1
FLUSH=memset timeout 60 build/s16-carry/dram_pattern_probe 7168 7168 > $R/dram_pattern_memset.tsv 2>&1
echo "probes done at ${SECONDS}s"; grep -E "^#|^linear" $R/dram_pattern_read.tsv $R/dram_pattern_memset.tsv
sort -t$'\t' -k8,8g $R/dram_pattern_read.tsv | grep ^tile | head -3; grep -P "^tile\t128\t(64|128)\t(3|4)\t2\t0" $R/dram_pattern_read.tsv
tar czf $OUT/s16c3.tgz -C /tmp s16c3-$name
( SWEEP=0 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="square deepbench prefill" PART=lg RESULTS=gpu-plan/s16lg/cut timeout 210 \
    bench/eval/run.sh gpu fp32 $PWD/build/ka-carry/bin > $R/eval.log 2>&1; echo "eval rc=$? at ${SECONDS}s" )
cp -r gpu-plan/s16lg/cut/fp32 $R/; tar czf $OUT/s16c3.tgz -C /tmp s16c3-$name; tail -n 14 $R/eval.log | cut -c1-170
