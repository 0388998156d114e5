#!/usr/bin/env bash
# ncu of gemm.gemv configurations (speed of light, memory, launch,
# occupancy, warp states, scheduler), one launch each after two warm-ups:
#   bash bench/kernels/gemv_ncu_device.sh BIN OUTFILE
# BIN holds mma_bench (build/gpu-carry/bin, or build-gpu/bench/kernels after
# scripts/offline-deps.sh build); the profiles are appended to OUTFILE.
# The configurations are the version-2 sweep's best for 64x64x65536 and
# 7168x16x7168, and a U = 2 one of the covariance
# (bench/results/h200/gemv-v2/ncu.txt). FAMILY=F and JOBS="shape|params;.."
# profile other configurations of family F (KERNEL: the regex of its
# main entry):
#   FAMILY=gemm.ffma_k KERNEL=blocktune_ffma_k JOBS="fp32 NT 4096 4096 4096|LM=4 TM=8 TN=8 WM=2 WN=2 KC=16 ST=3 KG=1" \
#     bash bench/kernels/gemv_ncu_device.sh build/gpu-carry/bin ncu.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
b=${1:?usage: gemv_ncu_device.sh BIN OUTFILE}
out=${2:?usage: gemv_ncu_device.sh BIN OUTFILE}
export LD_LIBRARY_PATH="$b/../lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$(dirname "$out")"
family=${FAMILY:-gemm.gemv}
jobs=${JOBS:-"fp32 NT 64 64 65536|R=4 NC=8 W=4 WN=4 V=4 U=1 KG=16;fp32 NT 7168 16 7168|R=4 NC=16 W=4 WN=1 V=4 U=1 KG=1;fp32 NT 64 64 65536|R=4 NC=8 W=4 WN=1 V=4 U=2 KG=16"}
IFS=';' read -ra joblist <<<"$jobs"
for job in "${joblist[@]}"; do
  shape=${job%%|*} params=${job#*|}
  echo "== $shape $params" >>"$out"
  timeout 120 ncu -k "regex:${KERNEL:-blocktune_gemv}" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section LaunchStats \
    --section Occupancy --section WarpStateStats --section SchedulerStats \
    "$b/mma_bench" --families "$family" --profile "$shape" "$params" 3 >>"$out" 2>&1
done
grep -E "^== |Duration|Throughput|Registers Per|Achieved Occ|Eligible Warps|Warp Cycles Per Issued|Hit Rate|Mem Busy|Max Bandwidth" "$out"
