#!/usr/bin/env bash
# Does a sustained load slow gemm.wgmma_ts more than cuBLASLt? (The H200
# evaluation re-timed its large picks 10-20% slower after the sweep, while
# cuBLASLt moved 0-2%.) One device call, nvidia-smi logging clocks, power
# and clock-event reasons every 200 ms, alternating twice:
#   ours:  mma_bench --profile (cuBLASLt's best of 8 algorithms, then ours,
#          21 L2-flushed launches each), then --sustain: ours back to back
#          for 3 s, the median per-launch time of the second half;
#   torch: PyTorch's bf16 matmul (cuBLASLt) back to back for 3 s, the same
#          statistic.
# Carry build/gpu-carry. Writes $OUT/sustain.tgz.
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/build/gpu-carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
w=$OUT/sustain; mkdir -p "$w"; o=$w/sustain.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 200 >"$w/smi.csv" 2>&1 &
smi=$!
shape="bf16 NT 8192 12288 4096"
params="bm=128 bn=256 bk=64 st=4 wg=2 gm=8 kg=1 cm=1 tl=4"
torch_run() {
  timeout 60 python3 - 2>&1 <<'PY'
import time, torch
a = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(12288, 4096, device="cuda", dtype=torch.bfloat16)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
per = []
t0 = time.time()
while time.time() - t0 < 3:
    s.record()
    for _ in range(20): c = a @ b.t()
    e.record(); e.synchronize()
    per.append(s.elapsed_time(e) * 1000 / 20)
tail = sorted(per[len(per) // 2:])
print(f"sustain torch bf16 8192x12288x4096 NT 3 s back to back: {20 * len(per)} launches, "
      f"per launch: first batch {per[0]:.1f} us, median of the second half {tail[len(tail) // 2]:.1f} us")
PY
}
for round in 1 2; do
  echo "$(date +%T.%N) ours" >>"$o"
  timeout 60 build/gpu-carry/bin/mma_bench --sustain 3 --families gemm.wgmma_ts \
    --profile "$shape" "$params" 21 2>&1 | grep -E "^profile |^sustain |rror" >>"$o"
  echo "$(date +%T.%N) torch" >>"$o"
  torch_run >>"$o"
done
echo "$(date +%T.%N) end" >>"$o"
kill $smi
cat "$o"
tar czf "$OUT/sustain.tgz" -C "$OUT" sustain
