#!/usr/bin/env bash
# Runs one tuning campaign on this host's GPUs with a daemon of its own, and
# leaves the measurements in a store: for GPU hosts where no blocktuned
# runs as a service (an air-gapped box after scripts/offline-deps.sh build).
#
#   scripts/campaign.sh BUILD_DIR STORE.db [campaign start flags...]
#   scripts/campaign.sh build-gpu h100.db --op gemm --max-samples 50000
#
# The daemon's log goes to STORE.db.log. Interrupting it (Ctrl-C) stops the
# daemon; the campaign resumes the next time a daemon opens the store.
set -euo pipefail
build=$1
db=$2
shift 2
sock="unix:$(mktemp -u /tmp/blocktune-campaign-XXXXXX).sock"
"$build/server/blocktuned" --db "$db" --listen "$sock" --log-level info \
  >"$db.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 200); do
  grep -q "listening on" "$db.log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$db.log" >&2; exit 1; }
  sleep 0.1
done
"$build/client/blocktune" --server "$sock" campaign start "$@" --watch
