#!/usr/bin/env bash
# The evaluation (issues 8 and 20), per precision, in three steps; results go
# to bench/results/h100/eval/<precision>/ unless RESULTS says otherwise
# (RESULTS/<precision>/).
#
#   bench/eval/run.sh plan PREC [GPU]   # any machine: blocktune's answers
#                                       # (the query path over the shipped
#                                       # models of GPU, default h100-sxm)
#   bench/eval/run.sh gpu PREC BIN      # the GPU host: Triton (bf16, where
#                                       # python3 imports torch and triton;
#                                       # TRITON=0: not), PyTorch's cuDNN for
#                                       # the convolutions (TORCH_CONV=0: not),
#                                       # then BIN/eval_bench
#   bench/eval/run.sh report            # any machine: summary.md, headline.json
#                                       # and the PNGs of every precision
#
# plan ranks as blocktuned does by default; ENSEMBLE_RISK=R passes
# --ensemble-risk R (0: by the ensemble's mean, the ranking before
# 2026-12-01). It also asks each family for its own top FAMILY_TOP (default 3; 0: not)
# of every shape (plan-families.tsv), which gpu times in full beside the top
# 10; gpu keeps every timed candidate (eval-times.tsv.gz: the plan's top 10,
# the families' and the sweep, for scoring another ranking offline).
# gpu takes SWEEP (random configurations per family, default 40), EVAL_GROUPS
# (a space-separated list of shapes.txt groups; default all) and PART (N:
# the files are eval-N.*), so that a long evaluation runs in several calls,
# and REST (eval_bench --rest: seconds idle before a rested re-time of each
# shape's vendor and oracle). gpu logs the card's SM clock, power and
# temperature every 100 ms (eval*-smi.csv.gz) beside eval_bench's --trace
# (eval*-trace.tsv).
#
# PREC: bf16, fp16, tf32 or fp32. BIN holds eval_bench (bench/kernels/, from
# a build with the CUDA toolkit; it needs no gRPC, SQLite or libtorch, so it
# is built elsewhere and carried: scripts/gpu_carry.sh) and may hold
# triton_bench.py; else bench/kernels/triton_bench.py is used.
set -euo pipefail
cd "$(dirname "$0")/../.."
results=${RESULTS:-bench/results/h100/eval}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2; }
prec_dir() {
  case "$1" in
    bf16 | fp16 | tf32 | fp32) echo "$results/$1" ;;
    *) echo "precision '$1': expected bf16, fp16, tf32 or fp32" >&2; exit 2 ;;
  esac
}

case "${1:-}" in
  plan)
    prec=${2:-}; [[ -n $prec ]] || usage
    dir=$(prec_dir "$prec")
    gpu=${3:-h100-sxm}
    build=${BUILD_DIR:-build}
    mkdir -p "$dir"
    models=()
    for op in gemm conv; do
      f=models/pretrained/$gpu/models-$op-$prec.json.gz
      [[ -e $f ]] && models+=(--models "$f")
    done
    ((${#models[@]})) || { echo "no models/pretrained/$gpu/models-*-$prec.json.gz" >&2; exit 1; }
    if [[ -z ${BUILD_DIR:-} ]]; then
      scripts/setup.sh
      cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
      cmake --build "$build" --target blocktuned eval_plan
    fi
    # Only the shapes some model's op covers.
    shapes=$(mktemp)
    trap 'rm -f "$shapes"' EXIT
    for op in gemm conv; do
      [[ -e models/pretrained/$gpu/models-$op-$prec.json.gz ]] &&
        grep -E "^[a-z0-9_]+ \| $op " bench/eval/shapes.txt
    done >"$shapes"
    "$build/bench/eval_plan" --blocktuned "$build/server/blocktuned" \
      "${models[@]}" --shapes "$shapes" --dtype "$prec" --out "$dir/plan.tsv" \
      --top 10 --family-top "${FAMILY_TOP:-3}" \
      --family-out "$dir/plan-families.tsv" \
      ${ENSEMBLE_RISK:+--ensemble-risk "$ENSEMBLE_RISK"} | tee "$dir/plan.txt"
    ;;
  gpu)
    prec=${2:-}; bin=${3:-}; [[ -n $prec && -n $bin ]] || usage
    dir=$(prec_dir "$prec")
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,driver_version,temperature.gpu,power.draw \
      --format=csv >"$dir/device.txt" 2>&1 || true
    triton=()
    if [[ $prec == bf16 && ${TRITON:-1} != 0 ]] &&
       python3 -c "import torch, triton" 2>/dev/null; then
      script=bench/kernels/triton_bench.py
      [[ -e $bin/triton_bench.py ]] && script=$bin/triton_bench.py
      "$bin/eval_bench" --plan "$dir/plan.tsv" --list-triton >"$dir/triton-shapes.txt"
      PYTHONUNBUFFERED=1 timeout "${TRITON_TIMEOUT:-240}" python3 "$script" \
        --shapes "$dir/triton-shapes.txt" --tsv "$dir/triton.tsv" \
        --budget-s "${TRITON_BUDGET:-150}" >"$dir/triton.json" 2>"$dir/triton.err" ||
        echo "triton_bench.py: exit $?" >&2
      [[ -s $dir/triton.tsv ]] && triton=(--triton "$dir/triton.tsv")
    fi
    # PyTorch's cuDNN for every convolution of the plan (where python3 imports
    # torch; TORCH_CONV=0: not): report.py takes the faster of it and
    # eval_bench's cudnnFind as the vendor.
    if [[ ${TORCH_CONV:-1} != 0 ]] && grep -q $'\tconv ' "$dir/plan.tsv"; then
      if python3 -c "import torch" 2>/dev/null; then
        timeout "${TORCH_TIMEOUT:-300}" python3 bench/kernels/torch_conv_bench.py \
          --plan "$dir/plan.tsv" --tsv "$dir/torch_conv.tsv" 2>"$dir/torch_conv.err" ||
          echo "torch_conv_bench.py: exit $?" >&2
      else
        echo "run.sh: python3 cannot import torch: the convolutions' vendor is" \
          "cudnnFind alone (report.py says so in the summary)" >&2
      fi
    fi
    # EVAL_GROUPS="square mlp": those groups only; PART=N: write eval-N.* (report
    # reads every eval*.csv), so that one evaluation can span device calls.
    groups=()
    for g in ${EVAL_GROUPS:-}; do groups+=(--group "$g"); done
    out=$dir/eval${PART:+-$PART}
    extra=()
    [[ -s $dir/plan-families.tsv ]] && extra=(--extra "$dir/plan-families.tsv")
    # The SM clock, power and temperature every 100 ms while eval_bench runs
    # ($out-smi.csv), beside its --trace of every timing ($out-trace.tsv):
    # what the card was doing when each figure was taken.
    smi_pid=
    if command -v nvidia-smi >/dev/null; then
      q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu
      nvidia-smi --query-gpu=$q,clocks_event_reasons.active --format=csv \
        -lms 100 >"$out-smi.csv" 2>/dev/null &
      smi_pid=$!
      sleep 0.5
      if ! kill -0 "$smi_pid" 2>/dev/null; then  # a driver without that field
        nvidia-smi --query-gpu=$q --format=csv -lms 100 >"$out-smi.csv" 2>&1 &
        smi_pid=$!
      fi
    fi
    "$bin/eval_bench" --plan "$dir/plan.tsv" --csv "$out.csv" \
      --times "$out-times.tsv" --trace "$out-trace.tsv" --sweep "${SWEEP:-40}" \
      ${REST:+--rest "$REST"} "${groups[@]}" "${triton[@]}" "${extra[@]}" \
      2>"$out.err" | tee "$out.txt"
    [[ -n $smi_pid ]] && kill "$smi_pid" 2>/dev/null || true
    gzip -f "$out.err"
    [[ -e $out-smi.csv ]] && gzip -f "$out-smi.csv"
    # Every candidate's time (eval_bench --times), for offline rankings.
    if [[ -e $out-times.tsv ]]; then gzip -f "$out-times.tsv"; fi
    ;;
  report)
    python=python3
    [[ -x /usr/bin/python3 ]] && python=/usr/bin/python3  # Debian's, with matplotlib
    for dir in "$results"/*/; do
      compgen -G "$dir/eval*.csv" >/dev/null || continue  # eval.csv or parts eval-N.csv
      "$python" bench/eval/report.py --results "$dir" --out "$dir"
    done
    ;;
  *)
    usage
    ;;
esac
