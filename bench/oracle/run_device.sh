#!/usr/bin/env bash
# Measures oracle lists (oracle_eval plan and top) on GPU 0 of a lent GPU
# host, through oracle_run and the campaign worker, within a time budget, so
# that what was measured comes back even when the budget runs out:
#   scripts/gpu_carry.sh build    (carries blocktune-worker and oracle_run)
#   run(carry=["build/gpu-carry", ".oracle"],
#       command="bash bench/oracle/run_device.sh build/gpu-carry $OUT 560 .oracle/*.top.gz .oracle/*.plan.gz")
# OUT gets device.txt and NAME.tsv.gz per list (oracle_run's output form).
# A list measured in part is carried on by the next call with the partial
# NAME.tsv.gz in .oracle/ (oracle_run --resume).
set -uo pipefail
carry=${1:?usage: run_device.sh CARRY OUT SECONDS LIST...}
out=${2:?usage: run_device.sh CARRY OUT SECONDS LIST...}
budget=${3:?usage: run_device.sh CARRY OUT SECONDS LIST...}
shift 3
export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader \
  > "$out/device.txt" || true
start=$(date +%s)
work=$(mktemp -d)
for list in "$@"; do
  name=$(basename "${list%.gz}")
  left=$((budget - ($(date +%s) - start)))
  if ((left < 15)); then
    echo "run_device: no time left for $name" >&2
    break
  fi
  zcat -f "$list" > "$work/$name"
  prior=$(dirname "$list")/$name.tsv.gz
  [[ -f $prior ]] && zcat "$prior" > "$out/$name.tsv"
  timeout "$left" "$carry/bin/oracle_run" --list "$work/$name" --out "$out/$name.tsv" \
    --worker "$carry/bin/blocktune-worker" --kernel-timeout 10 --resume
  rc=$?
  echo "run_device: $name: $(wc -l < "$out/$name.tsv") results, rc $rc, $(( $(date +%s) - start )) s" >&2
done
gzip -f "$out"/*.tsv
