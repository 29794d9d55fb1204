#!/usr/bin/env bash
# Session 9's device call: this session changed no kernel, but the program's exit (cli.main
# freezes its objects), the records' types (Spec, Roof, Identity, View as NamedTuples), lazy
# imports and the Makefile's bytecode step. A real run through the installed program, re-rendered
# from its document, and the whole GPU suite check them on the H200. Usage: gpu_s9.sh OUTDIR.
# About 6-8 minutes: the run ~1 min, the GPU tests ~5-6 min (cut at 400 s).
set -u
OUT=$1
mkdir -p "$OUT"
R=roofline
command -v roofline >/dev/null || R="python3 -m rooflinecli"  # the same cli.main
echo "== run gemm --m 4096 (the program's entry, cli.main)"
timeout 120 $R run gemm --m 4096 --no-chart -o "$OUT/gemm-fp32-4096-s9.json" \
  > "$OUT/run.log" 2>&1
echo "  rc=$?"; tail -22 "$OUT/run.log" | cut -c1-160
echo "== show, from the document alone"
$R show "$OUT/gemm-fp32-4096-s9.json" --no-chart > "$OUT/show.log" 2>&1
echo "  rc=$?"; head -5 "$OUT/show.log" | cut -c1-160
echo "== GPU tests"
timeout 400 python3 -m pytest -q -p no:cacheprovider tests/gpu --durations=5 \
  > "$OUT/gputests.log" 2>&1
echo "  rc=$?"; tail -12 "$OUT/gputests.log" | cut -c1-200
