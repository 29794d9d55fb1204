#!/usr/bin/env bash
# The README's main table: `roofline run gemm --m 4096`, the whole FP32 ladder (stages 01-13;
# the decode stages leave the default ladder at M = 4096), every stage interleaved with cuBLAS
# at the default timing. If the run fails (a new stage's error leaving the CUDA context
# unusable), it runs again without stage 13 and says so.
# GPU wall time: about 45 s (90 s if it has to run twice).
# Usage: bash benchmarks/gpu_ladder7.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_ladder7.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
timeout 150 $R run gemm --m 4096 --quiet --format markdown --no-chart \
  -o "$OUT/gemm-fp32-4096-ladder.json" > "$OUT/ladder.md" 2> "$OUT/ladder.err"
rc=$?
echo "ladder rc=$rc"
if [ $rc -ne 0 ]; then
  tail -3 "$OUT/ladder.err"
  S=$(python3 -c "from rooflinecli.stages import stages; print(','.join(s.name for s in stages.built_for(stages.select(None, 'fp32'), [4096]) if not s.reference and s.name != 'simt_streamk'))")
  timeout 150 $R run gemm --m 4096 --stages "$S" --quiet --format markdown --no-chart \
    -o "$OUT/gemm-fp32-4096-ladder.json" > "$OUT/ladder.md" 2> "$OUT/ladder.err"
  echo "ladder without stage 13 rc=$?"
fi
grep -E "^\| " "$OUT/ladder.md" | cut -c1-110
