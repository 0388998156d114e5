#!/usr/bin/env bash
# Session 17, call 1. carry: .deps build/ka-carry build/s17-carry gpu-plan/s17 gpu-plan/s16lg gpu-plan/m2
# H100: the daemon builds on cores 8-15 (tree: branch kpf) while on cores 0-7 and the GPU:
# (1) the DRAM probe's L2-prefetch study (MLP 7168 grid, and a covariance-like 64 x 65536 grid);
# (2) gemm.ffma_kpf (gemm.ffma_k + the L2 prefetch) beside gemm.ffma_k and cuBLASLt on the mlp, cov and decode shapes
#     (eval_bench, plan gpu-plan/s17/kpf: the models' top 10, each shape's two fastest gemm.ffma_k and six PF/PG of each);
# (3) ncu (clocks not locked) of the MLP layer's best KC = 64 kernel, with the prefetch, and two KC = 128 kernels;
# then (4) if gemm.ffma_kpf's best beat gemm.ffma_k's by 2% on some shape, a gemm.ffma_kpf campaign for its model;
# else the 31 fp32 contexts whose answer the run53-retrained models change, old and new answers in one run.
# H200: the prepared K_G campaign (h200-camp.sh).
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | tr -d ' ')
echo "device: $name"
if [[ "$name" == *H200* ]]; then exec bash gpu-plan/s17/h200-camp.sh; fi
R=/tmp/s17c1-$name; mkdir -p $R; nvidia-smi -L > $R/device-smi-L.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $R/device.txt
ck() { tar czf $OUT/s17c1.tgz -C /tmp s17c1-$name; }
[ -d .deps/prefix ] || scripts/offline-deps.sh unpack >/dev/null 2>&1
(OFFLINE_TARGETS="blocktuned blocktune blocktune-worker" timeout 330 taskset -c 8-15 scripts/offline-deps.sh build >$R/build.log 2>&1
 echo "build rc=$? at ${SECONDS}s" >> $R/build.log) &
bpid=$!
PROBE=pf timeout 90 taskset -c 0-7 build/s17-carry/dram_pattern_probe 7168 7168 > $R/pf_mlp.tsv 2>&1
PROBE=pf timeout 60 taskset -c 0-7 build/s17-carry/dram_pattern_probe 64 65536 > $R/pf_cov.tsv 2>&1
echo "probes done at ${SECONDS}s"; ck
grep -E "^#|^linear|FAIL" $R/pf_mlp.tsv | head -8; awk -F'\t' '$1=="tile" && $11==0' $R/pf_mlp.tsv | sort -t$'\t' -k8,8g | head -4
sort -t$'\t' -k8,8g $R/pf_mlp.tsv | grep ^tile | head -8
grep -E "^linear" $R/pf_cov.tsv; sort -t$'\t' -k8,8g $R/pf_cov.tsv | grep ^tile | head -6; awk -F'\t' '$1=="tile" && $11==0' $R/pf_cov.tsv | sort -t$'\t' -k8,8g | head -3
( SWEEP=0 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="mlp cov decode" PART=kpf RESULTS=gpu-plan/s17/kpf \
    timeout 200 taskset -c 0-7 bench/eval/run.sh gpu fp32 $PWD/build/s17-carry/bin > $R/eval-kpf.log 2>&1; echo "eval kpf rc=$? at ${SECONDS}s" )
cp -r gpu-plan/s17/kpf/fp32 $R/kpf; ck; tail -n 4 $R/eval-kpf.log | cut -c1-170
python3 gpu-plan/s17/kpf_analyze.py gpu-plan/s17/kpf/fp32/eval-kpf-times.tsv.gz > $R/kpf-analysis.txt 2>&1; cat $R/kpf-analysis.txt
export LD_LIBRARY_PATH=$PWD/build/ka-carry/lib:/usr/local/cuda/lib64
prof() {  # BIN FAMILY PARAMS
  echo "== 7168x16x7168 $2 $3" >> $R/ncu.txt
  timeout 60 taskset -c 0-7 ncu --clock-control none -k "regex:^blocktune_ffma_k$" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
    --metrics dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,smsp__inst_executed.sum,gpc__cycles_elapsed.max \
    "$1" --families $2 --profile "fp32 NT 7168 16 7168" "$3" 3 >> $R/ncu.txt 2>&1
}
prof build/s17-carry/bin/mma_bench gemm.ffma_k "LM=16 TM=8 TN=4 WM=1 WN=2 KC=64 ST=3 KG=2 WK=4 CL=1"
prof build/s17-carry/bin/mma_bench gemm.ffma_kpf "LM=16 TM=8 TN=4 WM=1 WN=2 KC=64 ST=3 KG=2 WK=4 CL=1 PF=4 PG=2"
prof build/s17-carry/mma_bench_kc128 gemm.ffma_k "LM=8 TM=8 TN=4 WM=2 WN=1 KC=128 ST=3 KG=2 WK=4 CL=1"
echo "ncu done at ${SECONDS}s"; ck
grep -E "^== |Duration|DRAM Throughput|dram__bytes_read|Eligible Warps|Warp Cycles Per Issued|No Eligible|SM Frequency" $R/ncu.txt | head -40
wait $bpid; tail -1 $R/build.log
win=$(
      python3 - $R/kpf-analysis.txt <<'PY'
import sys
best = 0
for l in open(sys.argv[1]):
    p = l.split()
    if l.startswith('gemm m=') and len(p) > 9:
        try: best = max(best, float(p[8]))
        except ValueError: pass
print('yes' if best >= 1.02 else 'no')
PY
)
echo "gemm.ffma_kpf wins by 2% somewhere: $win"
left=$((470 - SECONDS))
if [[ $win == yes && -x build-gpu/server/blocktuned && $left -gt 120 ]]; then
  export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
  min=$(( (left - 60) / 60 )); [ $min -lt 1 ] && min=1; echo "kpf campaign: ${left}s left, MINUTES=$min"
  FAMILIES=gemm.ffma_kpf SEED=1701 TAR=1 MINUTES=$min timeout $left \
    scripts/campaigns_device.sh $R/campaign build-gpu gemm:fp32:60000 > $R/campaign.log 2>&1; echo "campaign rc=$? at ${SECONDS}s"
  ck; tail -n 3 $R/campaign.log; tar xzOf $R/campaign.tgz --wildcards "*report.txt" 2>/dev/null | head -30
else
  ( SWEEP=0 TORCH_CONV=0 TRITON=0 EVAL_GROUPS="square mlp cov decode deepbench proj prefill odd" PART=rt RESULTS=gpu-plan/s17/retime \
      timeout $left bench/eval/run.sh gpu fp32 $PWD/build/ka-carry/bin > $R/eval.log 2>&1; echo "eval rc=$? at ${SECONDS}s" )
  cp -r gpu-plan/s17/retime/fp32 $R/retime; ck; tail -n 6 $R/eval.log | cut -c1-170
fi
ls -la $OUT
