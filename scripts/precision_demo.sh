#!/usr/bin/env bash
# Issue 19 end to end on a GPU host, in one precision: a campaign through
# the daemon, a model trained on it, queries answered by the model and
# re-benchmarked (--verify), the kernel fetched, and examples/gemm_app
# launching the tuned kernel against cuBLAS in the same precision.
#
#   scripts/precision_demo.sh BUILD_DIR OUT_DIR [DTYPE [SAMPLES]]
#   scripts/precision_demo.sh build-gpu "$OUT" bf16 2000
#
# BUILD_DIR is a full build (scripts/offline-deps.sh build makes build-gpu);
# everything it prints also goes to OUT_DIR/demo.txt, the daemon's log to
# OUT_DIR/daemon.log. A fresh store in a scratch folder; nothing else of
# the host is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1
out=$2
dtype=${3:-bf16}
samples=${4:-2000}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/precision-demo-XXXXXX")
daemon_pid=
trap '[[ -n $daemon_pid ]] && { kill $daemon_pid; wait $daemon_pid; } 2>/dev/null; rm -rf "$work"' EXIT
exec > >(tee "$out/demo.txt") 2>&1

"$build/server/blocktuned" --db "$work/store.db" --listen "unix:$work/s.sock" \
  --log-level info 2>"$out/daemon.log" &
daemon_pid=$!
for _ in $(seq 200); do grep -q "listening on" "$out/daemon.log" && break; sleep 0.1; done
bt() { echo "\$ blocktune $*"; "$build/client/blocktune" --server "unix:$work/s.sock" "$@"; }

bt health
start=$(date +%s%N)
bt campaign start --op gemm --dtype "$dtype" --max-samples "$samples" --seed 19 --watch
echo "campaign wall time: $(( ($(date +%s%N) - start) / 1000000 )) ms"
bt campaign list
start=$(date +%s%N)
bt train --op gemm --dtype "$dtype" --epochs 300
echo "training wall time: $(( ($(date +%s%N) - start) / 1000000 )) ms"
bt health
for shape in "4096 16 4096 NT" "4096 4096 4096 NN" "8192 8 8192 NT" "1000 1000 1000 NN" \
             "2048 2048 2048 NT"; do
  read -r m n k layout <<<"$shape"
  bt query gemm --m "$m" --n "$n" --k "$k" --layout "$layout" --dtype "$dtype" --top 5
  bt query gemm --m "$m" --n "$n" --k "$k" --layout "$layout" --dtype "$dtype" --top 5 --verify
done
# A precision with no campaign behind it: the fallback names its family.
bt query gemm --m 4096 --n 16 --k 4096 --layout NT --dtype tf32 --fallback
bt kernel gemm --m 4096 --n 16 --k 4096 --layout NT --dtype "$dtype" -o "$out/kernel.ptx"
grep -c "mma.sync" "$out/kernel.ptx" || true

# The example, built against this build installed in a scratch prefix.
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S examples/gemm_app -B "$work/app" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix${EXTRA_PREFIX_PATH:+;$EXTRA_PREFIX_PATH}" \
  >"$work/app.log" || { cat "$work/app.log"; exit 1; }
cmake --build "$work/app" >>"$work/app.log" || { cat "$work/app.log"; exit 1; }
app() { echo; echo "\$ gemm_app $*"; "$work/app/gemm_app" --server "unix:$work/s.sock" "$@"; }
status=0
app --dtype "$dtype" --m 4096 --n 16 --k 4096 --layout NT || status=1
app --dtype "$dtype" --m 4096 --n 4096 --k 4096 || status=1
app --dtype "$dtype" --m 1000 --n 1000 --k 1000 || status=1
# The Hopper family by name (its TMA tensor maps encoded by gemm_app):
# only on compute capability 9.0.
if [[ $dtype != fp32 ]] && nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -q '^9\.0'; then
  app --dtype "$dtype" --family gemm.wgmma --m 4096 --n 4096 --k 4096 --layout NT || status=1
  app --dtype "$dtype" --family gemm.wgmma --m 8192 --n 4096 --k 4096 --layout NT || status=1
fi
app --dtype fp32 --m 2048 --n 2048 --k 2048 || status=1
exit $status
