#!/usr/bin/env bash
# Landing branch ffma-k-kg (gemm.ffma_k v5 / kpk v2, K_G 3,5,6,7): the device half, on whichever card comes
# (results tagged by its name). carry: .deps build/kg-carry gpu-plan/kg-eval gpu-plan/kg-land.sh
#  1. blocktuned/blocktune/worker built from .deps (build-gpu), the GPU test of the families meanwhile
#  2. the mlp and cov groups with a sweep of 300 per family (gemm.ffma_k's new K_G among the candidates)
#  3. a Bayes campaign of gemm.ffma_k + gemm.ffma_kpk fp32, 18,000 samples (3 minutes at most)
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
R=/tmp/kg-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
ck() { tar czf $OUT/kg.tgz -C /tmp kg-$name; }
[ -d .deps/prefix ] || scripts/offline-deps.sh unpack >/dev/null 2>&1
(OFFLINE_TARGETS="blocktuned blocktune blocktune-worker" timeout 200 scripts/offline-deps.sh build >$R/build.log 2>&1; echo "build rc=$? at ${SECONDS}s" >> $R/build.log) &
bpid=$!
( export LD_LIBRARY_PATH="$PWD/build/kg-carry/lib:/usr/local/cuda/lib64"
  timeout 150 build/kg-carry/bin/gemm_gemv_gpu_test --gtest_filter='*FfmaK*' > $R/gpu_test.txt 2>&1; echo "gpu test rc=$? at ${SECONDS}s" )
wait $bpid; tail -1 $R/build.log; ck
( export LD_LIBRARY_PATH="$PWD/build/kg-carry/lib:/usr/local/cuda/lib64"
  SWEEP=300 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="mlp cov" RESULTS=gpu-plan/kg-eval timeout 150 \
    bench/eval/run.sh gpu fp32 build/kg-carry/bin > $R/eval.log 2>&1; echo "eval rc=$? at ${SECONDS}s" )
cp -r gpu-plan/kg-eval $R/; ck
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
left=$((560 - SECONDS)); [ $left -gt 240 ] && left=240
FAMILIES=gemm.ffma_k,gemm.ffma_kpk SEED=501 TAR=1 MINUTES=3 timeout $left \
  scripts/campaigns_device.sh $R/campaign build-gpu gemm:fp32:18000 > $R/campaign.log 2>&1; echo "campaign rc=$? at ${SECONDS}s"
ck; tail -n 3 $R/campaign.log; tar xzOf $R/campaign.tgz --wildcards "*report.txt" 2>/dev/null; ls -la $OUT
