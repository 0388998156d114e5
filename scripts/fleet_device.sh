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
#   FLEET_KILL_AT=N  kill -9 the last daemon once N samples are stored (the
#                    others finish its items once its leases, --lease-s
#                    FLEET_LEASE_S, default 10, run out); the database is
#                    then checked for every seq stored exactly once
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
  wait 2>/dev/null || true
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
    --name "gpu$i" --lease-s "${FLEET_LEASE_S:-10}" $(gpu_args "$i") \
    2>"$run/daemon$i.log" &
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
watcher=$((daemons - 1))  # the last daemon, which did not start it
if [[ -n ${FLEET_KILL_AT:-} ]]; then
  watcher=0
  (
    while sleep 0.5; do
      stored=$(cli 0 --json campaign list | python3 -c 'import json, sys
c = json.load(sys.stdin)["campaigns"][0]
print(int(c.get("samples_ok", 0)) + int(c.get("samples_failed", 0)))')
      if ((stored >= FLEET_KILL_AT)); then
        kill -9 "${pids[$((daemons - 1))]}"
        echo "kill -9 of gpu$((daemons - 1)) at $stored stored samples" |
          tee "$out/kill.txt"
        break
      fi
    done
  ) &
fi
cli "$watcher" campaign watch 1 | tee "$out/watch.txt" | awk 'NR % 10 == 1'
end=$(date +%s.%N)
if [[ -n ${FLEET_KILL_AT:-} ]]; then
  psql=psql
  [[ -x $prefix/usr/lib/postgresql/15/bin/psql ]] &&
    psql=$prefix/usr/lib/postgresql/15/bin/psql
  "$psql" "$conn" -At -c "SELECT 'samples ' || count(*) || ', distinct seqs ' ||
    count(DISTINCT seq) || ', seqs ' || min(seq) || '..' || max(seq) FROM samples
    WHERE campaign_id = 1" | tee "$out/check.txt"
  "$psql" "$conn" -At -c "SELECT 'items ' || count(*) || ', taken over ' ||
    count(*) FILTER (WHERE attempts > 1) || ', not done ' ||
    count(*) FILTER (WHERE state <> 'done') FROM work_items" | tee -a "$out/check.txt"
fi
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
