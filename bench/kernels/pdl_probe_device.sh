#!/usr/bin/env bash
# The split-K reduce entries as programmatic dependent launches, in one
# device call: the GPU tests that launch through tuner/kernel_launch's
# LoadedKernel (the worker's and the benchmarks' launcher: gpu_worker_test
# for gemm.mma, gemm.wgmma, conv.mma and their variants with K_G > 1,
# gemm_gemv_gpu_test for gemm.ffma_k), then each split-K configuration of
# the list below timed with its reduce entry launched as a dependent launch
# and as an ordinary one (mma_bench --profile, --plain-reduce), twice each,
# alternating, beside cuBLASLt (L2 read-flushed, median of 21, outputs
# checked against cuBLASLt's). Carry build/gpu-carry (scripts/gpu_carry.sh
# build). Writes $OUT/pdl.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-/tmp/pdl}
bin=build/gpu-carry/bin
export LD_LIBRARY_PATH="$PWD/build/gpu-carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
w=$OUT/pdl
mkdir -p "$w"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit \
  --format=csv >"$w/device.txt" 2>&1
if [[ ${TESTS:-1} == 1 ]]; then
  timeout 240 "$bin/gpu_worker_test" >"$w/gpu_worker_test.txt" 2>&1
  echo "gpu_worker_test rc=$?" >>"$w/gpu_worker_test.txt"
  timeout 200 "$bin/gemm_gemv_gpu_test" >"$w/gemm_gemv_gpu_test.txt" 2>&1
  echo "gemm_gemv_gpu_test rc=$?" >>"$w/gemm_gemv_gpu_test.txt"
  tail -n 3 "$w/gpu_worker_test.txt" "$w/gemm_gemv_gpu_test.txt"
fi
o=$w/ab.txt
echo "# $(date -u +%FT%TZ) dependent = the reduce as a programmatic dependent launch; plain = --plain-reduce" >"$o"
while IFS='|' read -r fam shape params; do
  [[ -z $fam ]] && continue
  for round in 1 2; do
    for mode in dependent plain; do
      flag=()
      [[ $mode == plain ]] && flag=(--plain-reduce)
      r=$(timeout 60 "$bin/mma_bench" --families "$fam" "${flag[@]}" \
            --profile "$shape" "$params" 21 2>&1 | grep -E "^profile |rror" | head -1)
      echo "$mode $round | $fam | $r" >>"$o"
    done
  done
done <<'LIST'
gemm.ffma_k|fp32 NT 64 64 65536|LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1 CL=1
gemm.ffma_k|fp32 NT 64 64 65536|LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=512 WK=1 CL=1
gemm.ffma_k|fp32 NT 64 64 65536|LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=128 WK=1 CL=1
gemm.ffma_k|fp32 NT 64 64 131072|LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1 CL=1
gemm.ffma_k|fp32 NT 64 64 16384|LM=8 TM=4 TN=4 WM=2 WN=2 KC=32 ST=3 KG=64 WK=1 CL=1
gemm.ffma_k|fp32 NT 4096 16 4096|LM=16 TM=4 TN=8 WM=2 WN=1 KC=32 ST=3 KG=8 WK=4 CL=1
gemm.mma|bf16 NT 64 64 65536|bm=32 bn=64 bk=64 wm=1 wn=4 st=4 kg=128 gm=1 sk=0
gemm.mma|bf16 NT 64 64 131072|bm=64 bn=32 bk=128 wm=4 wn=2 st=4 kg=64 gm=8 sk=0
gemm.mma|bf16 NT 64 64 16384|bm=16 bn=32 bk=64 wm=1 wn=2 st=5 kg=32 gm=4 sk=0
gemm.mma|tf32 NT 64 64 65536|bm=16 bn=64 bk=32 wm=1 wn=4 st=5 kg=128 gm=1 sk=0
gemm.wgmma|bf16 NT 64 64 4096|bm=64 bn=32 bk=128 st=8 wg=1 gm=1 kg=8 cm=1
gemm.wgmma_pk|bf16 NN 35 700 2048|bm=64 bn=64 bk=64 st=7 wg=1 gm=1 kg=2 cm=1
LIST
cat "$o"
tar czf "$OUT/pdl.tgz" -C "$OUT" pdl
