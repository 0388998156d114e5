#!/usr/bin/env bash
# A gemm.ffma campaign on the GPU host in one device call, carrying .deps
# (scripts/offline-deps.sh download): builds gemm_gpu_test first and runs
# it (float64 reference, the large thread tiles included) while the daemon
# builds, then a campaign of gemm.ffma alone (fp32, MIN minutes, default 3,
# at most SAMPLES samples, default 60000) through scripts/campaigns_device.sh,
# which also reads SAMPLER and IMPORT (a guided campaign: SAMPLER=guided
# IMPORT=models/pretrained/h200/models-gemm-fp32.json.gz). TEST=0 skips the
# GPU test. FAMILIES=F,.. samples other families than gemm.ffma (the K_G
# campaign of gemm.ffma_k, run52, on another GPU: TEST=0 MIN=5 SAMPLES=40000
# FAMILIES=gemm.ffma_k,gemm.ffma_kpk). MIN_FLOPS and MAX_FLOPS pass through
# to the campaign (its contexts' work, 2*M*N*K): the large fp32 products
# the default cap of 2^36 leaves out, TEST=0 MIN=4 SAMPLES=20000
# FAMILIES=gemm.ffma,gemm.ffma_k MIN_FLOPS=1.4e11 MAX_FLOPS=1.1e12.
# Writes $OUT/cw.tgz (device.txt, the build logs, gemm_gpu_test.txt,
# campaign/).
set -u
cd "$(dirname "$0")/../.."
w=/tmp/cw; mkdir -p $w; s0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $w/device.txt
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
if [[ ${TEST:-1} != 0 ]]; then
  OFFLINE_TARGETS=gemm_gpu_test scripts/offline-deps.sh build > $w/build1.log 2>&1; echo "gpu test built at $((SECONDS-s0)) s"
  (timeout 240 build-gpu/kernels/gemm_gpu_test > $w/gemm_gpu_test.txt 2>&1) &
fi
OFFLINE_TARGETS="blocktuned blocktune blocktune-worker" scripts/offline-deps.sh build > $w/build2.log 2>&1; echo "daemon built at $((SECONDS-s0)) s"; tail -2 $w/build2.log
wait; [[ -f $w/gemm_gpu_test.txt ]] && grep -E "^\[  (PASSED|FAILED)|cases|Failure" $w/gemm_gpu_test.txt | head
MINUTES=${MIN:-3} FAMILIES=${FAMILIES:-gemm.ffma} timeout $((60 * ${MIN:-3} + 150)) \
  scripts/campaigns_device.sh $w/campaign build-gpu gemm:fp32:${SAMPLES:-60000} > $w/campaign.log 2>&1
tail -3 $w/campaign.log; cat $w/campaign/report.txt; echo "done at $((SECONDS-s0)) s"
tar czf $OUT/cw.tgz -C /tmp cw
