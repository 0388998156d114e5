set -uo pipefail
b=build/gpu-carry/bin
export LD_LIBRARY_PATH="$b/../lib:/usr/local/cuda/lib64"
w=$OUT/ncu; mkdir -p $w
for job in "fp32 NT 64 64 65536|R=4 NC=8 W=4 WN=4 V=4 U=1 KG=16" \
           "fp32 NT 7168 16 7168|R=4 NC=16 W=4 WN=1 V=4 U=1 KG=1" \
           "fp32 NT 64 64 65536|R=4 NC=8 W=4 WN=1 V=4 U=2 KG=16"; do
  shape=${job%%|*} params=${job#*|}
  echo "== $shape $params" >>$w/ncu.txt
  timeout 120 ncu -k regex:blocktune_gemv --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats \
    --section Occupancy --section WarpStateStats --section SchedulerStats \
    $b/mma_bench --families gemm.gemv --profile "$shape" "$params" 3 >>$w/ncu.txt 2>&1
done
grep -E "^== |Duration|Throughput|Registers Per|Achieved Occ|Eligible Warps|Warp Cycles Per Issued|Hit Rate|Mem Busy|Max Bandwidth" $w/ncu.txt
