#!/usr/bin/env bash
# Neighbourhoods of the best gemm.ffma_k configurations found so far on the MLP and covariance shapes of issue 18.
set -euo pipefail
nb=build/bench/kernels/neighbors
out=${1:?out}
: > $out
ctx() { echo "gemm m=$1 n=$2 k=$3 layout=NT dtype=fp32"; }
gen() { # group m n k vary config...
  local g=$1 m=$2 n=$3 k=$4 vary=$5; shift 5
  for c in "$@"; do $nb --group $g --context "$(ctx $m $n $k)" --config "gemm.ffma_k v5 $c" --vary $vary >> $out; done
}
gen mlp 7168 16 7168 KG=2/3/4/5/6/7/8,CL,ST,WK,KC=32/64 \
  "LM=8 TM=8 TN=4 WM=1 WN=1 KC=32 ST=2 KG=4 WK=4 CL=4" \
  "LM=8 TM=4 TN=4 WM=4 WN=1 KC=64 ST=3 KG=2 WK=1 CL=1" \
  "LM=16 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4 CL=1" \
  "LM=8 TM=8 TN=4 WM=2 WN=1 KC=32 ST=2 KG=4 WK=2 CL=4"
gen mlp 4096 16 4096 KG=1/2/3/4/5/6/7/8,CL,ST,WK,KC=32/64 \
  "LM=16 TM=2 TN=4 WM=1 WN=2 KC=64 ST=3 KG=2 WK=2 CL=2" \
  "LM=16 TM=8 TN=4 WM=1 WN=2 KC=32 ST=3 KG=7 WK=2 CL=1" \
  "LM=16 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4 CL=1"
gen cov 64 64 65536 KG=64/128/256/512,CL,ST,WK,KC \
  "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1 CL=1" \
  "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=128 WK=2 CL=1"
gen cov 64 64 131072 KG=128/256/512/1024,CL,ST,WK,KC \
  "LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1 CL=1" \
  "LM=8 TM=8 TN=4 WM=1 WN=4 KC=32 ST=3 KG=128 WK=2 CL=1"
sort -u -o $out $out
cut -f2 $out | sort | uniq -c
