#!/usr/bin/env bash
# Assembles the full count of sampled kernels per (family, precision, arch)
# with ptxas and records the passing targets in
# bench/results/cpu/family_ptxas.tsv, with the generator version of each.
# CI assembles fewer and requires this record, with the digest of the PTX
# the generator emits now, for every current generator: run it after a
# generator bump, and commit the file with the bump.
#   scripts/ptxas_record.sh [BUILD_DIR] [GTEST_FILTER]
#   e.g. scripts/ptxas_record.sh build '*gemm_wgmma_sc*'
# A full run of every family takes about 40 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
filter=${2:-*}
cmake --build "$build" --target family_ptxas_test blocktune >/dev/null
log=$(mktemp)
families=$(mktemp)
trap 'rm -f "$log" "$families"' EXIT
"$build/client/blocktune" families --json >"$families"
status=0
# The ffma families' largest tiles (FfmaPtxasTest) too, where the filter
# takes them ('*', '*ffma*', '*largest*').
tests="EveryFamily/FamilyPtxasTest.*/$filter"
[[ $filter == '*' || $filter == *ffma* || $filter == *largest* ]] && tests+=":FfmaPtxasTest.*"
BLOCKTUNE_PTXAS_SAMPLES=full "$build/kernels/family_ptxas_test" \
  --gtest_filter="$tests" 2>&1 | tee "$log" || status=$?
python3 scripts/ptxas_record.py "$log" "$families"
exit "$status"
