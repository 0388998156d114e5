#!/usr/bin/env bash
# Issue 22 on real GPUs: one daemon per GPU of this box, all on one private
# PostgreSQL (scripts/pg_local.sh), run one campaign together; prints each
# daemon's share and samples per second, and writes the watch, the logs and
# the campaign's samples (a dataset) under OUT.
#
#   scripts/fleet_device.sh OUT [SAMPLES] [DTYPE] [BUILD]
#     SAMPLES  the campaign's budget (default 20000)
#     DTYPE    bf16 (default), fp16, tf32 or fp32
#     BUILD    the build folder with blocktuned, blocktune-worker and
#              blocktune (default build-gpu, from scripts/offline-deps.sh
#              build, which also unpacks the PostgreSQL server)
#   FLEET_DAEMONS=N  only GPUs 0..N-1, a daemon each (N=1: the baseline
#                    that the fleet's samples per second compare with)
#   FLEET_FAKE=N     N fake GPUs per daemon, two daemons (tests of this
#                    script on a machine without a GPU)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/fleet_device.sh OUT [SAMPLES] [DTYPE] [BUILD]}
samples=${2:-20000}
dtype=${3:-bf16}
build=${4:-build-gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)
prefix=$PWD/.deps/prefix
if [[ -d $prefix ]]; then
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
run=$(mktemp -d /tmp/fleet.XXXXXX)
chmod 755 "$run"
conn=$(scripts/pg_local.sh start "$run/pg")
echo "database: $conn"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  cp "$run"/*.log "$out"/ 2>/dev/null || true
  scripts/pg_local.sh stop "$run/pg" >/dev/null 2>&1 || true
}
trap cleanup EXIT

if [[ -n ${FLEET_FAKE:-} ]]; then
  daemons=2
  gpu_args() { echo "--fake-gpus $FLEET_FAKE --fake-worker measure_us=3000"; }
else
  daemons=${FLEET_DAEMONS:-$(nvidia-smi -L | wc -l)}
  gpu_args() { echo "--gpus $1"; }
fi
for ((i = 0; i < daemons; ++i)); do
  # shellcheck disable=SC2046
  "$build/server/blocktuned" --listen "unix:$run/d$i.sock" --db "$conn" \
    --name "gpu$i" $(gpu_args "$i") 2>"$run/daemon$i.log" &
  pids+=($!)
done
for ((i = 0; i < daemons; ++i)); do
  for _ in $(seq 300); do
    grep -q "listening on" "$run/daemon$i.log" && break
    kill -0 "${pids[$i]}" || { cat "$run/daemon$i.log"; exit 1; }
    sleep 0.1
  done
  grep "GPU(s) in use\|store " "$run/daemon$i.log"
done
cli() { "$build/client/blocktune" --server "unix:$run/d$1.sock" "${@:2}"; }

# CAMPAIGN_MINUTES: a time budget too (whichever ends first).
cli 0 campaign start --op gemm --dtype "$dtype" --max-samples "$samples" \
  ${CAMPAIGN_MINUTES:+--minutes "$CAMPAIGN_MINUTES"} \
  --label "fleet of $daemons daemons" | tee "$out/start.txt"
start=$(date +%s.%N)
# The watch of the last daemon, which did not start it, to the end.
cli $((daemons - 1)) campaign watch 1 | tee "$out/watch.txt" | awk 'NR % 10 == 1'
end=$(date +%s.%N)
tail -1 "$out/watch.txt"
cli 0 --json campaign list > "$out/campaigns.json"
cli 0 export --op gemm --dtype "$dtype" --samples -o "$out/fleet_samples.json.gz"
for ((i = 0; i < daemons; ++i)); do
  # What each daemon stored, from its log, over the whole campaign's time.
  echo "gpu$i: $(grep -c 'took over the item' "$run/daemon$i.log" || true) items taken over"
done
python3 - "$out/watch.txt" "$start" "$end" <<'EOF'
import re, sys
last = [l for l in open(sys.argv[1]) if " daemons " in l][-1]
wall = float(sys.argv[3]) - float(sys.argv[2])
shares = dict((k, int(v)) for k, v in re.findall(r"(gpu\d+) (\d+) \(", last))
total = sum(shares.values())
print(f"wall {wall:.1f} s from start to the watch's end; {total} samples, "
      f"{total / wall:.1f} samples/s in total")
for k, v in sorted(shares.items()):
    print(f"  {k}: {v} samples, {v / wall:.1f} samples/s")
EOF
