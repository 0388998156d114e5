#!/usr/bin/env bash
# ctest eval_test: the evaluation's CPU steps.
#   1. eval_plan answers through blocktune's query path with the shipped bf16
#      models: 10 ranked configurations per shape, of the tensor-core
#      families, predicted times rising with rank; a bad shapes line and a
#      bad --dtype are named.
#   2. eval_bench (where this build has it) reads the plan back: the Triton
#      shapes file and the candidates per shape, without a GPU; a plan of a
#      generator version this build does not make is refused.
#   3. report.py computes the headline ratios, targets and model quality of
#      a small hand-made result set correctly and draws its plots.
#   4. run.sh gpu hands SWEEP and EVAL_GROUPS to eval_bench and names its
#      files after PART.
#   5. rescore.py, 6. times_to_results.py and model_only_score.py score
#      other rankings offline.
#   7. oracle_eval coverage names the sampling rule that keeps a context's
#      fastest measured configuration out of every campaign.
#   eval_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
models=models/pretrained/h100-sxm

cat >"$tmp/shapes.txt" <<'SHAPES'
# two groups; --dtype bf16 sets the precision
square | gemm m=1000 n=1000 k=1000 layout=NN dtype=fp32
conv56 | conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1 dtype=fp32
SHAPES
plan() {
  "$build/bench/eval_plan" --blocktuned "$build/server/blocktuned" \
    --models $models/models-gemm-bf16.json.gz --models $models/models-conv-bf16.json.gz \
    "$@"
}
plan --shapes "$tmp/shapes.txt" --dtype bf16 --out "$tmp/plan.tsv" \
  --family-top 2 --family-out "$tmp/families.tsv" >"$tmp/plan.log"
[[ $(grep -vc '^#' "$tmp/plan.tsv") -eq 20 ]] || fail "expected 20 plan lines"
# --family-top 2: each family with a model answers its own top 2 of each
# shape, ranks 1 and 2, of that family only.
for f in gemm.mma gemm.wgmma conv.mma conv.wgmma; do
  ranks=$(awk -F'\t' -v f="$f" 'index($4, f " v") == 1 { printf "%s ", $3 }' "$tmp/families.tsv")
  [[ "$ranks" == "1 2 " ]] || fail "--family-top: $f ranks '$ranks': $(cat "$tmp/families.tsv")"
done
grep -q "^# --family-top 2: " "$tmp/plan.log" || fail "--family-top: no summary line"
# A query's top 10 keeps each family's fastest (server/answer_mix.h): both
# GEMM families with a model answer 1000^3 in bf16, both conv families the
# convolution.
for f in gemm.mma gemm.wgmma conv.mma conv.wgmma; do
  grep -q $'\t[0-9]*\t'"$f v" "$tmp/plan.tsv" || fail "plan's top 10 without $f: $(cat "$tmp/plan.tsv")"
done
for f in square conv56; do
  ranks=$(awk -F'\t' -v f=$f '$1 == f { printf "%s ", $3 }' "$tmp/plan.tsv")
  [[ "$ranks" == "1 2 3 4 5 6 7 8 9 10 " ]] || fail "$f ranks: $ranks"
  awk -F'\t' -v f=$f '$1 == f { if (p != "" && $5 < p) bad = 1; p = $5 }
    END { exit bad }' "$tmp/plan.tsv" || fail "$f: predicted times not rising with rank"
done
# Rank 1 of any tensor-core family (the persistent and packing variants too).
grep -q $'^square\tgemm m=1000 n=1000 k=1000 layout=NN dtype=bf16\t1\tgemm\\.\\(mma\\|wgmma\\)\\(_[a-z][a-z]\\)\\? v[0-9]* bm=' \
  "$tmp/plan.tsv" || fail "no bf16 GEMM configuration in the plan"
grep -q $'^conv56\t.*dtype=bf16\t1\tconv\\.\\(mma\\|wgmma\\)\\(_[a-z][a-z]\\)\\? v[0-9]* bm=' "$tmp/plan.tsv" ||
  fail "no bf16 convolution configuration in the plan"
echo "square | gemm m=0 n=1 k=1" >"$tmp/bad.txt"
set +e
plan --shapes "$tmp/bad.txt" --out "$tmp/bad.tsv" 2>"$tmp/bad.err"
code=$?
plan --shapes "$tmp/shapes.txt" --dtype fp99 --out "$tmp/bad.tsv" 2>"$tmp/dtype.err"
dtype_code=$?
set -e
[[ $code -eq 2 ]] || fail "bad shapes line: exit $code"
grep -q "bad.txt:1:" "$tmp/bad.err" || fail "bad shapes line not named: $(cat "$tmp/bad.err")"
[[ $dtype_code -eq 2 ]] || fail "bad --dtype: exit $dtype_code"
grep -q -- "--dtype" "$tmp/dtype.err" || fail "bad --dtype not named: $(cat "$tmp/dtype.err")"

if [[ -x $build/bench/kernels/eval_bench ]]; then
  bench=$build/bench/kernels/eval_bench
  "$bench" --plan "$tmp/plan.tsv" --list-triton >"$tmp/triton-shapes.txt"
  [[ $(cat "$tmp/triton-shapes.txt") == "square bf16 NN 1000 1000 1000 1000 1000" ]] ||
    fail "triton shapes: $(cat "$tmp/triton-shapes.txt")"
  "$bench" --plan "$tmp/plan.tsv" --list-candidates --sweep 20 >"$tmp/cands.txt"
  # --extra adds the families' answers after the plan's, each once; a shape
  # that is not the plan's is named.
  "$bench" --plan "$tmp/plan.tsv" --extra "$tmp/families.tsv" --list-candidates \
    --sweep 0 >"$tmp/extra.txt"
  n_extra=$(awk -F'\t' '$1 == "square"' "$tmp/families.tsv" | cut -f4 | sort -u |
    grep -cvxFf <(awk -F'\t' '$1 == "square"' "$tmp/plan.tsv" | cut -f4) || true)
  grep -Eq "^square .*bf16 +$((10 + n_extra)) candidates \(10 from the plan\)" "$tmp/extra.txt" ||
    fail "--extra candidates (expected 10 + $n_extra): $(cat "$tmp/extra.txt")"
  sed 's/m=1000 n=1000/m=999 n=1000/' "$tmp/families.tsv" >"$tmp/other.tsv"
  set +e
  "$bench" --plan "$tmp/plan.tsv" --extra "$tmp/other.tsv" --list-candidates 2>"$tmp/other.err"
  code=$?
  set -e
  [[ $code -eq 2 ]] || fail "--extra of another shape: exit $code"
  grep -q "other.tsv:[0-9]*: shape 'gemm m=999 .* is not in the plan" "$tmp/other.err" ||
    fail "--extra of another shape not named: $(cat "$tmp/other.err")"
  # 1000^3: every family's sweep of the shape (two or three digits).
  grep -Eq '^square .*bf16 +([3-9][0-9]|1[0-9][0-9]) candidates \(10 from the plan\)' "$tmp/cands.txt" ||
    fail "square candidates: $(cat "$tmp/cands.txt")"
  grep -Eq '^conv56 .*bf16 +([2-9][0-9]|1[0-9][0-9]) candidates \(10 from the plan\)' "$tmp/cands.txt" ||
    fail "conv56 candidates: $(cat "$tmp/cands.txt")"
  sed 's/\(gemm\.[a-z]*\) v[0-9]*/\1 v999/' "$tmp/plan.tsv" >"$tmp/stale.tsv"
  set +e
  "$bench" --plan "$tmp/stale.tsv" --list-candidates 2>"$tmp/stale.err"
  code=$?
  set -e
  [[ $code -eq 2 ]] || fail "stale plan: exit $code"
  grep -q "stale.tsv:[0-9]*: .*v999; this build generates v" "$tmp/stale.err" ||
    fail "stale plan not named: $(cat "$tmp/stale.err")"
else
  echo "eval_test: no bench/kernels/eval_bench in this build (no CUDA toolkit); its checks skipped"
fi

# report.py on known numbers, bf16: square vendor/top-10 = 100/80 = 1.25,
# conv56 100/50 = 2, geomean 1.58; vendor/model 100/90 and 100/100, geomean
# 1.05; model/oracle 80/90 = 0.889 and 50/100 = 0.5, neither within 5%;
# top-10 / oracle 1 on both.
mkdir "$tmp/r"
{
  echo "# NVIDIA H100 80GB HBM3 (sm_90, 132 SMs); test"
  echo "group,context,shape,precision,gflop,model_config,model_us,model_predicted_us,top10_config,top10_us,oracle_config,oracle_us,oracle_rank,tried,wrong,vendor,vendor_us,vendor_algos,vendor_algo,triton_us,relerr_model,relerr_top10,relerr_oracle,model_repeat_us,vendor_first_us"
  echo "square,gemm m=1000 n=1000 k=1000 layout=NN dtype=bf16,1000x1000x1000 NN,bf16,2.0,gemm.mma v3 bm=64,90,85,gemm.wgmma v3 bm=128,80,gemm.wgmma v3 bm=128,80,2,90,0,cuBLASLt,100,8,,120,1e-3,1e-3,1e-3,91,110"
  echo "conv56,conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1 dtype=bf16,n1 56x56 c64 k64 3x3 s1,bf16,0.23,conv.mma v1 bm=32,100,90,conv.mma v1 bm=64,50,conv.mma v1 bm=64,50,3,50,1,cuDNN,100,6,algo1 math1,,1e-3,1e-3,1e-3,100,95"
} >"$tmp/r/eval.csv"
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3
"$python" bench/eval/report.py --results "$tmp/r" --out "$tmp/r" >"$tmp/report.log"
grep -qF '| **five thesis families** | 2 | 1.58x | 1.25x | 1.05x | 1.58x | 1.50x | 0/2 |' "$tmp/r/summary.md" \
  || fail "headline: $(grep five "$tmp/r/summary.md")"
grep -qF 'blocktune top-10 time: **1.58x** (target >= 1.3x): met' "$tmp/r/summary.md" || fail "geomean target line"
# The vendor before the sweep / beside the picks: 110/100 and 95/100.
grep -qF 'The vendor timed before the sweep / beside the picks (the time used): median 1.025, range 0.95 to 1.10.' "$tmp/r/summary.md" ||
  fail "vendor drift line: $(grep 'before the sweep' "$tmp/r/summary.md")"
grep -qF 'conv vendor: cuDNN'"'"'s cudnnFind alone' "$tmp/r/summary.md" || fail "no warning of a cudnnFind-only conv vendor"
grep -qF 'Model-only geomean: **1.05x** (target >= 1.2x): **missed**' "$tmp/r/summary.md" || fail "model target line"
grep -qF 'Median model-only speed / oracle speed: **0.694**' "$tmp/r/summary.md" || fail "median model/oracle"
grep -qF 'within 5% of the oracle on 0 of 2 shapes' "$tmp/r/summary.md" || fail "within-5% line"
grep -qF 'differs by a median 0.6% and at most 1.1%' "$tmp/r/summary.md" || fail "noise line"
grep -qF 'another family than the oracle' "$tmp/r/summary.md" || fail "family line"
"$python" -c "
import json, sys
h = json.load(open('$tmp/r/headline.json'))
a = h['groups']['all shapes']
assert h['precision'] == 'bf16' and a['shapes'] == 2, h
assert abs(a['vendor_over_top10_geomean'] - 2.5 ** 0.5) < 1e-9, a
assert a['model_within_5pct'] == 0 and a['triton_shapes'] == 1, a
" || fail "headline.json"
for f in square conv56; do
  [[ -s "$tmp/r/$f.png" ]] || fail "no $f.png"
  head -c 8 "$tmp/r/$f.png" | grep -q PNG || fail "$f.png is not a PNG"
done
# A convolution's vendor is the faster of cudnnFind and PyTorch's cuDNN:
# conv56 at 80 us in PyTorch (cudnnFind 100) gives 80/50 = 1.6, the thesis
# geomean sqrt(1.25 * 1.6) = 1.41; a slower PyTorch time is not taken.
mkdir "$tmp/t"
cp "$tmp/r/eval.csv" "$tmp/t/"
printf '# torch test\ncontext\ttorch_us\ttorch_us2\tmax_rel_err\tkernels\n%s\t80\t81\t1e-3\tsm90_xmma_fprop;k2\n%s\t500\t500\t1e-3\t-\n' \
  "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1 dtype=bf16" \
  "conv n=1 h=8 w=8 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1 dtype=bf16" >"$tmp/t/torch_conv.tsv"
"$python" bench/eval/report.py --results "$tmp/t" --out "$tmp/t" --no-plots >"$tmp/report.log"
grep -qF '| **five thesis families** | 2 | 1.41x | 1.25x |' "$tmp/t/summary.md" ||
  fail "torch vendor headline: $(grep five "$tmp/t/summary.md")"
grep -qF '80.0 (PyTorch cuDNN, benchmark; cudnnFind 100.0)' "$tmp/t/summary.md" ||
  fail "torch vendor row: $(grep conv56 "$tmp/t/summary.md")"
grep -qF 'conv vendor: the faster of' "$tmp/t/summary.md" || fail "torch vendor header"
sed -i 's/\t80\t81\t/\t120\t121\t/' "$tmp/t/torch_conv.tsv"
"$python" bench/eval/report.py --results "$tmp/t" --out "$tmp/t" --no-plots >"$tmp/report.log"
grep -qF '| **five thesis families** | 2 | 1.58x |' "$tmp/t/summary.md" ||
  fail "slower torch time taken: $(grep five "$tmp/t/summary.md")"
# A shape in two parts (measured again, the old part left in place) is an
# error that names both files, not a shape counted twice.
cp "$tmp/t/eval.csv" "$tmp/t/eval-2.csv"
if "$python" bench/eval/report.py --results "$tmp/t" --out "$tmp/t" --no-plots >"$tmp/report.log" 2>&1; then
  fail "a shape in two parts was counted"
fi
grep -qF "square 'gemm m=1000 n=1000 k=1000 layout=NN dtype=bf16' is in both eval-2.csv and eval.csv" "$tmp/report.log" ||
  fail "duplicate shape not named: $(cat "$tmp/report.log")"
rm "$tmp/t/eval-2.csv"
# 4. run.sh gpu passes EVAL_GROUPS, SWEEP and REST on, asks for every
#    candidate's time (--times) and the timing trace (--trace), and writes
#    eval-PART.*, with a stand-in eval_bench that
#    prints its arguments (no GPU here).
mkdir -p "$tmp/bin" "$tmp/res/fp32"
printf '#!/bin/sh\necho "args: $*"\necho "a log line" >&2\n' >"$tmp/bin/eval_bench"
chmod +x "$tmp/bin/eval_bench"
: >"$tmp/res/fp32/plan.tsv"
RESULTS=$tmp/res EVAL_GROUPS="square mlp" PART=2 SWEEP=150 REST=5 \
  bench/eval/run.sh gpu fp32 "$tmp/bin" >/dev/null
grep -q -- "--csv $tmp/res/fp32/eval-2.csv --times $tmp/res/fp32/eval-2-times.tsv --trace $tmp/res/fp32/eval-2-trace.tsv --sweep 150 --rest 5 --group square --group mlp\$" \
  "$tmp/res/fp32/eval-2.txt" || fail "run.sh gpu: $(cat "$tmp/res/fp32/eval-2.txt")"
zcat "$tmp/res/fp32/eval-2.err.gz" | grep -q "a log line" || fail "run.sh gpu: eval-2.err.gz"
RESULTS=$tmp/res bench/eval/run.sh gpu fp32 "$tmp/bin" >/dev/null
grep -q -- "--csv $tmp/res/fp32/eval.csv --times $tmp/res/fp32/eval-times.tsv --trace $tmp/res/fp32/eval-trace.tsv --sweep 40\$" "$tmp/res/fp32/eval.txt" \
  || fail "run.sh gpu defaults: $(cat "$tmp/res/fp32/eval.txt")"
# and the families' answers where the plan step wrote them.
echo "x" >"$tmp/res/fp32/plan-families.tsv"
RESULTS=$tmp/res bench/eval/run.sh gpu fp32 "$tmp/bin" >/dev/null
grep -q -- "--sweep 40 --extra $tmp/res/fp32/plan-families.tsv\$" "$tmp/res/fp32/eval.txt" \
  || fail "run.sh gpu --extra: $(cat "$tmp/res/fp32/eval.txt")"
# 5. rescore.py: with k = 2, the plan's top 2 are both gemm.mma's (10 and
#    12 us), the families policy keeps gemm.wgmma's best (5 us) in the list:
#    vendor 10 us gives 1.00x and 2.00x.
mkdir "$tmp/s"
ctx="gemm m=64 n=64 k=64 layout=NN dtype=bf16"
printf 'square\t%s\t%s\tgemm.mma v3 bm=%s\t%s\n' "$ctx" 1 64 1e-6 "$ctx" 2 32 2e-6 "$ctx" 3 16 3e-6 >"$tmp/s/plan.tsv"
printf 'square\t%s\t1\tgemm.wgmma v5 bm=64\t4e-6\n' "$ctx" >"$tmp/s/plan-families.tsv"
{
  printf 'context\tsource\tconfig\tus\tlaunches\n'
  printf '%s\t1\tgemm.mma v3 bm=64\t10\t21\n%s\t2\tgemm.mma v3 bm=32\t12\t21\n' "$ctx" "$ctx"
  printf '%s\t3\tgemm.mma v3 bm=16\t11\t21\n%s\tfamily\tgemm.wgmma v5 bm=64\t5\t21\n' "$ctx" "$ctx"
} | gzip >"$tmp/s/eval-times.tsv.gz"
{
  echo "group,context,shape,precision,gflop,model_config,model_us,model_predicted_us,top10_config,top10_us,oracle_config,oracle_us,oracle_rank,tried,wrong,vendor,vendor_us,vendor_algos,vendor_algo,triton_us,relerr_model,relerr_top10,relerr_oracle,model_repeat_us"
  echo "square,$ctx,64x64x64 NN,bf16,0.0005,gemm.mma v3 bm=64,10,1,gemm.mma v3 bm=64,10,gemm.mma v3 bm=64,10,1,4,0,cuBLASLt,10,8,,,0,0,0,10"
} >"$tmp/s/eval.csv"
"$python" bench/eval/rescore.py "$tmp/s" --k 2 >"$tmp/rescore.txt"
grep -q "plan      geomean vendor/pick 1.000x" "$tmp/rescore.txt" || fail "rescore plan: $(cat "$tmp/rescore.txt")"
grep -q "families  geomean vendor/pick 2.000x" "$tmp/rescore.txt" || fail "rescore families: $(cat "$tmp/rescore.txt")"
# 6. times_to_results.py: eval-times as oracle_eval input (the family
#    without its version, ok, seconds), and oracle_eval scores the shipped
#    models on it: the plan's 10 GEMM answers of step 1, timed so that the
#    models' own top 1 is the fastest (1.000) or the slowest (0.500).
"$python" bench/eval/times_to_results.py "$tmp/s/eval-times.tsv.gz" \
  "$tmp/o.tsv" "$tmp/o.ctx" gemm >/dev/null
[[ $(head -1 "$tmp/o.tsv") == "$ctx"$'\tgemm.mma bm=64\tok\t1.000000e-05' ]] ||
  fail "times_to_results.py: $(head -1 "$tmp/o.tsv")"
[[ $(cat "$tmp/o.ctx") == "$ctx" && $(wc -l <"$tmp/o.tsv") -eq 4 ]] ||
  fail "times_to_results.py contexts: $(cat "$tmp/o.ctx")"
# Several parts' files, each with its header: every row of each, a context once.
"$python" bench/eval/times_to_results.py "$tmp/s/eval-times.tsv.gz" "$tmp/s/eval-times.tsv.gz" \
  "$tmp/o2.tsv" "$tmp/o2.ctx" gemm >/dev/null
[[ $(cat "$tmp/o2.ctx") == "$ctx" && $(wc -l <"$tmp/o2.tsv") -eq 8 ]] ||
  fail "times_to_results.py on two parts: $(wc -l <"$tmp/o2.tsv") rows, $(cat "$tmp/o2.ctx")"
# A results folder: its whole-run file and a part timed again later, both
# (eval_times.paths_of; the H100 bf16 evaluation has eval-times and eval-2).
mkdir "$tmp/p" && cp "$tmp/s/eval-times.tsv.gz" "$tmp/p/" &&
  cp "$tmp/s/eval-times.tsv.gz" "$tmp/p/eval-2-times.tsv.gz"
"$python" bench/eval/times_to_results.py "$tmp/p" "$tmp/o3.tsv" "$tmp/o3.ctx" gemm >/dev/null
[[ $(wc -l <"$tmp/o3.tsv") -eq 8 ]] ||
  fail "times_to_results.py on a folder with a run and a part: $(wc -l <"$tmp/o3.tsv") rows"
if [[ -x $build/bench/oracle_eval ]]; then
  for best in first last; do
    {
      printf 'context\tsource\tconfig\tus\tlaunches\n'
      awk -F'\t' -v best=$best '$2 ~ /^gemm / {
        us = best == "first" ? 10 + $3 : 30 - $3; if ($3 == 1) us = best == "first" ? 10 : 40
        printf "%s\t%s\t%s\t%s\t21\n", $2, $3, $4, us }' "$tmp/plan.tsv"
    } | gzip >"$tmp/t.tsv.gz"
    "$python" bench/eval/times_to_results.py "$tmp/t.tsv.gz" "$tmp/t.tsv" "$tmp/t.ctx" gemm >/dev/null
    "$build/bench/oracle_eval" eval --contexts "$tmp/t.ctx" --dtype bf16 \
      --models $models/models-gemm-bf16.json.gz --results "$tmp/t.tsv" >"$tmp/t.out" 2>&1 ||
      fail "oracle_eval on times_to_results.py output: $(cat "$tmp/t.out")"
    want=$([[ $best == first ]] && echo "median top-1 1.000" || echo "median top-1 0.5")
    grep -q "over the measured set of 1 contexts: $want" "$tmp/t.out" ||
      fail "oracle_eval ($best): $(tail -2 "$tmp/t.out")"
    # model_only_score.py: the plan's rank 1 is the fastest (first), or twice
    # the fastest time (last) of what was measured.
    "$python" bench/eval/model_only_score.py "$tmp/plan.tsv" "$tmp/t.tsv.gz" >"$tmp/m.out" ||
      fail "model_only_score.py: $(cat "$tmp/m.out")"
    want=$([[ $best == first ]] && echo "on 1; median 1.000" || echo "on 0; median 0.500")
    grep -q "within 5% of the best measured $want" "$tmp/m.out" ||
      fail "model_only_score.py ($best): $(cat "$tmp/m.out")"
  done
fi
# 7. oracle_eval coverage: gemm.gemv's R = 1, W = 4 at N = 1 is drawable
# since its domain skips min_block_elements; an 8192^3 product is past the
# default campaign's max_work, and so is its second-fastest, 3% slower (in
# the 5% window; gemv's R = 4, 12% slower, is not).
if [[ -x $build/bench/oracle_eval ]]; then
  cat >"$tmp/cov.tsv" <<'COV'
gemm m=4096 n=1 k=4096 layout=NT dtype=fp32	gemm.gemv R=1 NC=1 W=4 WN=1 V=4 U=4 PF=0 KG=1	ok	2.59e-05
gemm m=4096 n=1 k=4096 layout=NT dtype=fp32	gemm.gemv R=4 NC=1 W=8 WN=1 V=4 U=1 PF=1 KG=2	ok	2.91e-05
gemm m=8192 n=8192 k=8192 layout=NN dtype=fp32	gemm.ffma ML=128 NL=128 MS=8 NS=16 U=8 KG=1 ST=1	ok	2.2e-02
gemm m=8192 n=8192 k=8192 layout=NN dtype=fp32	gemm.ffma ML=64 NL=128 MS=8 NS=8 U=8 KG=1 ST=1	ok	2.26e-02
COV
  printf '%s\n' "gemm m=4096 n=1 k=4096 layout=NT dtype=fp32" \
    "gemm m=8192 n=8192 k=8192 layout=NN dtype=fp32" >"$tmp/cov.ctx"
  "$build/bench/oracle_eval" coverage --contexts "$tmp/cov.ctx" --dtype fp32 \
    --results "$tmp/cov.tsv" >"$tmp/cov.out" 2>&1 || fail "oracle_eval coverage: $(cat "$tmp/cov.out")"
  grep -q "m=4096 n=1 .* drawn  *1 of   1 within 5% drawable  best gemm.gemv R=1 .*a campaign draws it" \
    "$tmp/cov.out" || fail "coverage of the gemv decode shape: $(cat "$tmp/cov.out")"
  grep -q "m=8192 n=8192 .* REFUSED  *0 of   2 within 5% .*: max_work" "$tmp/cov.out" ||
    fail "coverage of 8192^3: $(cat "$tmp/cov.out")"
  grep -q "^# the fastest refused by max_work: 1" "$tmp/cov.out" ||
    fail "coverage summary: $(tail -3 "$tmp/cov.out")"
fi
echo "eval_test: plan, plan read-back, report, run.sh gpu, rescore, times_to_results and coverage OK"
