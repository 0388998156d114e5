#!/usr/bin/env bash
# Session 18, H200 call: PROBE=ws on the idle GPU while the daemon builds, then the K_G campaign (ffma_k v5 + ffma_kpk v2 fp32).
# carry: .deps build/s16-carry gpu-plan/s16. While the daemon builds (cores 6-15) the probe runs on the idle GPU.
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
R=/tmp/kc-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $R/device.txt
ck() { tar czf $OUT/kc.tgz -C /tmp kc-$name; }
[ -d .deps/prefix ] || scripts/offline-deps.sh unpack >/dev/null 2>&1
(OFFLINE_TARGETS="blocktuned blocktune blocktune-worker" timeout 330 taskset -c 6-15 scripts/offline-deps.sh build >$R/build.log 2>&1
 echo "build rc=$? at ${SECONDS}s" >> $R/build.log) &
bpid=$!
PROBE=ws timeout 120 taskset -c 0-5 build/s17-carry/dram_pattern_probe 7168 7168 > $R/ws.tsv 2> $R/ws.err
echo "probe rc=$? at ${SECONDS}s"; ck; cat $R/ws.tsv | head -50
wait $bpid; tail -1 $R/build.log; ck
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
left=$((400 - SECONDS)); min=$(( (left - 40) / 60 )); [ $min -lt 1 ] && min=1
echo "campaign: ${left}s left, MINUTES=$min"
FAMILIES=gemm.ffma_k,gemm.ffma_kpk SEED=1621 TAR=1 MINUTES=$min timeout $left \
  scripts/campaigns_device.sh $R/campaign build-gpu gemm:fp32:40000 > $R/campaign.log 2>&1; echo "campaign rc=$? at ${SECONDS}s"
ck; tail -n 3 $R/campaign.log; tar xzOf $R/campaign.tgz --wildcards "*report.txt" 2>/dev/null; ls -la $OUT
