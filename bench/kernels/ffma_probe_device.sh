#!/usr/bin/env bash
# What holds the fp32 families under cuBLAS (issue 18's square and
# covariance targets), in one device call:
#  1. ncu --set full of gemm.ffma's best 4096^3 NN kernel and of cuBLAS's
#     fp32 pick, with per-SASS stall samples of both (wgmma_profile_device.sh);
#  2. the same for gemm.ffma_k's covariance kernel and its reduce;
#  3. mma_bench times of thread tiles the sweeps rarely reach on 4096^3 NN
#     (8x16 per thread, 128 threads, as cuBLAS's 128x128 SIMT tile; 256
#     threads; U and ST variations), each beside cuBLASLt's best.
# Carry build/gpu-carry (scripts/gpu_carry.sh). Writes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/ffma-probe}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build/gpu-carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bin=build/gpu-carry/bin/mma_bench
vendor='sgemm|xmma|cutlass|nvjet|sm80|sm90|ampere|gemm_f32|splitK'
square=${SQUARE:-"fp32 NN 4096 4096 4096"}
best=${BEST:-"ML=64 NL=128 MS=8 NS=8 U=8 KG=1 ST=1"}
OUT=$out/square FAMILY=gemm.ffma KERNEL=blocktune_gemm VENDOR=$vendor \
  bash bench/kernels/wgmma_profile_device.sh "$square|$best"
OUT=$out/cov FAMILY=gemm.ffma_k KERNEL='blocktune_(ffma_k|gemm_reduce)' COUNT=2 \
  VENDOR=$vendor bash bench/kernels/wgmma_profile_device.sh \
  "${COV:-fp32 NT 64 64 65536|LM=4 TM=8 TN=4 WM=2 WN=2 KC=32 ST=3 KG=256 WK=1}"
tiles=${TILES:-"ML=128 NL=128 MS=8 NS=16 U=8 KG=1 ST=1;ML=128 NL=128 MS=16 NS=8 U=8 KG=1 ST=1;ML=128 NL=128 MS=8 NS=16 U=8 KG=1 ST=3;ML=128 NL=128 MS=8 NS=8 U=8 KG=1 ST=1;ML=128 NL=64 MS=8 NS=8 U=8 KG=1 ST=1;ML=64 NL=128 MS=8 NS=8 U=16 KG=1 ST=1;ML=64 NL=128 MS=8 NS=8 U=4 KG=1 ST=1;$best"}
IFS=';' read -ra list <<<"$tiles"
for p in "${list[@]}"; do
  echo "# [$p]" >>"$out/tiles.txt"
  timeout 90 "$bin" --families gemm.ffma --profile "$square" "$p" 21 2>&1 |
    grep -E "^profile |rror|spill" >>"$out/tiles.txt"
done
cat "$out/tiles.txt"
grep -hE "Duration|SM Frequency|Issue Slots Busy|Executed Ipc A|No Eligible|Registers Per|Achieved Occ|Theoretical Occ" \
  "$out"/square/*-ours.txt "$out"/square/*-vendor.txt "$out"/cov/*-ours.txt "$out"/cov/*-vendor.txt
