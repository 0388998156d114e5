#!/usr/bin/env bash
# Trains the shipped models of one GPU model, op and precision from the
# campaign samples beside them: a daemon of its own (a temporary SQLite
# store, no GPU) imports every DIR/<op>-<dtype>-samples*.json.gz, trains one
# 5-member ensemble of 128,128,128 networks per family, and writes
# DIR/models-<op>-<dtype>.json.gz (what scripts/run.sh imports). The
# training report (samples, validation MSE per family) goes to
# DIR/models-<op>-<dtype>.txt.
#
#   scripts/train_pretrained.sh models/pretrained/h100-sxm gemm fp16 [BUILD]
#
# FEATURES=N trains on feature set N (blocktune train --features; default:
# each family's own, kernels/family.h DefaultFeatureSet).
#
# SEED=S trains with seed S (member i with S + i; default 1), to see how
# much of a change is the seed's.
#
# TOP_WEIGHT=W weighs each context's fastest samples up in the loss
# (blocktune train --top-weight; default 0, the plain MSE).
#
# MEMBERS=N and HIDDEN=W,W,.. change the ensemble (default 5 networks of
# 128,128,128), for experiments; the shipped models use the defaults.
#
# Another models*.json.gz in DIR that holds an older model of a family just
# trained (models.json.gz keeps copies of the fp32 models) gets the new one
# (scripts/shipped_models.py sync), so the older copy cannot answer.
#
# FAMILY=F trains that family alone (a new family's first models) and
# merges it into the existing DIR/models-<op>-<dtype>.json.gz, whose other
# models are kept as they are; its report is appended to the .txt.
#
#   FAMILY=gemm.wgmma_pk scripts/train_pretrained.sh models/pretrained/h100-sxm gemm bf16
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/train_pretrained.sh DIR OP DTYPE [BUILD]}
op=${2:?usage: scripts/train_pretrained.sh DIR OP DTYPE [BUILD]}
dtype=${3:?usage: scripts/train_pretrained.sh DIR OP DTYPE [BUILD]}
build=${4:-build}
members=${MEMBERS:-5}
hidden=${HIDDEN:-128,128,128}
shopt -s nullglob
inputs=("$dir/$op-$dtype"-samples*.json.gz)
[[ $dtype == fp32 ]] && inputs+=("$dir/$op"-samples*.json.gz)
((${#inputs[@]})) || { echo "no $dir/$op-$dtype-samples*.json.gz" >&2; exit 1; }
run=$(mktemp -d /tmp/train.XXXXXX)
"$build/server/blocktuned" --db "$run/store.db" --listen "unix:$run/d.sock" \
  2>"$run/daemon.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$run"' EXIT
for _ in $(seq 300); do
  grep -q "listening on" "$run/daemon.log" && break
  kill -0 "$pid" || { cat "$run/daemon.log"; exit 1; }
  sleep 0.1
done
cli() { "$build/client/blocktune" --server "unix:$run/d.sock" "$@"; }
report="$dir/models-$op-$dtype.txt"
models="$dir/models-$op-$dtype.json.gz"
if [[ -n ${FAMILY:-} ]]; then
  [[ -f $models ]] || { echo "FAMILY=$FAMILY: no $models to merge into" >&2; exit 1; }
  {
    echo "# $FAMILY: FAMILY=$FAMILY scripts/train_pretrained.sh $dir $op $dtype ($(date -u +%F)); merged into $(basename "$models")"
    for f in "${inputs[@]}"; do cli import "$f"; done
    cli import "$models"
    cli train --op "$op" --dtype "$dtype" --family "$FAMILY" --members "$members" \
      --hidden "$hidden" --features "${FEATURES:-0}" --top-weight "${TOP_WEIGHT:-0}" --seed "${SEED:-1}" | grep -v " epoch "
    cli export --op "$op" --dtype "$dtype" --models -o "$run/merged.json.gz"
    # A family trained again: its older models (the store keeps every
    # model; the daemon answers with the newest) leave the shipped file.
    python3 scripts/shipped_models.py keep-newest "$run/merged.json.gz"
    mv "$run/merged.json.gz" "$models"
    python3 scripts/shipped_models.py sync "$models" "$dir"
  } 2>&1 | tee -a "$report"
  exit 0
fi
{
  echo "# scripts/train_pretrained.sh $dir $op $dtype ($(date -u +%F))"
  for f in "${inputs[@]}"; do cli import "$f"; done
  # One GPU model's samples only, so the device is the store's one.
  cli train --op "$op" --dtype "$dtype" --members "$members" --hidden "$hidden" \
    --features "${FEATURES:-0}" --top-weight "${TOP_WEIGHT:-0}" --seed "${SEED:-1}" | grep -v " epoch "
  cli export --op "$op" --dtype "$dtype" --models -o "$models"
  python3 scripts/shipped_models.py sync "$models" "$dir"
} 2>&1 | tee "$report"
