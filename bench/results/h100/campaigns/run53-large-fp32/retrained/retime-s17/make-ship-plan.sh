#!/usr/bin/env bash
# Session 17: the re-timing plan of gpu-plan/s17/retime (the run53-retrained models' top 10 and family top 3 for the 31
# contexts whose answer changes, the shipped models' top 10 as rank-0 extras), plus each shape's oracle configuration
# from the fp32 evaluation's own sweep (bench/results/h100/eval/fp32/eval-*.csv), so that the part made from it has
# an oracle at least as deep as the rows it replaces.
set -euo pipefail
S=gpu-plan/s17/retime/fp32; C=gpu-plan/s17/ship/fp32; mkdir -p $C
cp $S/plan.tsv $C/plan.tsv
{ cat $S/plan-families.tsv
  cat bench/results/h100/eval/fp32/eval-*.csv | python3 -c '
import csv, sys
ctxs = set(l.rstrip("\n").rstrip("\t") for l in open("'$S'/contexts.txt"))
for r in csv.reader(sys.stdin):
    if not r or r[0].startswith("#") or r[0] == "group": continue
    if r[1] in ctxs and r[10]:
        print("%s\t%s\t0\t%s\t0" % (r[0], r[1], r[10]))
'; } > $C/plan-families.tsv
wc -l $C/*
