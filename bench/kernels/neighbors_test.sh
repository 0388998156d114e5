#!/usr/bin/env bash
# bench/kernels/neighbors: the lines it prints are plan lines of configurations
# the family's rules accept, and bad input is refused with exit status 2 and
# a message naming the flag.
#   neighbors_test.sh BUILD
set -euo pipefail
nb=${1:?usage: neighbors_test.sh BUILD}/bench/kernels/neighbors
ctx="gemm m=7168 n=16 k=7168 layout=NT dtype=fp32"
seed="gemm.ffma_k v5 LM=8 TM=8 TN=4 WM=1 WN=1 KC=32 ST=2 KG=4 WK=4 CL=4"
fail() { echo "neighbors_test: $*" >&2; exit 1; }

# K_G 3, 5, 7 by CL 1, 2, 4, 8: rule cluster keeps only CL = 1 (K_G % CL).
out=$("$nb" --group mlp --context "$ctx" --config "$seed" --vary KG=3/5/7,CL 2>/tmp/nb_err.$$)
grep -q "3 of 12 combinations pass" /tmp/nb_err.$$ || fail "count: $(cat /tmp/nb_err.$$)"
rm -f /tmp/nb_err.$$
[[ $(wc -l <<<"$out") == 3 ]] || fail "expected 3 lines, got: $out"
while IFS=$'\t' read -r group context rank config predicted extra; do
  [[ $group == mlp && $context == "$ctx" && $rank == 0 && $predicted == 0 && -z $extra ]] ||
    fail "bad line: $group|$context|$rank|$config|$predicted"
  [[ $config =~ ^gemm\.ffma_k\ v5\ LM=8\ TM=8\ TN=4\ WM=1\ WN=1\ KC=32\ ST=2\ KG=[357]\ WK=4\ CL=1$ ]] ||
    fail "unexpected configuration: $config"
done <<<"$out"

# The shape is written as the plan spells it (eval_bench matches the text),
# whatever spacing it was given in.
spaced=$("$nb" --group mlp --context "gemm  m=7168 n=16   k=7168 layout=NT dtype=fp32" \
           --config "$seed" --vary ST=2 2>/dev/null | cut -f2)
[[ $spaced == "$ctx" ]] || fail "shape written as '$spaced'"

# Every value of a parameter when no values are named; no duplicates.
all=$("$nb" --group mlp --context "$ctx" --config "$seed" --vary ST 2>/dev/null)
[[ $(wc -l <<<"$all") == 3 && $(sort -u <<<"$all" | wc -l) == 3 ]] || fail "ST: $all"

# Bad input: exit 2, and the message names what is wrong.
expect_refusal() {
  local want=$1; shift
  local rc=0 err
  err=$("$nb" "$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc == 2 ]] || fail "exit $rc for: $*"
  grep -qF -- "$want" <<<"$err" || fail "message '$err' lacks '$want'"
}
expect_refusal "KG=9: expected one of KG's values {1, 2, 3, 4, 5, 6, 7, 8, 16" \
  --group mlp --context "$ctx" --config "$seed" --vary KG=9
expect_refusal "has no parameter 'XX'" --group mlp --context "$ctx" --config "$seed" --vary XX
expect_refusal "'KG' is named twice" --group mlp --context "$ctx" --config "$seed" --vary KG,CL,KG
expect_refusal "is of gemm.ffma_k v4; this build generates v5" --group mlp --context "$ctx" \
  --config "gemm.ffma_k v4 LM=8" --vary KG
expect_refusal "--context" --group mlp --context "gemm m=0" --config "$seed" --vary KG
expect_refusal "usage" --group mlp
echo "neighbors_test: passed"
