# Session 16's second device call (H100 80GB HBM3, 2026-12-07 21:14 UTC), carry .deps:
TEST=0 MIN=3 SAMPLES=20000 FAMILIES=gemm.ffma,gemm.ffma_k MIN_FLOPS=1.4e11 MAX_FLOPS=1.1e12 SEED=1631 \
  timeout 560 bash bench/kernels/ffma_campaign_device.sh
