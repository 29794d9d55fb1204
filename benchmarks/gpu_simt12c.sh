#!/usr/bin/env bash
# Issue 15, SIMT target, third round: stage 12 (serpentine_ffma; the registry took STAGES 3 and
# PAIR_LANES 0 from the second round, 99.0-99.3% of cuBLAS at 4096^3 and 100.1% at 8192^3)
# against settings not yet tried with them: 2 stages, 4 copies per k-step, block groups of 4 and
# 16 rows, BK 8 with 4 stages, one 256 x 128 block per SM; stage 11's best and cuBLAS beside.
# Default timing (400 ms budget, L2 flushed, each stage interleaved with cuBLAS); one
# `roofline run gemm` per size, so each document is one run.
# GPU wall time: about 100 s (precompile ~25 s, 4096^3 ~25 s, 8192^3 ~45 s).
# Usage: bash benchmarks/gpu_simt12c.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_simt12c.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
S11="spread_copies@BM=256,BN=128,STAGES=4,COPY_STEP=2"
V="serpentine_ffma,serpentine_ffma@STAGES=2,serpentine_ffma@COPY_STEP=4"
V="$V,serpentine_ffma@GROUP_M=4,serpentine_ffma@GROUP_M=16,serpentine_ffma@BK=8,STAGES=4"
V="$V,serpentine_ffma@BM=256,NUM_THREADS=256,MIN_BLOCKS=1"
timeout 60 python3 benchmarks/precompile_stage.py sm_90a "$S11" serpentine_ffma \
  serpentine_ffma@STAGES=2 serpentine_ffma@COPY_STEP=4 serpentine_ffma@GROUP_M=4 \
  serpentine_ffma@GROUP_M=16 serpentine_ffma@BK=8,STAGES=4 \
  serpentine_ffma@BM=256,NUM_THREADS=256,MIN_BLOCKS=1 > "$OUT/precompile.txt" 2>&1
echo "precompile rc=$?"
for m in 4096 8192; do
  echo "== run gemm --m $m"
  timeout 120 $R run gemm --m "$m" --stages "$S11,$V" --quiet --format markdown --no-chart \
    -o "$OUT/gemm-fp32-$m-simt12c.json" > "$OUT/gemm-fp32-$m-simt12c.md" 2> "$OUT/gemm-$m.err"
  echo "  rc=$?"
  grep -E "^\| " "$OUT/gemm-fp32-$m-simt12c.md" | cut -c1-120
done
