#!/usr/bin/env bash
# Session 7's closing documents, one call: the roofs calibrated, the whole FP32 ladder at 4096^3
# (the README's main table: `roofline run gemm --m 4096`, every stage interleaved with cuBLAS at
# the default timing), and the LLaMA-7B weight GEMMs at batches 1, 16 and 512 on the picks of
# the shipped tune table beside cuBLAS and the roofs (issue 14's per-token figures).
# GPU wall time: about 300 s (calibrate ~60 s, ladder ~70 s, llm ~150 s).
# Usage: bash benchmarks/gpu_final7.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_final7.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
echo "== calibrate"
timeout 120 $R calibrate --format json > "$OUT/calibration-h200.json" 2> "$OUT/calibrate.err"
echo "  rc=$?"
echo "== run gemm --m 4096 (fp32 ladder)"
timeout 150 $R run gemm --m 4096 --quiet --format markdown --no-chart \
  -o "$OUT/gemm-fp32-4096-ladder.json" > "$OUT/gemm-fp32-4096-ladder.md" 2> "$OUT/ladder.err"
echo "  rc=$?"
grep -E "^\| " "$OUT/gemm-fp32-4096-ladder.md" | cut -c1-110
echo "== run llm --stages best"
timeout 220 $R run llm --preset llama-7b --batch 1,16,512 --dtype bf16 --stages best --no-chart \
  --format markdown -o "$OUT/llm-llama-7b-bf16-best-1-16-512.json" > "$OUT/llm.md" 2> "$OUT/llm.err"
echo "  rc=$?"
grep -iE "per token|roofs allow|best|cublas" "$OUT/llm.md" | tail -8 | cut -c1-160
