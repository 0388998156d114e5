#!/usr/bin/env bash
# gemm.ffma_ks (stream-K) around the tile shapes gemm.ffma_k's searches found best on issue 18's MLP layers and the
# decode products: every KC, ST, WK on six tile shapes, plus 120 random neighbours per shape.
set -euo pipefail
nb=build/bench/kernels/neighbors
out=${1:?out}
: > $out
ctx() { echo "gemm m=$1 n=$2 k=$3 layout=NT dtype=fp32"; }
for s in "mlp 7168 16 7168" "mlp 4096 16 4096" "mlp 2048 16 2048" "decode 4096 16 11008" "decode 12288 8 4096" "decode 4096 8 4096"; do
  set -- $s
  for c in "LM=8 TM=8 TN=4 WM=2 WN=1" "LM=8 TM=8 TN=4 WM=1 WN=1" "LM=16 TM=4 TN=8 WM=2 WN=1" "LM=8 TM=4 TN=4 WM=2 WN=1" \
           "LM=16 TM=4 TN=4 WM=1 WN=2" "LM=16 TM=4 TN=8 WM=1 WN=1"; do
    $nb --group $1 --context "$(ctx $2 $3 $4)" --config "gemm.ffma_ks v1 $c KC=64 ST=3 WK=4" --vary KC=32/64,ST,WK >> $out 2>/dev/null || true
  done
  $nb --group $1 --context "$(ctx $2 $3 $4)" --config "gemm.ffma_ks v1 LM=8 TM=8 TN=4 WM=2 WN=1 KC=64 ST=3 WK=4" \
    --vary LM,TM,TN,WM,WN,KC=32/64,ST,WK 2>/dev/null | shuf -n 120 --random-source=<(yes $2) >> $out
done
sort -u -o $out $out
cut -f2 $out | sort | uniq -c
