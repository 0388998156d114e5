#!/usr/bin/env bash
# Round 2 of issue 18's MLP search: the lane and warp shape (LM, TM, TN, WM, WN) around the best of round 1
# (bench/results/h100/ffma_k-v5/neighbors-mlp-cov), with the split and pipeline near its values.
set -euo pipefail
nb=build/bench/kernels/neighbors
out=${1:?out}
: > $out
ctx() { echo "gemm m=$1 n=$2 k=$3 layout=NT dtype=fp32"; }
gen() { local g=$1 m=$2 n=$3 k=$4 vary=$5; shift 5
  for c in "$@"; do $nb --group $g --context "$(ctx $m $n $k)" --config "gemm.ffma_k v5 $c" --vary $vary >> $out; done; }
gen mlp 7168 16 7168 LM,TM,TN,WM,WN,KG=1/2/4,ST=3/4,WK=2/4 "LM=8 TM=8 TN=4 WM=2 WN=1 KC=64 ST=4 KG=2 WK=4 CL=1"
gen mlp 4096 16 4096 LM,TM,TN,WM,WN,KG=2/4/8,WK=4/8,CL=1/2 "LM=16 TM=4 TN=8 WM=1 WN=1 KC=64 ST=3 KG=2 WK=8 CL=2"
sort -u -o $out $out
cut -f2 $out | sort | uniq -c
