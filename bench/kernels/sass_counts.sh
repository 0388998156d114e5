#!/usr/bin/env bash
# For every gemm.wgmma and gemm.wgmma_rs PTX file in DIR (mma_bench --ptx-dir): assembles it
# for sm_90a and prints its count of HGMMA (wgmma), HMMA (mma.sync) and
# UTMASTG (TMA tensor store) instructions in the SASS.
#   bench/kernels/sass_counts.sh DIR > sass.txt
set -uo pipefail
for f in "${1:?usage: sass_counts.sh DIR}"/*gemm.wgmma*.ptx; do
  [ -e "$f" ] || continue
  cubin=$(mktemp)
  if ptxas -arch=sm_90a -o "$cubin" "$f" 2>/dev/null; then
    sass=$(cuobjdump -sass "$cubin")
    echo "$(basename "$f"): $(grep -c HGMMA <<<"$sass") HGMMA, $(grep -c ' HMMA' <<<"$sass") HMMA, $(grep -c UTMASTG <<<"$sass") UTMASTG"
  fi
  rm -f "$cubin"
done
