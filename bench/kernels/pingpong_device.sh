#!/usr/bin/env bash
# gemm.wgmma_pp (the ping-pong schedule, kernels/gemm_wgmma.h) in one device
# call: its GPU tests, then its kernels on the prefill and square GEMMs,
# each timed beside cuBLASLt (mma_bench --profile: best of the heuristic's
# algorithms, L2 read-flushed, median of 21, the output checked against
# cuBLASLt's), next to gemm.wgmma_ts's and gemm.wgmma_ps's picks of the
# same shapes. Carry build/gpu-carry (scripts/gpu_carry.sh). Writes
# $OUT/pingpong-tests.txt and $OUT/pingpong.txt.
export LD_LIBRARY_PATH=$PWD/build/gpu-carry/lib
bin=build/gpu-carry/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/device.txt"
{
  timeout 300 "$bin/gemm_wgmma_gpu_test" --gtest_filter='*Pingpong*:*TailSplit*'
  timeout 300 "$bin/gpu_worker_test" --gtest_filter='*PersistentWgmma*'
} > "$OUT/pingpong-tests.txt" 2>&1
grep -E "^\[  (PASSED|FAILED) |cases pass" "$OUT/pingpong-tests.txt"
o=$OUT/pingpong.txt
run() { # family shape params
  timeout 120 "$bin/mma_bench" --families "$1" --profile "$2" "$3" 21 2>&1 |
    grep -E "^profile |rror" | head -2 >> "$o"
}
for s in "bf16 NT 2048 11008 4096" "bf16 NT 2048 12288 4096" "bf16 NT 8192 12288 4096" \
         "bf16 NT 2048 4096 11008" "bf16 NN 4096 4096 4096" "bf16 NN 8192 8192 8192"; do
  run gemm.wgmma_ts "$s" "bm=128 bn=256 bk=64 st=4 wg=2 gm=16 kg=1 cm=1 tl=4"
  run gemm.wgmma_ps "$s" "bm=128 bn=256 bk=64 st=4 wg=2 gm=16 kg=1 cm=1"
  for p in "bm=128 bn=128 bk=64 st=6 wg=2 gm=16 kg=1 cm=1" \
           "bm=64 bn=256 bk=64 st=4 wg=2 gm=16 kg=1 cm=1" \
           "bm=64 bn=192 bk=64 st=5 wg=2 gm=16 kg=1 cm=1" \
           "bm=128 bn=128 bk=64 st=4 wg=2 gm=8 kg=1 cm=1"; do
    run gemm.wgmma_pp "$s" "$p"
  done
done
cat "$o"
