#!/usr/bin/env bash
# A gemm.ffma campaign on the GPU host in one device call, carrying .deps
# (scripts/offline-deps.sh download): builds gemm_gpu_test first and runs
# it (float64 reference, the large thread tiles included) while the daemon
# builds, then a campaign of gemm.ffma alone (fp32, MIN minutes, default 3)
# through scripts/campaigns_device.sh. Writes $OUT/cw.tgz (device.txt, the
# build logs, gemm_gpu_test.txt, campaign/).
set -u
cd "$(dirname "$0")/../.."
w=/tmp/cw; mkdir -p $w; s0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $w/device.txt
OFFLINE_TARGETS=gemm_gpu_test scripts/offline-deps.sh build > $w/build1.log 2>&1; echo "gpu test built at $((SECONDS-s0)) s"
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
(timeout 240 build-gpu/kernels/gemm_gpu_test > $w/gemm_gpu_test.txt 2>&1) &
OFFLINE_TARGETS="blocktuned blocktune blocktune-worker" scripts/offline-deps.sh build > $w/build2.log 2>&1; echo "daemon built at $((SECONDS-s0)) s"; tail -2 $w/build2.log
wait; grep -E "^\[  (PASSED|FAILED)|cases|Failure" $w/gemm_gpu_test.txt | head
MINUTES=${MIN:-3} FAMILIES=gemm.ffma timeout 330 scripts/campaigns_device.sh $w/campaign build-gpu gemm:fp32:60000 > $w/campaign.log 2>&1
tail -3 $w/campaign.log; cat $w/campaign/report.txt; echo "done at $((SECONDS-s0)) s"
tar czf $OUT/cw.tgz -C /tmp cw
