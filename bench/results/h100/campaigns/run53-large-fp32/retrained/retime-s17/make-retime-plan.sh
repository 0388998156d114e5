#!/usr/bin/env bash
# Session 17: the retrained fp32 models' plan (gpu-plan/s16lg/fp32, bench/eval/run.sh plan) cut to the 31 contexts
# whose model answer changed (run53/retrained/plan_diff.txt), with the shipped models' top 10 for them
# (gpu-plan/m2/fp32/plan.tsv) added as rank-0 extras, so that old and new answers are timed in one run.
set -euo pipefail
P=gpu-plan/s16lg/fp32; O=gpu-plan/m2/fp32; D=bench/results/h100/campaigns/run53-large-fp32/retrained/plan_diff.txt
C=gpu-plan/s17/retime/fp32; mkdir -p $C
grep -o "^gemm m=[0-9]* n=[0-9]* k=[0-9]* layout=[A-Z]* dtype=fp32" $D | sed 's/$/\t/' > $C/contexts.txt
wc -l < $C/contexts.txt
{ head -1 $P/plan.tsv; grep -F -f <(sed 's/^/\t/' $C/contexts.txt) $P/plan.tsv; } > $C/plan.tsv
{ head -1 $P/plan-families.tsv; grep -F -f <(sed 's/^/\t/' $C/contexts.txt) $P/plan-families.tsv
  grep -F -f <(sed 's/^/\t/' $C/contexts.txt) $O/plan.tsv | awk -F'\t' 'BEGIN{OFS="\t"} $3!="0" {print $1,$2,0,$4,0}'; } > $C/plan-families.tsv
cut -f1 $C/plan.tsv | sort | uniq -c; wc -l $C/plan.tsv $C/plan-families.tsv
