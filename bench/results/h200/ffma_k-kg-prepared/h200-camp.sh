#!/usr/bin/env bash
# H200 call (prepared sessions 16-18, not yet run): PROBE=ws on the idle GPU while the daemon builds, then the K_G campaign
# of gemm.ffma_k v5 + gemm.ffma_kpk v2 fp32 (the H100 run52 counterpart).
# carry: .deps build/s17-carry (the probe, built by nvcc from bench/kernels/dram_pattern_probe.cu) and this script.
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
