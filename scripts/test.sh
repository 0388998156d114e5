#!/usr/bin/env bash
# Sets up, builds and runs every test through ctest. Tests that need a GPU
# carry the label `gpu` and skip with a message where there is none.
#   BUILD_DIR=build  where to build
#   CTEST_ARGS=...   extra ctest arguments, e.g. "-L gpu" or "-LE gpu"
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
build=${BUILD_DIR:-build}
jobs=$(nproc)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$jobs"
echo "test.sh: setup and build took ${SECONDS} s"
cd "$build"
# shellcheck disable=SC2086
ctest --output-on-failure -j "$jobs" --timeout 900 ${CTEST_ARGS:-}
