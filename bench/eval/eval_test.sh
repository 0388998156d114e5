#!/usr/bin/env bash
# ctest eval_test: the evaluation's CPU steps.
#   1. eval_plan answers through blocktune's query path with the shipped
#      models: 10 ranked block shapes per shape, predicted times rising with
#      rank, and a bad shapes line named.
#   2. report.py computes the headline ratios of a small hand-made result
#      set correctly and draws its plots.
#   eval_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/shapes.txt" <<'SHAPES'
# two families
square | gemm m=1000 n=1000 k=1000 layout=NN dtype=fp32
conv56 | conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1 dtype=fp32
SHAPES
"$build/bench/eval_plan" --blocktuned "$build/server/blocktuned" \
  --models models/pretrained/h100-sxm/models.json.gz \
  --shapes "$tmp/shapes.txt" --out "$tmp/plan.tsv" >"$tmp/plan.log"
[[ $(grep -vc '^#' "$tmp/plan.tsv") -eq 20 ]] || fail "expected 20 plan lines"
for f in square conv56; do
  ranks=$(awk -F'\t' -v f=$f '$1 == f { printf "%s ", $3 }' "$tmp/plan.tsv")
  [[ "$ranks" == "1 2 3 4 5 6 7 8 9 10 " ]] || fail "$f ranks: $ranks"
  awk -F'\t' -v f=$f '$1 == f { if (p != "" && $5 < p) bad = 1; p = $5 }
    END { exit bad }' "$tmp/plan.tsv" || fail "$f: predicted times not rising with rank"
done
grep -q $'\tML=' "$tmp/plan.tsv" || fail "no block shapes in the plan"
echo "square | gemm m=0 n=1 k=1" >"$tmp/bad.txt"
set +e
"$build/bench/eval_plan" --blocktuned "$build/server/blocktuned" \
  --models models/pretrained/h100-sxm/models.json.gz \
  --shapes "$tmp/bad.txt" --out "$tmp/bad.tsv" 2>"$tmp/bad.err"
code=$?
set -e
[[ $code -eq 2 ]] || fail "bad shapes line: exit $code"
grep -q "bad.txt:1:" "$tmp/bad.err" || fail "bad shapes line not named: $(cat "$tmp/bad.err")"

# report.py on known numbers: square vendor/top-10 = 100/80 = 1.25, conv56
# 100/50 = 2; geomean 1.58; vendor/model 100/90 and 100/100, geomean 1.05;
# neither model answer within 5% of the oracle.
mkdir "$tmp/r"
{
  echo "# test"
  echo "family,context,shape,gflop,model_xb,model_us,model_predicted_us,top10_xb,top10_us,oracle_xb,oracle_us,tried,sgemm_us,lt_us,lt_candidates,cudnn_us,cudnn_algo,cudnn_algorithms,vendor_us,relerr_model,relerr_top10,relerr_oracle,model_repeat_us"
  echo "square,gemm m=1000 n=1000 k=1000 layout=NN dtype=fp32,M=1000 N=1000 K=1000 NN,2.0,ML=64 NL=64 MS=4 NS=4 U=8 KG=1,90,85,ML=128 NL=64 MS=8 NS=4 U=8 KG=2,80,ML=128 NL=64 MS=8 NS=4 U=8 KG=2,80,100,110,100,8,,,0,100,1e-7,1e-7,1e-7,91"
  echo "conv56,conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1 dtype=fp32,N=1 H=W=56 C=64 K=64 3x3,0.23,ML=32 NL=32 MS=4 NS=4 U=16 KG=4,100,90,ML=64 NL=32 MS=4 NS=4 U=16 KG=4,50,ML=64 NL=32 MS=4 NS=4 U=16 KG=4,50,100,,,0,100,nhwc algo1,8,100,1e-7,1e-7,1e-7,100"
} >"$tmp/r/eval-test.csv"
printf '# t\ncontext,triton_us,triton_config,relerr,triton_version\ngemm m=1000 n=1000 k=1000 layout=NN dtype=fp32,120,64x64x32x4x4x1,1e-7,3\n' >"$tmp/r/triton.csv"
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3
"$python" bench/eval/report.py --results "$tmp/r" --out "$tmp/r" >"$tmp/report.log"
grep -qF '| **five thesis families** | 2 | 1.58x | 1.25x | 1.05x | 1.50x | 0/2 |' "$tmp/r/summary.md" \
  || fail "headline: $(grep five "$tmp/r/summary.md")"
grep -qF '(target >= 1.3x): met' "$tmp/r/summary.md" || fail "geomean target line"
grep -qF 'within 5% of the oracle on 0 of 2 shapes' "$tmp/r/summary.md" || fail "oracle target line"
grep -qF 'differs by a median 1.1% and at most 1.1% over 2 shapes' "$tmp/r/summary.md" || fail "noise line"
# Programs: 1000x1000 in 128x64 tiles, K_G 2 -> 8 * 16 * 2 = 256.
grep -qF '| ML=128, NL=64, MS=8, NS=4, U=8, KG=2 | 256 |' "$tmp/r/summary.md" || fail "program count"
for f in square conv56; do
  [[ -s "$tmp/r/$f.png" ]] || fail "no $f.png"
  head -c 8 "$tmp/r/$f.png" | grep -q PNG || fail "$f.png is not a PNG"
done
echo "eval_test: plan and report OK"
