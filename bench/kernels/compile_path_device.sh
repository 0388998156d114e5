#!/usr/bin/env bash
# Does how a kernel is compiled change its speed? The same configurations
# timed by mma_bench --profile (cuBLASLt beside, L2 read-flushed, median of
# 21) loaded as PTX through the driver's JIT and as the cubin the worker and
# eval_bench load (--compile: nvJitLink, or the toolkit's ptxas -O3 for PTX
# that sets its registers), alternating, twice each. Carry build/gpu-carry.
# Writes $OUT/compile-path.txt.
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/build/gpu-carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
o=$OUT/compile-path.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$o"
/usr/local/cuda/bin/ptxas --version | tail -2 >>"$o"
for s in "gemm.wgmma_ts|bf16 NN 6144 6144 6144|bm=128 bn=256 bk=64 st=4 wg=2 gm=16 kg=1 cm=1 tl=4" \
         "gemm.wgmma_ts|bf16 NT 8192 12288 4096|bm=128 bn=256 bk=64 st=4 wg=2 gm=8 kg=1 cm=1 tl=4" \
         "gemm.wgmma|bf16 NN 6144 6144 6144|bm=128 bn=256 bk=64 st=4 wg=2 gm=16 kg=1 cm=1" \
         "gemm.wgmma|bf16 NN 2048 2048 2048|bm=128 bn=256 bk=64 st=4 wg=2 gm=4 kg=1 cm=1"; do
  IFS='|' read -r fam shape params <<<"$s"
  for round in 1 2; do
    for how in jit compile; do
      flag=(); [[ $how == compile ]] && flag=(--compile)
      echo -n "$how " >>"$o"
      timeout 60 build/gpu-carry/bin/mma_bench "${flag[@]}" --families "$fam" \
        --profile "$shape" "$params" 21 2>&1 | grep -E "^profile |rror" | head -1 >>"$o"
    done
  done
done
cat "$o"
