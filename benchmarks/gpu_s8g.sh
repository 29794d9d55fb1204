#!/usr/bin/env bash
# Session 8, closing call (issue 15): the documents. `roofline run gemm` (each stage interleaved
# with cuBLAS round by round, default timing: 400 ms budget, L2 flushed) in bf16 and fp16 at
# 8192^3 and 4096^3 on stages 28, 29 and 36 (as it ships and without the cluster); then the
# whole GPU test suite.
# GPU wall time: about 300 s (run gemm ~80 s, GPU tests up to 220 s).
# Usage: bash benchmarks/gpu_s8g.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_s8g.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
for dt in bf16 fp16; do
  for m in 8192 4096; do
    echo "== run gemm $dt $m"
    timeout 120 $R run gemm --dtype $dt --m $m --quiet --no-chart --format markdown \
      --stages wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@CLUSTER_M=1,LAG=0 \
      -o "$OUT/gemm-$dt-$m-s8.json" > "$OUT/gemm-$dt-$m-s8.md" 2> "$OUT/gemm-$dt-$m-s8.err"
    echo "  rc=$?"; grep -E "^\| " "$OUT/gemm-$dt-$m-s8.md" | cut -c1-110
  done
done
echo "== GPU tests"
timeout 220 python3 -m pytest -q -p no:cacheprovider tests/gpu > "$OUT/gputests.log" 2>&1
echo "  rc=$?"; tail -8 "$OUT/gputests.log" | cut -c1-200
