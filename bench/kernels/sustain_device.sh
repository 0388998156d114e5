#!/usr/bin/env bash
# Does a sustained load slow gemm.wgmma_ts more than cuBLASLt? (The H200
# evaluation re-timed its large picks 10-20% slower after the sweep, while
# cuBLASLt moved 0-2%.) One device call, nvidia-smi logging clocks, power
# and clock-event reasons every 200 ms: mma_bench --profile (cuBLASLt's
# best of 8 algorithms, 21 launches, then ours) with 21, 3000 and 3000
# launches of ours (L2 read-flushed, median), then 21 again; then PyTorch's
# bf16 matmul (cuBLASLt) back to back for 3 s, the median of its last
# 1000 launches. Carry build/gpu-carry. Writes $OUT/sustain.tgz.
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/build/gpu-carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
w=$OUT/sustain; mkdir -p "$w"; o=$w/sustain.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 200 >"$w/smi.csv" 2>&1 &
smi=$!
shape="bf16 NT 8192 12288 4096"
params="bm=128 bn=256 bk=64 st=4 wg=2 gm=8 kg=1 cm=1 tl=4"
for reps in 21 3000 3000 21; do
  echo "$(date +%T.%N) reps $reps" >>"$o"
  timeout 60 build/gpu-carry/bin/mma_bench --families gemm.wgmma_ts \
    --profile "$shape" "$params" "$reps" 2>&1 | grep -E "^profile |rror" >>"$o"
done
echo "$(date +%T.%N) torch" >>"$o"
timeout 60 python3 - >>"$o" 2>&1 <<'PY'
import time, torch
a = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(12288, 4096, device="cuda", dtype=torch.bfloat16)
ts = []
t0 = time.time()
while time.time() - t0 < 3:
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); c = a @ b.t(); e.record(); e.synchronize()
    ts.append(s.elapsed_time(e) * 1000)
last = sorted(ts[-1000:])
print(f"torch bf16 8192x12288x4096 NT back to back: {len(ts)} launches in 3 s, median of the last 1000 {last[len(last)//2]:.1f} us, first 5 {[round(x,1) for x in ts[:5]]}")
PY
echo "$(date +%T.%N) end" >>"$o"
kill $smi
cat "$o"
tar czf "$OUT/sustain.tgz" -C "$OUT" sustain
