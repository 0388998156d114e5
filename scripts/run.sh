#!/usr/bin/env bash
# Sets up, builds, starts blocktuned on the default database and asks it for
# the best block shape of a GEMM (the thesis's MLP case: C = A * B^T,
# A 4096 x 4096, B 16 x 4096).
#   BLOCKTUNE_DB=path   another database than the default
#   (default: $XDG_DATA_HOME/blocktune/blocktune.db or
#    ~/.local/share/blocktune/blocktune.db)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target blocktuned blocktune

run_dir=$(mktemp -d)
socket="unix:$run_dir/blocktuned.sock"
db_flag=()
[[ -n "${BLOCKTUNE_DB:-}" ]] && db_flag=(--db "$BLOCKTUNE_DB")
"$build/server/blocktuned" --listen "$socket" "${db_flag[@]}" \
  2>"$run_dir/blocktuned.log" &
daemon=$!
# BLOCKTUNE_PID_FILE=path: where to write the daemon's pid (CI checks that
# the daemon is gone after this script ends).
[[ -n "${BLOCKTUNE_PID_FILE:-}" ]] && echo "$daemon" >"$BLOCKTUNE_PID_FILE"
cleanup() {
  kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
  rm -rf "$run_dir"
}
trap cleanup EXIT
for _ in $(seq 100); do
  grep -q "listening on" "$run_dir/blocktuned.log" 2>/dev/null && break
  kill -0 "$daemon" 2>/dev/null || { cat "$run_dir/blocktuned.log"; exit 1; }
  sleep 0.1
done
cat "$run_dir/blocktuned.log"

cli=("$build/client/blocktune" --server "$socket")
echo
echo "\$ blocktune health"
"${cli[@]}" health

# First start: the shipped surrogates (trained on the shipped campaign
# data of each GPU model), so a machine without a GPU answers real queries.
# The H100's last, so that its models are the newest: a query that names no
# device is answered by the newest model's device.
if ! "${cli[@]}" --json health | grep -Eq '"models": *[1-9]'; then
  for models in models/pretrained/h200/models*.json.gz \
                models/pretrained/h100-sxm/models*.json.gz; do
    [[ -e $models ]] || continue
    echo
    echo "\$ blocktune import $models"
    "${cli[@]}" import "$models"
  done
fi
echo
echo "\$ blocktune query gemm --m 4096 --n 16 --k 4096 --layout NT --top 3"
set +e
"${cli[@]}" query gemm --m 4096 --n 16 --k 4096 --layout NT --top 3
code=$?
set -e
if [[ $code -eq 0 ]]; then
  echo
  echo "\$ blocktune query gemm --m 4096 --n 16 --k 4096 --layout NT --top 3   # again"
  "${cli[@]}" query gemm --m 4096 --n 16 --k 4096 --layout NT --top 3
  echo
  echo "\$ blocktune query conv --n 8 --h 28 --w 28 --c 128 --k 128 --r 3 --s 3 --pad 1"
  "${cli[@]}" query conv --n 8 --h 28 --w 28 --c 128 --k 128 --r 3 --s 3 --pad 1
  # bf16 on tensor cores: gemm.mma and gemm.wgmma, each its own model.
  echo
  echo "\$ blocktune query gemm --m 4096 --n 4096 --k 4096 --layout NT --dtype bf16 --top 3"
  "${cli[@]}" query gemm --m 4096 --n 4096 --k 4096 --layout NT --dtype bf16 --top 3
  # ... and conv.mma and conv.wgmma, each its own model.
  echo
  echo "\$ blocktune query conv --n 32 --h 28 --w 28 --c 128 --k 128 --r 3 --s 3 --pad 1 --dtype bf16"
  "${cli[@]}" query conv --n 32 --h 28 --w 28 --c 128 --k 128 --r 3 --s 3 --pad 1 --dtype bf16
fi
if [[ $code -eq 4 ]]; then
  echo "(exit 4: the daemon answered, but its database holds no tuned answer"
  echo " for this shape yet; a campaign or an import provides one)"
elif [[ $code -ne 0 ]]; then
  exit "$code"
fi
