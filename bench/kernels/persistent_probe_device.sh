#!/usr/bin/env bash
# What a persistent grid would give the Hopper families, in one device call:
# each configuration timed twice in the same process beside the vendor's
# best (mma_bench --profile), once with one program per tile and once with
# 132 programs (one per H100 SM) walking the tiles grid-stride
# (mma_bench --programs, which only the grid-stride kernels of gemm.wgmma
# without cluster pairs and conv.wgmma take). The output of every timed
# kernel is checked against the vendor's first. Carry build/gpu-carry.
# Writes $OUT/persistent.txt.
export LD_LIBRARY_PATH=$PWD/build/gpu-carry/lib
B=build/gpu-carry/bin/mma_bench
o=$OUT/persistent.txt
run() { # op fam shape params
  for p in 0 132; do
    r=$(timeout 60 $B --op $1 --families $2 --programs $p --profile "$3" "$4" 21 2>/dev/null | grep -E "^profile " | head -1)
    echo "programs=$p | $3 | $4 | $r" >> $o
  done
}
nvidia-smi -L > $o
C3="conv n=32 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1 dtype=bf16"
C4="conv n=32 h=7 w=7 c=512 k=512 r=3 s=3 pad=1 stride=1 dilation=1 dtype=tf32"
C5="conv n=32 h=14 w=14 c=512 k=512 r=3 s=3 pad=1 stride=2 dilation=1 dtype=bf16"
run conv conv.wgmma "$C3" "bm=256 bn=64 bk=64 st=5 wg=1 gm=8"
run conv conv.wgmma "$C3" "bm=128 bn=64 bk=64 st=6 wg=1 gm=8"
run conv conv.wgmma "$C3" "bm=128 bn=64 bk=64 st=6 wg=2 gm=8"
run conv conv.wgmma "$C4" "bm=64 bn=64 bk=64 st=6 wg=1 gm=1"
run conv conv.wgmma "$C4" "bm=128 bn=64 bk=32 st=6 wg=2 gm=1"
run conv conv.wgmma "$C5" "bm=64 bn=128 bk=64 st=5 wg=1 gm=1"
run conv conv.wgmma "$C5" "bm=128 bn=128 bk=64 st=4 wg=2 gm=1"
run gemm gemm.wgmma "bf16 NT 8192 4096 4096" "bm=128 bn=256 bk=64 st=4 wg=2 gm=8 kg=1 cm=1"
run gemm gemm.wgmma "bf16 NT 16384 4096 4096" "bm=128 bn=256 bk=64 st=4 wg=2 gm=8 kg=1 cm=1"
run gemm gemm.wgmma "bf16 NN 4096 4096 4096" "bm=128 bn=256 bk=64 st=4 wg=2 gm=8 kg=1 cm=1"
cat $o
