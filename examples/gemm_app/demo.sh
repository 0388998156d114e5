#!/usr/bin/env bash
# The example end to end on a GPU host: install blocktune from BUILD into a
# scratch prefix, build gemm_app against it, start blocktuned with the
# shipped H100 models, and run gemm_app on a few shapes, with the block
# shape from the daemon and from an exported header, then in bf16, fp16
# and tf32 (gemm.mma kernels; the shipped models are fp32 only, so these
# are the daemon's defaults unless a bf16 campaign and training ran).
#   examples/gemm_app/demo.sh BUILD_DIR [EXTRA_PREFIX_PATH]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
extra=${2:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/gemm-app-XXXXXX")
daemon_pid=
trap '[[ -n $daemon_pid ]] && kill $daemon_pid 2>/dev/null; rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
"$work/prefix/bin/blocktuned" --db "$work/db.sqlite" --listen "unix:$work/s.sock" \
  2>"$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/daemon.log" && break; sleep 0.1; done
bt() { "$work/prefix/bin/blocktune" --server "unix:$work/s.sock" "$@"; }
bt import models/pretrained/h100-sxm/models.json.gz
cat >"$work/shapes.txt" <<'SHAPES'
gemm m=4096 n=4096 k=4096 layout=NN
gemm m=7168 n=16 k=7168 layout=NT
gemm m=64 n=64 k=131072 layout=NT
SHAPES
bt export --op gemm --shapes "$work/shapes.txt" --with-model -o "$work/tuned_gemm.h"
sed -n '1,12p' "$work/tuned_gemm.h"

cmake -S examples/gemm_app -B "$work/app" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix${extra:+;$extra}" \
  -DTUNED_HEADER="$work/tuned_gemm.h" >"$work/app.log" || { cat "$work/app.log"; exit 1; }
cmake --build "$work/app" >>"$work/app.log" || { cat "$work/app.log"; exit 1; }

app() { echo; echo "\$ gemm_app $*"; "$work/app/gemm_app" --server "unix:$work/s.sock" "$@"; }
status=0
app --m 4096 --n 4096 --k 4096 || status=1
app --m 7168 --n 16 --k 7168 --layout NT || status=1
app --m 64 --n 64 --k 131072 --layout NT || status=1
app --m 2000 --n 100 --k 3000 || status=1
app --m 1 --n 1 --k 1 --reps 5 || status=1
app --config header --m 7168 --n 16 --k 7168 --layout NT || status=1
app --config header --m 5000 --n 24 --k 6000 --layout NT || status=1
app --dtype bf16 --m 4096 --n 4096 --k 4096 || status=1
app --dtype bf16 --m 4096 --n 16 --k 4096 --layout NT || status=1
app --dtype fp16 --m 2048 --n 2048 --k 2048 --layout TN || status=1
app --dtype tf32 --m 2048 --n 2048 --k 2048 || status=1
exit $status
