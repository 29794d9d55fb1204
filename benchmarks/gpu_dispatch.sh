#!/usr/bin/env bash
# Issue 14 on the H200: (A) the gated timer's event time vs ncu's kernel time for each decode
# stage and cuBLAS at 1x4096x4096 in bf16 and fp32, and the gate's GPU tests; (B) --stages best
# for run gemm (1x4096x4096, 16x11008x4096, 4096^3) and run llm (llama-7b, batch 1,16), bf16.
# Usage: benchmarks/gpu_dispatch.sh OUTDIR
# Expected run time: about 150 s; every step is cut at a shared deadline of 195 s.
set -u
OUT=${1:?usage: gpu_dispatch.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD COLUMNS=200
START=$(date +%s)
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
# seconds for the next step: at most $1, and never past the deadline
left() { local l=$(( 195 - ($(date +%s) - START) )); [ "$l" -lt "$1" ] && echo $(( l > 1 ? l : 1 )) || echo "$1"; }

log "A: gated event time vs ncu's gpu__time_duration at 1x4096x4096 (within max(2%, 0.5 us)?)"
for DT in bf16 fp32; do
  STAGES=gemv_naive,gemv_vector,gemv_splitk,gemv_multirow
  [ "$DT" = bf16 ] && STAGES=$STAGES,gemv_wmma
  timeout "$(left 50)" roofline run gemm --m 1 --n 4096 --k 4096 --dtype $DT --stages $STAGES \
    --budget-ms 100 -q --no-chart --format json -o "$OUT/events-$DT.json" --force \
    > /dev/null 2> "$OUT/events-$DT.err" || log "run gemm $DT failed: $(tail -1 "$OUT/events-$DT.err")"
  if [ -s "$OUT/events-$DT.json" ]; then
    timeout "$(left 70)" python3 benchmarks/timer_vs_ncu.py "$OUT/events-$DT.json" $DT \
      "$OUT/ncu-vs-events-$DT.json" 2> "$OUT/ncu-$DT.err" | tee -a "$OUT/summary.txt"
  fi
done
log "A: tests/gpu/test_timer_gate_gpu.py"
timeout "$(left 30)" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_timer_gate_gpu.py \
  > "$OUT/test-timer-gate-gpu.txt" 2>&1
log "rc $?: $(tail -1 "$OUT/test-timer-gate-gpu.txt")"
log "A took $(( $(date +%s) - START )) s"

log "B: run gemm --stages best (bf16)"
timeout "$(left 40)" roofline run gemm --sizes 1x4096x4096,16x11008x4096,4096 --dtype bf16 \
  --stages best --budget-ms 60 -q --no-chart -o "$OUT/gemm-best-bf16.json" --force \
  > "$OUT/gemm-best-bf16.txt" 2>&1 || log "run gemm --stages best: rc $? (see gemm-best-bf16.txt)"
[ -s "$OUT/gemm-best-bf16.json" ] && python3 benchmarks/summarize_best.py \
  "$OUT/gemm-best-bf16.json" 2>&1 | tee -a "$OUT/summary.txt"

log "B: run llm --stages best (llama-7b, batch 1,16, bf16)"
timeout "$(left 60)" roofline run llm --preset llama-7b --batch 1,16 --dtype bf16 --stages best \
  --budget-ms 60 -q --no-chart -o "$OUT/llm-best-bf16.json" --force \
  > "$OUT/llm-best-bf16.txt" 2>&1 || log "run llm --stages best: rc $? (see llm-best-bf16.txt)"
[ -s "$OUT/llm-best-bf16.json" ] && python3 benchmarks/summarize_best.py \
  "$OUT/llm-best-bf16.json" 2>&1 | tee -a "$OUT/summary.txt"
log "total $(( $(date +%s) - START )) s"
