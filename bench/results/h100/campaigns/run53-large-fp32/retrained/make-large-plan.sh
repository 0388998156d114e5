#!/usr/bin/env bash
# The fp32 plan of the retrained models (gpu-plan/s16lg/fp32 from bench/eval/run.sh plan), cut to the GEMMs above
# 2^36 flop and the boundary one, with the previous models' top 10 for them (gpu-plan/m2/fp32/plan.tsv) added as
# rank-0 extras, so that old and new answers are timed in one run.
set -euo pipefail
P=gpu-plan/s16lg/fp32; O=gpu-plan/m2/fp32
S="m=4096 n=4096 k=4096 |m=6144 n=6144 k=6144 |m=8192 n=8192 k=8192 |m=2560 n=7000 k=2560 |m=2048 n=12288 k=4096 |m=2048 n=11008 k=4096 |m=2048 n=4096 k=11008 |m=8192 n=12288 k=4096 |m=8192 n=4096 k=11008 |m=2048 n=4096 k=4096 "
mkdir -p gpu-plan/s16lg/cut/fp32; C=gpu-plan/s16lg/cut/fp32
{ head -1 $P/plan.tsv; grep -E "$S" $P/plan.tsv; } > $C/plan.tsv
{ head -1 $P/plan-families.tsv; grep -E "$S" $P/plan-families.tsv
  grep -E "$S" $O/plan.tsv | awk -F'\t' 'BEGIN{OFS="\t"} $3!="0" {print $1,$2,0,$4,0}'; } > $C/plan-families.tsv
wc -l $C/*
