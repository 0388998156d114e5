#!/usr/bin/env bash
# Why TMA reads rows that are 16- but not 128-byte aligned slowly (issue 23's
# bf16 1000^3 floor), in one device call: ncu --set full of gemm.wgmma's
# 64x128 tile and of cuBLASLt's pick on 1000^3 NN with tight rows (2000
# bytes) and rows padded to 1024 elements, then the cluster pair (cm = 2,
# B multicast) against cm = 1 on tight and padded rows where its rule takes
# it (B's TMA box 128 bytes wide: NT with bk = 64, NN/TN with bn = 64).
# Carry build/gpu-carry (scripts/gpu_carry.sh). Writes $OUT/align.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-/tmp/align}
bin=build/gpu-carry/bin/mma_bench
export LD_LIBRARY_PATH="$PWD/build/gpu-carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
w=$OUT/align
mkdir -p "$w"
t64="bm=64 bn=128 bk=64 st=8 wg=1 gm=4 kg=1 cm=1"
OUT=$w/ncu bash bench/kernels/wgmma_profile_device.sh \
  "bf16 NN 1000 1000 1000|$t64" "bf16 NN 1000 1000 1000 1024 1024 1000|$t64"
o=$w/cluster.txt
run() { # shape params
  timeout 60 "$bin" --families gemm.wgmma --profile "$1" "$2" 21 2>&1 |
    grep -E "^profile |rror" | head -2 >> "$o"
}
for s in "bf16 NT 1000 1000 1000" "bf16 NT 1000 1000 1000 1024 1024 1000" \
         "bf16 NT 3000 3000 3000" "bf16 NT 5000 1000 2000"; do
  for cm in 1 2; do
    run "$s" "bm=64 bn=128 bk=64 st=8 wg=1 gm=4 kg=1 cm=$cm"
    run "$s" "bm=128 bn=128 bk=64 st=6 wg=2 gm=4 kg=1 cm=$cm"
    run "$s" "bm=128 bn=256 bk=64 st=4 wg=2 gm=8 kg=1 cm=$cm"
  done
done
for s in "bf16 NN 1000 1000 1000" "bf16 NN 2560 7000 2560" "bf16 TN 1000 1000 1000"; do
  for cm in 1 2; do
    run "$s" "bm=128 bn=64 bk=64 st=8 wg=2 gm=4 kg=1 cm=$cm"
    run "$s" "bm=64 bn=64 bk=64 st=8 wg=1 gm=4 kg=1 cm=$cm"
  done
done
cat "$o"
tar czf "$OUT/align.tgz" -C "$OUT" align
