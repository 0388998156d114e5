#!/usr/bin/env bash
# Session 15, call 2 (any H100/H200; results tagged by the card). carry: build/ka-carry gpu-plan/m2
#  1. gemm_gemv_gpu_test's gemm.ffma_ks tests (the new stream-K family), then
#  2. the fp32 GEMM groups whose answers the v5/run52 models changed: mlp and decode (part 1), then after ncu,
#     if LIMIT (s) leaves time, deepbench, proj, prefill, odd (part 2),
#     with extras: 1,350 round-2 gemm.ffma_k neighbours on the MLP layers (make-extra2.sh) and 1,239 gemm.ffma_ks
#     configurations on the MLP and decode layers (make-extra-ks.sh); eval_bench sweeps gemm.ffma_ks too;
#  3. ncu of the stream kernel and gemm.ffma_k's K_G = 2 best on 7168x16x7168.
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
R=/tmp/c2-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $R/device.txt
ck() { tar czf $OUT/c2.tgz -C /tmp c2-$name; }
B=$PWD/build/ka-carry/bin
export LD_LIBRARY_PATH="$PWD/build/ka-carry/lib:/usr/local/cuda/lib64"
timeout 150 $B/gemm_gemv_gpu_test --gtest_filter='*FfmaKStream*' > $R/gpu_test.txt 2>&1; rc=$?
echo "gpu test rc=$rc at ${SECONDS}s" | tee -a $R/gpu_test.txt; grep -E "^\[  |cases|error|Failure" $R/gpu_test.txt | head -20; ck
if [[ $rc -ne 0 ]]; then
  echo "stream test failed: eval skipped (its sweep would launch gemm.ffma_ks)"
else
  ( SWEEP=40 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="mlp decode" PART=1 RESULTS=gpu-plan/m2 timeout 220 \
      bench/eval/run.sh gpu fp32 $B > $R/eval-1.log 2>&1; echo "eval 1 rc=$? at ${SECONDS}s" )
  cp -r gpu-plan/m2 $R/; ck; tail -n 20 $R/eval-1.log | cut -c1-150
fi
J="fp32 NT 7168 16 7168|LM=8 TM=8 TN=4 WM=2 WN=1 KC=64 ST=4 KG=2 WK=4 CL=1"
FAMILY=gemm.ffma_k KERNEL=blocktune_ffma_k JOBS="$J" timeout 100 bash bench/kernels/gemv_ncu_device.sh $B $R/ncu-ffma_k.txt > $R/ncu-summary.txt 2>&1
if [[ $rc -eq 0 ]]; then
  FAMILY=gemm.ffma_ks KERNEL=blocktune_ffma_ks JOBS="fp32 NT 7168 16 7168|LM=8 TM=8 TN=4 WM=2 WN=1 KC=64 ST=3 WK=4" \
    timeout 60 bash bench/kernels/gemv_ncu_device.sh $B $R/ncu-ffma_ks.txt >> $R/ncu-summary.txt 2>&1
fi
echo "ncu done at ${SECONDS}s" >> $R/ncu-summary.txt; ck
grep -E "^==|blocktune_ffma|gemv|gemm|Duration|DRAM Throughput|Issued Warp|Eligible Warps|Grid Size|Block Size|Registers Per|Achieved Occ" \
  $R/ncu-ffma_k.txt $R/ncu-ffma_ks.txt $R/ncu-cublas.txt 2>/dev/null | cut -c1-160 | head -60
left=$((${LIMIT:-500} - SECONDS - 15))
if [[ $rc -eq 0 && $left -gt 90 ]]; then
  ( SWEEP=40 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="deepbench proj prefill odd" PART=2 RESULTS=gpu-plan/m2 timeout $left \
      bench/eval/run.sh gpu fp32 $B > $R/eval-2.log 2>&1; echo "eval 2 rc=$? at ${SECONDS}s" )
  cp -r gpu-plan/m2 $R/; ck; tail -n 30 $R/eval-2.log | cut -c1-150
fi
ls -la $OUT
