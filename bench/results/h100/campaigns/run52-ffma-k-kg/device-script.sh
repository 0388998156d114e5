#!/usr/bin/env bash
# Session 14, call A: a Bayes campaign of gemm.ffma_k v5 + gemm.ffma_kpk v2 fp32 whose domains draw K_G 3..7
# (b4bcd30), on whichever card comes (results tagged by its name).
# carry: .deps build/ka-carry gpu-plan/kn gpu-plan/kg-camp.sh
#  1. blocktuned/blocktune/worker built from .deps (build-gpu)
#  2. the campaign: 40,000 samples or what the time left allows
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
R=/tmp/kc-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
ck() { tar czf $OUT/kc.tgz -C /tmp kc-$name; }
[ -d .deps/prefix ] || scripts/offline-deps.sh unpack >/dev/null 2>&1
(OFFLINE_TARGETS="blocktuned blocktune blocktune-worker" timeout 330 taskset -c 6-15 scripts/offline-deps.sh build >$R/build.log 2>&1
 echo "build rc=$? at ${SECONDS}s" >> $R/build.log) &
bpid=$!
# The GPU is idle while the daemon builds: the fp32 mlp and cov groups with the plan of the shipped v5 models
# (no K_G 3..7 in their data), plus 3,144 neighbours of the best gemm.ffma_k configurations found so far on
# 7168x16x7168, 4096x16x4096 and 64x64x65536/131072 (gpu-plan/make-extra.sh, bench/kernels/neighbors) timed in full;
# on cores 0-5, the build on 6-15.
( export LD_LIBRARY_PATH="$PWD/build/ka-carry/lib:/usr/local/cuda/lib64"
  SWEEP=40 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="mlp cov" RESULTS=gpu-plan/kn timeout 230 \
    taskset -c 0-5 bench/eval/run.sh gpu fp32 build/ka-carry/bin > $R/eval-kn.log 2>&1; echo "eval rc=$? at ${SECONDS}s" )
cp -r gpu-plan/kn $R/; ck
wait $bpid; tail -1 $R/build.log; ck
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
left=$((510 - SECONDS)); min=$(( (left - 40) / 60 )); [ $min -lt 1 ] && min=1
echo "campaign: ${left}s left, MINUTES=$min"
FAMILIES=gemm.ffma_k,gemm.ffma_kpk SEED=521 TAR=1 MINUTES=$min timeout $left \
  scripts/campaigns_device.sh $R/campaign build-gpu gemm:fp32:40000 > $R/campaign.log 2>&1; echo "campaign rc=$? at ${SECONDS}s"
ck; tail -n 3 $R/campaign.log; tar xzOf $R/campaign.tgz --wildcards "*report.txt" 2>/dev/null; ls -la $OUT
