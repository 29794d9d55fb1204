#!/usr/bin/env bash
# Issue 15, SIMT target: stage 13 (simt_streamk: stage 12's loop on a persistent grid of
# the 264 resident blocks, the tiles past the last full wave cut along K over all of them)
# against stage 12 (serpentine_ffma: 98.9-99.3% of cuBLAS at 4096^3, 100.1% at 8192^3), its
# STREAMK=0 control (the same persistent grid, whole tiles only) and SK_WAVES=2 (one wave more
# cut); cuBLAS beside. First the GPU tests of stage 13 (odd shapes, alpha 0.5 / beta 2, the
# workspace's flags zero after two launches). Default timing (400 ms budget, L2 flushed, each
# stage interleaved with cuBLAS); one `roofline run gemm` per size, so each document is one run.
# GPU wall time: about 110 s (precompile ~20 s, tests ~25 s, 4096^3 ~20 s, 8192^3 ~40 s);
# timeouts cap it at 200 s.
# Usage: bash benchmarks/gpu_simtsk.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_simtsk.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
V="serpentine_ffma,simt_streamk,simt_streamk@STREAMK=0,simt_streamk@SK_WAVES=2"
timeout 40 python3 benchmarks/precompile_stage.py sm_90a serpentine_ffma simt_streamk \
  simt_streamk@STREAMK=0 simt_streamk@SK_WAVES=2 simt_streamk@SK_MIN=1 \
  > "$OUT/precompile.txt" 2>&1
echo "precompile rc=$?"
cat "$OUT/precompile.txt" | cut -c1-120
echo "== GPU tests (stage 13)"
timeout 50 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_run_gemm.py -k stage_13 \
  > "$OUT/gputests.log" 2>&1
echo "  rc=$?"
tail -5 "$OUT/gputests.log" | cut -c1-200
for m in 4096 8192; do
  echo "== run gemm --m $m"
  timeout 50 $R run gemm --m "$m" --stages "$V" --quiet --format markdown --no-chart \
    -o "$OUT/gemm-fp32-$m-simtsk.json" > "$OUT/gemm-fp32-$m-simtsk.md" 2> "$OUT/gemm-$m.err"
  echo "  rc=$?"
  grep -E "^\| " "$OUT/gemm-fp32-$m-simtsk.md" | cut -c1-120
  tail -3 "$OUT/gemm-$m.err" | cut -c1-200
done
