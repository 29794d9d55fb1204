#!/usr/bin/env bash
# Issue 15, SIMT target, second round: stage 12 with its lanes left row-major (PAIR_LANES=0 won
# the first screen: 98.2% / 99.4% of cuBLAS at 4096^3 / 8192^3, benchmarks/results/
# simt12-variants-fp32.json) combined with the screen's next-best settings, beside stage 11's
# best and cuBLAS. Default timing (400 ms budget, L2 flushed, each stage interleaved with
# cuBLAS); one `roofline run gemm` per size, so each document is one run.
# GPU wall time: about 90 s (precompile ~25 s, 4096^3 ~20 s, 8192^3 ~40 s).
# Usage: bash benchmarks/gpu_simt12b.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_simt12b.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
S11="spread_copies@BM=256,BN=128,STAGES=4,COPY_STEP=2"
V="serpentine_ffma@PAIR_LANES=0,serpentine_ffma@PAIR_LANES=0,BK=32,STAGES=3"
V="$V,serpentine_ffma@PAIR_LANES=0,STAGES=3,serpentine_ffma@PAIR_LANES=0,GROUP_M=16"
V="$V,serpentine_ffma@PAIR_LANES=0,BM=256,NUM_THREADS=256,MIN_BLOCKS=1,serpentine_ffma"
timeout 60 python3 benchmarks/precompile_stage.py sm_90a "$S11" serpentine_ffma \
  serpentine_ffma@PAIR_LANES=0 serpentine_ffma@PAIR_LANES=0,BK=32,STAGES=3 \
  serpentine_ffma@PAIR_LANES=0,STAGES=3 serpentine_ffma@PAIR_LANES=0,GROUP_M=16 \
  serpentine_ffma@PAIR_LANES=0,BM=256,NUM_THREADS=256,MIN_BLOCKS=1 > "$OUT/precompile.txt" 2>&1
echo "precompile rc=$?"
for m in 4096 8192; do
  echo "== run gemm --m $m"
  timeout 120 $R run gemm --m "$m" --stages "$S11,$V" --quiet --format markdown --no-chart \
    -o "$OUT/gemm-fp32-$m-simt12b.json" > "$OUT/gemm-fp32-$m-simt12b.md" 2> "$OUT/gemm-$m.err"
  echo "  rc=$?"
  grep -E "^\| " "$OUT/gemm-fp32-$m-simt12b.md" | cut -c1-120
done
