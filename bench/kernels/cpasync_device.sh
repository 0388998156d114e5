#!/usr/bin/env bash
# gemm.wgmma_ca (the cp.async producer, kernels/gemm_wgmma.h) in one device
# call: its GPU test, then its kernels on shapes whose rows are 16- but not
# 128-byte aligned, each timed beside cuBLASLt (mma_bench --profile: best of
# the heuristic's algorithms, L2 read-flushed, median of 21, the output
# checked against cuBLASLt's), next to gemm.wgmma's same tile on the same
# rows and on rows padded to 128 bytes (what TMA reads at full speed).
# Writes $OUT/cpasync-tests.txt and $OUT/cpasync.txt.
#   bash bench/kernels/cpasync_device.sh [BIN]
# BIN holds gemm_wgmma_gpu_test and mma_bench: build/gpu-carry/bin (the
# default; carry build/gpu-carry, scripts/gpu_carry.sh), or build-gpu's
# after scripts/offline-deps.sh build on the GPU host (carry .deps), e.g.
# in the call that then runs a gemm.wgmma_ca campaign.
bin=${1:-build/gpu-carry/bin}
if [[ -d $bin/kernels ]]; then  # a build tree (build-gpu): binaries by path
  test_bin=$bin/kernels/gemm_wgmma_gpu_test
  bench_bin=$bin/bench/kernels/mma_bench
else
  test_bin=$bin/gemm_wgmma_gpu_test
  bench_bin=$bin/mma_bench
fi
for lib in "$PWD/build/gpu-carry/lib" "$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu"; do
  [[ -d $lib ]] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/device.txt"
timeout 300 "$test_bin" --gtest_filter='*CpAsync*' > "$OUT/cpasync-tests.txt" 2>&1
grep -E "^\[  (PASSED|FAILED) |cases pass" "$OUT/cpasync-tests.txt"
o=$OUT/cpasync.txt
run() { # family shape params
  timeout 120 "$bench_bin" --families "$1" --profile "$2" "$3" 21 2>&1 |
    grep -E "^profile |rror" | head -2 >> "$o"
}
for s in "bf16 NN 1000 1000 1000" "bf16 NT 1000 1000 1000" "bf16 TN 1000 1000 1000" \
         "bf16 NN 2560 7000 2560" "bf16 NN 3000 3000 3000" "bf16 NT 5000 1000 2000" \
         "fp16 NN 1000 1000 1000" "tf32 NT 1000 1000 1000"; do
  read -r prec lay m n k <<< "$s"
  bk=64; [[ $prec == tf32 ]] && bk=32
  for p in "bm=64 bn=128 bk=$bk st=8 wg=1 gm=4 kg=1 cm=1" \
           "bm=128 bn=128 bk=$bk st=6 wg=2 gm=4 kg=1 cm=1" \
           "bm=128 bn=256 bk=$bk st=4 wg=2 gm=8 kg=1 cm=1"; do
    run gemm.wgmma_ca "$s" "$p"
    run gemm.wgmma "$s" "$p"
    pad() { echo $(( ($1 + 63) / 64 * 64 )); }
    case $lay in
      NN) lda=$(pad "$k"); ldb=$(pad "$n") ;;
      NT) lda=$(pad "$k"); ldb=$(pad "$k") ;;
      TN) lda=$(pad "$m"); ldb=$(pad "$n") ;;
      TT) lda=$(pad "$m"); ldb=$(pad "$k") ;;
    esac
    run gemm.wgmma "$s $lda $ldb $n" "$p"
  done
done
cat "$o"
