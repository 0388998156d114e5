#!/usr/bin/env bash
# Session 18, H100 call 1: PROBE=ws (the MLP stream under W FMAs/float, lockstep vs warp-specialised) on the idle
# GPU while the daemon builds from .deps (cores 8-15); then a gemm.gemv fp32 campaign (the bayes
# generator's draws held 99 R = 1 samples of 3,666 at N <= 8, none at N = 1: rule min_block_elements, now skipped by gemv's domain).
# carry: .deps build/s17-carry gpu-plan/s18
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
R=/tmp/s18-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/device.txt
ck() { tar czf $OUT/s18.tgz -C /tmp s18-$name; }
[ -d .deps/prefix ] || scripts/offline-deps.sh unpack >/dev/null 2>&1
(OFFLINE_TARGETS="blocktuned blocktune blocktune-worker" timeout 330 taskset -c 8-15 scripts/offline-deps.sh build >$R/build.log 2>&1
 echo "build rc=$? at ${SECONDS}s" >> $R/build.log) &
bpid=$!
PROBE=ws timeout 120 taskset -c 0-7 build/s17-carry/dram_pattern_probe 7168 7168 > $R/ws7168.tsv 2> $R/ws7168.err
echo "probe rc=$? at ${SECONDS}s"
PROBE=ws timeout 40 taskset -c 0-7 build/s17-carry/dram_pattern_probe 4096 4096 > $R/ws4096.tsv 2> $R/ws4096.err
echo "probe4096 rc=$? at ${SECONDS}s"; ck; cat $R/ws7168.tsv | head -50
wait $bpid; tail -1 $R/build.log; ck
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
left=$((310 - SECONDS)); min=$(( (left - 30) / 60 )); [ $min -gt 2 ] && min=2; [ $min -lt 1 ] && min=1
echo "campaign: ${left}s left, MINUTES=$min"
FAMILIES=gemm.gemv SEED=1801 TAR=1 MINUTES=$min timeout $left \
  scripts/campaigns_device.sh $R/campaign build-gpu gemm:fp32:30000 > $R/campaign.log 2>&1; echo "campaign rc=$? at ${SECONDS}s"
ck; tail -n 3 $R/campaign.log; tar xzOf $R/campaign.tgz --wildcards "*report.txt" 2>/dev/null; ls -la $OUT
