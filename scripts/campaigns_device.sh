#!/usr/bin/env bash
# Issue 20's campaigns on one box: one daemon (SQLite, every GPU of the box
# unless GPUS is set) runs the campaigns named on the command line one after
# another; for each, OUT gets the watch, the final progress (JSON) and the
# samples (a dataset, the input of `blocktune import` and training), and
# OUT/report.txt one line: samples, wall time, samples per second,
# acceptance, failures by kind, verified share, samples per family.
#
#   scripts/campaigns_device.sh OUT BUILD OP:DTYPE:SAMPLES [...]
#   scripts/campaigns_device.sh out build-gpu gemm:bf16:23000 conv:tf32:20000
#
# SAMPLES "stale" re-measures the store's stale samples of OP and DTYPE
# (samples of an older generator version: the same contexts and
# parameters, with today's kernels; `campaign start --retune-stale`), after
# IMPORT has loaded them:
#   IMPORT="models/pretrained/h100-sxm/gemm-bf16-samples.json.gz" \
#     scripts/campaigns_device.sh out build-gpu gemm:bf16:stale
#
#   CONTEXTS=K   blocktuned --contexts-per-kernel K (default: the daemon's)
#   SEED=S       the first campaign's seed (default 11); each next one +1
#   MINUTES=M    a time budget for each campaign too (whichever ends
#                first), whole minutes
#   FAKE=1       a fake GPU (a check of this script where there is none)
#   IMPORT=FILES datasets (`blocktune export --samples`) imported first
#   FAMILIES=F,.. the families to sample (`campaign start --family`;
#                default: every family of the op and precision)
#   TAR=1        leave OUT as one OUT.tgz (a device call returns at most 8
#                files from $OUT: two campaigns already write 10)
#   MIN_FLOPS=F, MAX_FLOPS=F  `campaign start --min-flops/--max-flops`: draw
#                only contexts of that much work, 2*M*N*K (the default cap,
#                2^36, leaves out every product above 69 GFLOP); large fp32
#                products: MIN_FLOPS=6.9e10 MAX_FLOPS=1.1e12
#   SAMPLER=S    `campaign start --sampler S` (default bayes); guided measures
#                the models' own top 6 per context and 2 of their ranks 7-64
#                (server/campaign_plan.h), so IMPORT a models file
#                of the GPU first:
#   SAMPLER=guided IMPORT=models/pretrained/h100-sxm/models.json.gz \
#     scripts/campaigns_device.sh out build-gpu gemm:fp32:12000
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/campaigns_device.sh OUT BUILD OP:DTYPE:SAMPLES ...}
build=${2:?usage: scripts/campaigns_device.sh OUT BUILD OP:DTYPE:SAMPLES ...}
shift 2
# `campaign start --minutes` takes whole minutes: say so before a daemon
# starts, not as a JSON error after it.
if [[ -n ${MINUTES:-} && ! $MINUTES =~ ^[1-9][0-9]*$ ]]; then
  echo "campaigns_device.sh: MINUTES=$MINUTES: expected a whole number of minutes (1 or more)" >&2
  exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
prefix=$PWD/.deps/prefix
if [[ -d $prefix ]]; then
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
run=$(mktemp -d /tmp/campaigns.XXXXXX)
flags=(--db "$run/store.db" --listen "unix:$run/d.sock")
[[ -n ${CONTEXTS:-} ]] && flags+=(--contexts-per-kernel "$CONTEXTS")
[[ -n ${GPUS:-} ]] && flags+=(--gpus "$GPUS")
[[ -n ${FAKE:-} ]] && flags+=(--fake-gpus 1 --fake-worker measure_us=2000)
"$build/server/blocktuned" "${flags[@]}" 2>"$run/daemon.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true;
      cp "$run/daemon.log" "$out/" 2>/dev/null || true
      if [[ ${TAR:-} == 1 ]]; then
        tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")" && rm -rf "$out"
      fi' EXIT
for _ in $(seq 300); do
  grep -q "listening on" "$run/daemon.log" && break
  kill -0 "$pid" || { cat "$run/daemon.log"; exit 1; }
  sleep 0.1
done
grep "GPU(s) in use" -A1 "$run/daemon.log" | tee "$out/device.txt"
nproc | sed 's/^/cpu cores: /' | tee -a "$out/device.txt"
cli() { "$build/client/blocktune" --server "unix:$run/d.sock" "$@"; }
for f in ${IMPORT:-}; do cli import "$f" | tee -a "$out/import.txt"; done
seed=${SEED:-11}
for spec in "$@"; do
  IFS=: read -r op dtype samples <<<"$spec"
  name="${op}_${dtype}_${samples}"
  if [[ $samples == stale ]]; then
    what=(--retune-stale)
  else
    what=(--max-samples "$samples")
  fi
  id=$(cli --json campaign start --op "$op" --dtype "$dtype" \
         "${what[@]}" ${MINUTES:+--minutes "$MINUTES"} \
         ${FAMILIES:+--family "$FAMILIES"} ${SAMPLER:+--sampler "$SAMPLER"} \
         ${MIN_FLOPS:+--min-flops "$MIN_FLOPS"} ${MAX_FLOPS:+--max-flops "$MAX_FLOPS"} \
         --seed "$seed" --label "$name" |
       python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
  seed=$((seed + 1))
  start=$(date +%s.%N)
  # A campaign that fails says why on the watch's last line: shown here, the
  # report still written, and the script's status the watch's.
  rc=0
  cli campaign watch "$id" >"$out/${name}_watch.txt" || rc=$?
  if ((rc != 0)); then
    watch_rc=$rc
    echo "campaigns_device.sh: $name: $(tail -n 1 "$out/${name}_watch.txt")" >&2
  fi
  end=$(date +%s.%N)
  cli --json campaign watch "$id" | tail -c 20000 >"$out/${name}_progress.json" || true
  cli export --op "$op" --dtype "$dtype" --samples \
    -o "$out/${op}-${dtype}-samples.json.gz"
  python3 - "$out/${name}_watch.txt" "$out/${name}_progress.json" "$start" \
    "$end" "$name" <<'PY' | tee -a "$out/report.txt"
import json, re, sys
watch, progress, start, end, name = sys.argv[1:]
text = open(progress).read()
# The last JSON object the watch printed.
decoder, last, i = json.JSONDecoder(), None, 0
while True:
    j = text.find("{", i)
    if j < 0: break
    try:
        obj, i = decoder.raw_decode(text, j)
        last = obj
    except ValueError:
        i = j + 1
p = last or {}
c = p.get("campaign", {})
done = int(c.get("samples_ok", 0)) + int(c.get("samples_failed", 0))
wall = float(end) - float(start)
elapsed = float(p.get("elapsed_seconds", 0) or 0)
fails = p.get("failures", {}) or {}
fam = p.get("samples_by_family", {}) or {}
ver = int(p.get("verified", 0) or 0)
# A guided campaign draws nothing (its candidates are the models'), nor does
# a --retune-stale one (it measures the store's stale samples again): no rate.
spec = c.get("spec", {}) or {}
accepted = ("- (re-measure)" if spec.get("retune_stale")
            else "- (guided)" if spec.get("sampler") == "guided"
            else f"{100 * float(p.get('acceptance', 0) or 0):.1f}%")
print(f"{name}: {c.get('state', '?')} {done} samples in {wall:.1f} s wall "
      f"({elapsed:.1f} s campaign time) = {done / wall:.1f} samples/s; "
      f"acceptance {accepted}; "
      f"failures {dict(fails) if fails else 'none'}; "
      f"verified {ver}/{done} ({100 * ver / max(done, 1):.1f}%); "
      f"families {dict(fam)}")
PY
done
exit "${watch_rc:-0}"
