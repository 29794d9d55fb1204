#!/usr/bin/env bash
# Issue 14's batch-16 target on the H200, for stage 35 (gemv_streamk_mma: stage 34's stream-K
# shares of B, the math on mma.sync m16n8k16 fed by a cp.async pipeline):
#   0. its tune variants (bf16) and gemv_wmma compiled in parallel (the kernel cache);
#   1. verified at odd shapes in bf16 and fp16 (N, K no multiple of 8: the scalar copy path;
#      M = 3, 17, 64: padded and several row blocks), then alpha 0.5 beta 2;
#   2. tuned at 16x11008x4096 bf16 (the variants that compile without spills are timed);
#   3. LLaMA-7B's five weight GEMMs at M = 16 in bf16 beside gemv_wmma and cuBLAS, tuned;
#   4. a summary against the measured HBM read roof (ROOF_GBS, default 4622 GB/s).
# Usage: benchmarks/gpu_tc16.sh OUTDIR
# Expected run time: about 100 s (10-20 s of it compiling on 16 cores); every step is cut at a
# shared deadline of 115 s.
set -u
OUT=${1:?usage: gpu_tc16.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} COLUMNS=200 PYTHONUNBUFFERED=1
START=$(date +%s)
ROOF_GBS=${ROOF_GBS:-4622}  # the measured HBM read roof (issue 14)
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
left() { local l=$(( 115 - ($(date +%s) - START) )); [ "$l" -lt "$1" ] && echo $(( l > 1 ? l : 1 )) || echo "$1"; }
S=gemv_streamk_mma
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
case "$ARCH" in 90|100) ARCH="sm_${ARCH}a" ;; "") ARCH=sm_90a ;; *) ARCH="sm_$ARCH" ;; esac

log "0: compile $S's variants and gemv_wmma in parallel ($ARCH)"
timeout "$(left 30)" python3 benchmarks/precompile_stage.py "$ARCH" $S:all gemv_wmma \
  2> "$OUT/precompile.err" | tee -a "$OUT/summary.txt"
log "precompile done at $(( $(date +%s) - START )) s"

log "1: $S verifies at odd shapes (bf16, fp16)"
for DT in bf16 fp16; do
  timeout "$(left 20)" roofline run gemm --dtype $DT --stages $S --budget-ms 30 --no-flush -q \
    --no-chart --sizes 16x4097x1031,3x333x4104,17x1000x1000,64x4096x4104,16x11008x4096 \
    --columns stage,time_ms,registers,verified \
    -o "$OUT/verify-$DT.json" --force > "$OUT/verify-$DT.txt" 2>&1
  log "$DT rc $?: $(python3 benchmarks/summarize_decode2.py --verified "$OUT/verify-$DT.json" 2>&1 | tail -1)"
  timeout "$(left 10)" roofline run gemm --dtype $DT --stages $S --budget-ms 2 --no-flush -q \
    --no-chart --alpha 0.5 --beta 2 --sizes 3x1000x515,33x4104x1032,16x4096x4104 \
    --columns stage,time_ms,verified \
    -o "$OUT/verify-beta-$DT.json" --force > "$OUT/verify-beta-$DT.txt" 2>&1
  log "$DT alpha 0.5 beta 2 rc $?: $(python3 benchmarks/summarize_decode2.py --verified "$OUT/verify-beta-$DT.json" 2>&1 | tail -1)"
done
cat "$OUT"/verify-*.txt

log "2: tune $S at 16x11008x4096 bf16"
timeout "$(left 40)" roofline tune gemm --stage $S --m 16 --n 11008 --k 4096 --dtype bf16 \
  --budget-ms 60 -q --columns stage,time_ms,pct_of_roof,pct_of_reference,registers,verified \
  -o "$OUT/tune-bf16.json" --force > "$OUT/tune-bf16.txt" 2>&1
log "tune rc $?"
cat "$OUT/tune-bf16.txt"

log "3: LLaMA-7B's weight GEMMs at M = 16, bf16, --tuned"
timeout "$(left 35)" roofline run gemm --dtype bf16 --stages $S,gemv_wmma --tuned \
  --sizes 16x12288x4096,16x4096x4096,16x11008x4096,16x4096x11008,16x32000x4096 \
  --budget-ms 40 -q --no-chart --columns stage,time_ms,pct_of_roof,pct_of_reference,registers,verified \
  -o "$OUT/tc16-bf16.json" --force > "$OUT/tc16-bf16.txt" 2>&1
log "bf16 rc $?"
cat "$OUT/tc16-bf16.txt"

log "4: summary against $ROOF_GBS GB/s"
python3 benchmarks/summarize_decode2.py "$ROOF_GBS" "$OUT/tc16-bf16.json" 2>&1 | tee -a "$OUT/summary.txt"
[ -s "$OUT/tune-bf16.json" ] && python3 benchmarks/summarize_decode2.py "$ROOF_GBS" \
  "$OUT/tune-bf16.json" > "$OUT/tune-summary.txt" 2>&1
log "total $(( $(date +%s) - START )) s"
