#!/usr/bin/env bash
# KC = 128 (512-byte rows per stage) around the best gemm.ffma_k configurations of issue 18's MLP and covariance
# shapes (their KC = 32 / 64 oracles, bench/results/h100/eval/fp32/eval-s15a.csv, eval-s14c.csv), plus the same
# configurations at their own KC for a same-run comparison.
set -euo pipefail
nb=build/bench/kernels/neighbors
out=${1:?out}
: > $out
ctx() { echo "gemm m=$1 n=$2 k=$3 layout=NT dtype=fp32"; }
gen() { local g=$1 m=$2 n=$3 k=$4 vary=$5; shift 5
  for c in "$@"; do $nb --group $g --context "$(ctx $m $n $k)" --config "gemm.ffma_k v5 $c" --vary $vary >> $out; done; }
gen mlp 7168 16 7168 KC=64/128,ST=2/3/4,WK=1/2/4/8,KG=1/2/3/4/7,CL=1/2 \
  "LM=16 TM=8 TN=4 WM=1 WN=2 KC=64 ST=3 KG=2 WK=4 CL=1" "LM=8 TM=8 TN=4 WM=2 WN=1 KC=64 ST=4 KG=2 WK=4 CL=1" \
  "LM=8 TM=4 TN=4 WM=2 WN=1 KC=64 ST=2 KG=2 WK=4 CL=2"
gen mlp 4096 16 4096 KC=64/128,ST=2/3/4,WK=2/4/8,KG=1/2/4,CL=1/2 "LM=16 TM=2 TN=8 WM=2 WN=1 KC=64 ST=4 KG=2 WK=4 CL=2"
gen cov 64 64 65536 KC=32/64/128,ST=2/3/4,WK=1/2/4,KG=128/256/512 "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1 CL=1"
gen cov 64 64 131072 KC=32/64/128,ST=2/3/4,WK=1/2/4,KG=128/256/512 "LM=4 TM=4 TN=8 WM=4 WN=1 KC=32 ST=2 KG=256 WK=1 CL=1"
sort -u -o $out $out
cut -f2 $out | sort | uniq -c
