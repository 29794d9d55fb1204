#!/usr/bin/env bash
# Issue 14 on the H200: (A) the gated timer's event time vs ncu's kernel time for each decode
# stage and cuBLAS at 1x4096x4096 in bf16 and fp32; (B) --stages best for run gemm and run llm.
# Usage: benchmarks/gpu_dispatch.sh OUTDIR      Expected run time: about 150-200 s.
set -u
OUT=${1:?usage: gpu_dispatch.sh OUTDIR}
mkdir -p "$OUT"
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD COLUMNS=200
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
START=$(date +%s)

log "A: gated event time vs ncu (1x4096x4096)"
for DT in bf16 fp32; do
  STAGES=gemv_naive,gemv_vector,gemv_splitk,gemv_multirow
  [ "$DT" = bf16 ] && STAGES=$STAGES,gemv_wmma
  timeout 120 roofline run gemm --m 1 --n 4096 --k 4096 --dtype $DT --stages $STAGES \
    --budget-ms 100 -q --no-chart --format json -o "$OUT/events-$DT.json" --force \
    > /dev/null 2> "$OUT/events-$DT.err" || log "run gemm $DT failed: $(tail -1 "$OUT/events-$DT.err")"
  [ -s "$OUT/events-$DT.json" ] && timeout 150 python3 benchmarks/timer_vs_ncu.py \
    "$OUT/events-$DT.json" $DT "$OUT/ncu-vs-events-$DT.json" 2> "$OUT/ncu-$DT.err" \
    | tee -a "$OUT/summary.txt"
done
log "A took $(( $(date +%s) - START )) s"

log "A: GPU tests of the gate"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_timer_gate_gpu.py \
  > "$OUT/test-timer-gate-gpu.txt" 2>&1; log "tests/gpu/test_timer_gate_gpu.py rc $?: $(tail -1 "$OUT/test-timer-gate-gpu.txt")"

log "B: run gemm --stages best (bf16)"
timeout 120 roofline run gemm --sizes 1x4096x4096,16x11008x4096,4096 --dtype bf16 --stages best \
  --budget-ms 60 -q --no-chart -o "$OUT/gemm-best-bf16.json" --force > "$OUT/gemm-best-bf16.txt" \
  2>&1 || log "run gemm --stages best failed (rc $?)"
python3 benchmarks/summarize_best.py "$OUT/gemm-best-bf16.json" 2>&1 | tee -a "$OUT/summary.txt"

log "B: run llm --stages best (llama-7b, batch 1,16, bf16)"
timeout 150 roofline run llm --preset llama-7b --batch 1,16 --dtype bf16 --stages best \
  --budget-ms 60 -q --no-chart -o "$OUT/llm-best-bf16.json" --force > "$OUT/llm-best-bf16.txt" \
  2>&1 || log "run llm --stages best failed (rc $?)"
python3 benchmarks/summarize_best.py "$OUT/llm-best-bf16.json" 2>&1 | tee -a "$OUT/summary.txt"
log "total $(( $(date +%s) - START )) s"
