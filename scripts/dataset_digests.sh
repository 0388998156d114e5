#!/usr/bin/env bash
# Gives the samples of dataset files (blocktune export --samples) the kernel
# digests they lack (Sample.kernel_digest; server/sample_digest.h), so that a
# later generator version bump keeps every sample whose kernel it did not
# change: an import stores such a stale sample as current.
#
#   scripts/dataset_digests.sh [BUILD] FILE.json.gz...
#   STALE=OUT.json.gz scripts/dataset_digests.sh [BUILD] FILE.json.gz...
#
# Each file goes through a daemon of its own (a temporary SQLite store, no
# GPU): imported, then exported with --include-stale, which fills the digest
# of every current sample from this build's generator (by the versioning
# rule, the kernel it measured). scripts/dataset_digests.py then copies the
# digests into FILE, sample by sample, leaving everything else as it was.
# Run it with the build whose generator versions the files' samples carry,
# before bumping a version; stale samples are left without one.
#
# With STALE set, after a bump (with the new build): each file's samples
# that the import re-labeled current (the same kernel digest) take the new
# version in FILE, and the ones that stay stale (their kernel changed) move
# from FILE to the dataset STALE, for a --retune-stale campaign
# (scripts/campaigns_device.sh IMPORT=STALE OP:DTYPE:stale).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [[ $# -gt 0 && -d $1 ]]; then build=$1; shift; fi
(($#)) || { echo "usage: scripts/dataset_digests.sh [BUILD] FILE.json.gz..." >&2; exit 2; }
run=$(mktemp -d /tmp/digests.XXXXXX)
pid=
stop() { [[ -n $pid ]] && { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; pid=; }
trap 'stop; rm -rf "$run"' EXIT
for f in "$@"; do
  rm -f "$run/store.db"* "$run/d.sock" "$run/out.json.gz"
  "$build/server/blocktuned" --db "$run/store.db" --listen "unix:$run/d.sock" \
    --gpus none 2>"$run/daemon.log" &
  pid=$!
  for _ in $(seq 300); do
    grep -q "listening on" "$run/daemon.log" && break
    kill -0 "$pid" || { cat "$run/daemon.log"; exit 1; }
    sleep 0.1
  done
  cli() { "$build/client/blocktune" --server "unix:$run/d.sock" --timeout 3600 "$@"; }
  cli import "$f" >/dev/null
  cli export --samples --include-stale -o "$run/out.json.gz"
  stop
  if [[ -n ${STALE:-} ]]; then
    "$build/client/blocktune" families --json >"$run/families.json"
    python3 scripts/dataset_digests.py relabel "$f" "$run/out.json.gz" "$STALE" "$run/families.json"
  else
    python3 scripts/dataset_digests.py fill "$f" "$run/out.json.gz"
  fi
done
