#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan, in their
# own build folder) and runs each for SECONDS (default 60) over a copy of
# its committed seed corpus, so fuzz/corpus/ is never changed. Fails if any
# target crashes, leaks, hangs or runs out of memory; the input that did it
# is named in the output (kept under $BUILD_DIR/fuzz-out/<target>/).
#   scripts/fuzz.sh [SECONDS]
#   BUILD_DIR=build-fuzz        where to build
#   FUZZ_JOBS=$(nproc)          targets run at once
#   FUZZ_TARGETS="request ..."  a subset of: request context domain import
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || {
  echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2; }
scripts/setup.sh
build=${BUILD_DIR:-build-fuzz}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DBLOCKTUNE_FUZZ=ON >/dev/null
cmake --build "$build" --target fuzzers -j "$(nproc)"

read -r -a targets <<<"${FUZZ_TARGETS:-request context domain import}"
jobs=${FUZZ_JOBS:-$(nproc)}
out=$build/fuzz-out
rm -rf "$out"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

run_one() {
  local target=$1 dir=$out/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp fuzz/corpus/"$target"/* "$dir/corpus/"
  local rc=0
  "$build/fuzz/${target}_fuzz" -max_total_time="$seconds" \
    -print_final_stats=1 -timeout=25 -rss_limit_mb=2048 \
    -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

echo "fuzz: ${targets[*]}, ${seconds} s each, $jobs at a time"
running=0
for target in "${targets[@]}"; do
  [[ -x "$build/fuzz/${target}_fuzz" ]] || {
    echo "fuzz: no target '$target'" >&2; exit 2; }
  if (( running >= jobs )); then wait -n; running=$((running - 1)); fi
  run_one "$target" &
  running=$((running + 1))
done
wait

failed=0
for target in "${targets[@]}"; do
  dir=$out/$target
  rc=$(cat "$dir/rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  if [[ "$rc" == 0 ]]; then
    echo "fuzz: $target: ${execs:-?} executions in ${seconds} s, no crash"
  else
    failed=1
    echo "fuzz: $target FAILED (exit $rc) after ${execs:-?} executions:" >&2
    grep -E '^==[0-9]+==ERROR|runtime error|^SUMMARY|Test unit written' \
      "$dir/log" | head -20 >&2 || tail -30 "$dir/log" >&2
    echo "fuzz: full log: $dir/log" >&2
  fi
done
exit "$failed"
