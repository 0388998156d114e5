#!/usr/bin/env bash
# The package test: install blocktune from BUILD into a scratch prefix,
# build client/package_test against it with find_package(blocktune), and
# run it against a daemon holding the shipped models.
#   run.sh SOURCE_DIR BUILD_DIR [CMAKE_GENERATOR]
set -euo pipefail
src=$1
build=$2
generator=${3:-Unix Makefiles}
work=$(mktemp -d "${TMPDIR:-/tmp}/blocktune-package-XXXXXX")
daemon_pid=
cleanup() {
  [[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/include/blocktune/client.h"
test -f "$work/prefix/lib/cmake/blocktune/blocktuneConfig.cmake"
if grep -rnE '#include.*(grpc|google/protobuf)|grpc::|google::protobuf' "$work/prefix/include/blocktune"; then
  echo "FAIL: the public headers mention gRPC or protobuf" >&2
  exit 1
fi

cmake -S "$src/client/package_test" -B "$work/app" -G "$generator" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/app" >"$work/build.log" || { cat "$work/build.log"; exit 1; }

"$work/prefix/bin/blocktuned" --db "$work/db.sqlite" \
  --listen "unix:$work/s.sock" 2>"$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/daemon.log" && break
  sleep 0.1
done
"$work/prefix/bin/blocktune" --server "unix:$work/s.sock" import \
  "$src/models/pretrained/h100-sxm/models.json.gz"
out=$("$work/app/ask" "unix:$work/s.sock")
echo "$out"
grep -q "match=predicted" <<<"$out"
grep -q "device=NVIDIA H100" <<<"$out"
grep -q "kernel blocktune_gemm sm_90" <<<"$out"
grep -q "same_block 1" <<<"$out"

# The example application builds against the package where a CUDA toolkit
# is (it needs a GPU only to run: examples/gemm_app/demo.sh).
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  "$work/prefix/bin/blocktune" --server "unix:$work/s.sock" export --op gemm \
    --shapes <(echo "gemm m=4096 n=16 k=4096 layout=NT") --with-model \
    -o "$work/tuned_gemm.h"
  cmake -S "$src/examples/gemm_app" -B "$work/example" -G "$generator" \
    -DCMAKE_PREFIX_PATH="$work/prefix" -DTUNED_HEADER="$work/tuned_gemm.h" \
    -DCUDAToolkit_ROOT=/usr/local/cuda >"$work/example.log" 2>&1 &&
    cmake --build "$work/example" >>"$work/example.log" 2>&1 ||
    { cat "$work/example.log"; exit 1; }
  test -x "$work/example/gemm_app"
  echo "examples/gemm_app builds against the package"
else
  echo "no CUDA toolkit: examples/gemm_app not built"
fi
echo "package test passed"
