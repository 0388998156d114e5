# ffma_k register-cap probe: times gemm.ffma_k configurations with a .maxnreg cap (a local, uncommitted generator hook read from BT_PROBE_MAXNREG; see bench/results/h200/ffma_k-v5-probe/README.md). Carry build/gpu-carry built with that hook; writes $OUT/cap.txt.
export LD_LIBRARY_PATH=$PWD/build/gpu-carry/lib:/usr/local/cuda/lib64
b=build/gpu-carry/bin/mma_bench
run() { # shape params caps...
  s=$1; p=$2; shift 2
  for c in "$@"; do
    if [ "$c" = 0 ]; then unset BT_PROBE_MAXNREG; else export BT_PROBE_MAXNREG=$c; fi
    echo "# cap=$c [$p]"
    timeout 90 $b --families gemm.ffma_k --profile "$s" "$p" 21 2>&1 | grep -E "^profile |rror"
  done
  unset BT_PROBE_MAXNREG
}
{
run "fp32 NT 64 64 65536" "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1" 0 96 80 64
run "fp32 NT 64 64 65536" "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=512 WK=1" 0 96 80
run "fp32 NT 64 64 16384" "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=128 WK=1" 0 96 80
run "fp32 NT 4096 16 4096" "LM=16 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4" 0 96 80 64
run "fp32 NT 4096 4096 4096" "LM=4 TM=8 TN=8 WM=2 WN=2 KC=16 ST=3 KG=1 WK=1" 0 128
run "fp32 NT 4096 4096 4096" "LM=4 TM=8 TN=8 WM=2 WN=2 KC=32 ST=3 KG=1 WK=1" 0 128
run "fp32 NT 2048 4096 4096" "LM=4 TM=8 TN=8 WM=2 WN=2 KC=16 ST=3 KG=1 WK=1" 0 128
run "fp32 NT 4096 3072 768" "LM=4 TM=8 TN=8 WM=2 WN=2 KC=16 ST=3 KG=1 WK=1" 0 128
} 2>&1 | tee $OUT/cap.txt
