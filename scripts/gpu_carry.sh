#!/usr/bin/env bash
# Collects the GPU test and benchmark binaries of a build, stripped, into
# BUILD/gpu-carry/ (bin/ and lib/: the protobuf runtime the tuner's tests
# link, which a GPU host without the offline dependencies lacks), small
# enough to carry to a lent GPU in one device call (a few MB instead of
# ~100 MB with debug info), so the GPU tests need no build there:
#   scripts/gpu_carry.sh build
#   run(carry=["build/gpu-carry"], command="bash scripts/gpu_tests_device.sh build/gpu-carry")
set -euo pipefail
build=${1:?usage: gpu_carry.sh BUILD}
out="$build/gpu-carry"
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for t in kernels/cuda_driver_test kernels/gemm_gpu_test kernels/gemm_mma_gpu_test \
         kernels/gemm_wgmma_gpu_test kernels/gemm_wgmma_test kernels/conv_mma_gpu_test \
         tuner/gpu_worker_test tuner/gemm_gemv_gpu_test bench/kernels/mma_bench bench/kernels/eval_bench \
         bench/kernels/kernel_bench bench/kernels/conv_mma_bench \
         server/blocktune-worker bench/oracle_run; do
  [ -x "$build/$t" ] || continue
  strip -o "$out/bin/$(basename "$t")" "$build/$t"
done
for lib in $(ldd "$out"/bin/* 2>/dev/null | awk '/libprotobuf/ {print $3}' | sort -u); do
  cp -L "$lib" "$out/lib/"
done
du -sh "$out"
ls "$out/bin"
