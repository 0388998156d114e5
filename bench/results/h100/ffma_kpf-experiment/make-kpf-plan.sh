#!/usr/bin/env bash
# Session 17: a plan for eval_bench that times gemm.ffma_kpf (the L2 prefetch) beside gemm.ffma_k on the mlp, cov and
# decode shapes: the shipped models' plan rows for them (gpu-plan/m2/fp32/plan.tsv), and as rank-0 extras the two
# fastest gemm.ffma_k configurations each shape has been timed with (every H100 timing file since v5), each as
# gemm.ffma_k and as gemm.ffma_kpf with six (PF, PG).
set -euo pipefail
O=gpu-plan/m2/fp32; C=gpu-plan/s17/kpf/fp32; mkdir -p $C
T="bench/results/h100/ffma_k-kc128/run/eval/eval-kc-times.tsv.gz bench/results/h100/ffma_ks/eval/eval-1-times.tsv.gz
   bench/results/h100/ffma_k-v5/run52-models/eval-times.tsv.gz bench/results/h100/eval/fp32/eval-s16-times.tsv.gz"
{ head -1 $O/plan.tsv; awk -F'\t' '$1=="mlp" || $1=="cov" || $1=="decode"' $O/plan.tsv; } > $C/plan.tsv
awk -F'\t' '$1=="mlp" || $1=="cov" || $1=="decode" {print $1"\t"$2}' $O/plan.tsv | sort -u > $C/groups.tsv
zcat $T | awk -F'\t' 'NF>=4 && $3 ~ /^gemm.ffma_k v5 / && $3 !~ /KC=128/ {print $1"\t"$3"\t"$4}' | sort -t$'\t' -k1,1 -k3,3g |
  awk -F'\t' 'BEGIN{OFS="\t"} NR==FNR {g[$2]=$1; next} ($1 in g) && n[$1]++ < 2 {print g[$1], $1, $2}' $C/groups.tsv - > $C/base.tsv
{ echo "# gemm.ffma_k's two fastest timed per shape, as gemm.ffma_k and gemm.ffma_kpf"
  while IFS=$'\t' read -r g ctx cfg; do
    printf '%s\t%s\t0\t%s\t0\n' "$g" "$ctx" "$cfg"
    p=${cfg#gemm.ffma_k v5 }
    for pfpg in "1 1" "2 1" "2 2" "4 2" "8 4" "16 4"; do set -- $pfpg
      printf '%s\t%s\t0\tgemm.ffma_kpf v1 %s PF=%s PG=%s\t0\n' "$g" "$ctx" "$p" $1 $2; done
  done < $C/base.tsv; } > $C/plan-families.tsv
wc -l $C/*; cut -f1 $C/base.tsv | sort | uniq -c
