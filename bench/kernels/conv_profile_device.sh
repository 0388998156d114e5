#!/usr/bin/env bash
# Where conv.wgmma stands against cuDNN, in one device call: for each
# "CONTEXT|PARAMS" argument, e.g.
#   "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1 stride=1 dilation=1 dtype=bf16|bm=64 bn=64 bk=64 st=6 wg=1 gm=1"
# the timing of that configuration beside cuDNN's best (mma_bench --op conv
# --profile), every kernel of the run with its grid, time, SM and DRAM
# throughput (ncu), and ncu's speed-of-light, launch, occupancy and
# warp-state sections for ours and for cuDNN's kernels. Carry
# build/gpu-carry (scripts/gpu_carry.sh). Writes to $OUT. FAMILY names the
# family (default conv.wgmma; conv.wgmma_sk's split adds its reduce entry,
# which ncu counts as one of ours).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/conv-profile}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
bin=${MMA_BENCH:-build/gpu-carry/bin/mma_bench}
family=${FAMILY:-conv.wgmma}
export LD_LIBRARY_PATH="$(dirname "$(dirname "$bin")")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv >"$out/device.txt" 2>&1
i=0
for arg in "$@"; do
  i=$((i + 1))
  shape=${arg%%|*} params=${arg#*|}
  echo "# $shape [$params]" >"$out/$i-bench.txt"
  timeout 90 "$bin" --op conv --families "$family" --profile "$shape" "$params" 21 \
    >>"$out/$i-bench.txt" 2>&1
  # Every kernel of the run but the L2 flush: cuDNN's candidates and ours.
  timeout 150 ncu --print-summary per-kernel -k 'regex:^(?!.*flush).*$' \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
    "$bin" --op conv --families "$family" --profile "$shape" "$params" 3 >"$out/$i-kernels.txt" 2>&1
  for who in ours vendor; do
    # The vendor's: not an fp32 NCHW kernel (f32f32_f32f32) that cuDNN also
    # runs in a bf16 run, which the filter without the look-ahead caught on
    # 2026-12-07 (bench/results/h100/ncu-misses/README.txt).
    if [[ $who == ours ]]; then k='regex:blocktune_(conv|gemm_mma_reduce)'; else k='regex:^(?!.*f32f32_f32f32).*(xmma|cutlass|sm90|implicit|fprop|cudnn)'; fi
    timeout 120 ncu -k "$k" --launch-skip 2 --launch-count 1 --section SpeedOfLight \
      --section LaunchStats --section Occupancy --section WarpStateStats \
      "$bin" --op conv --families "$family" --profile "$shape" "$params" 3 >"$out/$i-$who.txt" 2>&1
  done
  echo "$i done at ${SECONDS}s"
done
