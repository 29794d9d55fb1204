#!/usr/bin/env bash
# Issue 14's decode targets on the H200, for stage 34 (gemv_streamk, a persistent stream-K GEMV):
#   0. its 64 tune variants and the other decode stages compiled in parallel (the cache);
#   1. verified at odd shapes in bf16, fp16, fp32 (M = 1, 3, 17, 64; N, K no multiple of 8; the
#      16-byte path's edges; alpha 0.5 and beta 2);
#   2. tuned at 1x11008x4096 bf16 (the variants that do not spill are timed);
#   3. LLaMA-7B's batch-1 shapes and 16x11008x4096 in bf16 beside gemv_splitk, gemv_wmma and
#      cuBLAS, with the tuned parameters;
#   4. fp32 at 1x4096x4096 (tuned, and the registry's parameters);
#   5. a summary against the measured 4517 GB/s HBM read roof (ROOF_GBS overrides it).
# Usage: benchmarks/gpu_decode2.sh OUTDIR
# Expected run time: about 120 s (15-20 s of it compiling ~200 kernels on 16 cores); every step is
# cut at a shared deadline of 150 s.
set -u
OUT=${1:?usage: gpu_decode2.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} COLUMNS=200 PYTHONUNBUFFERED=1
START=$(date +%s)
ROOF_GBS=${ROOF_GBS:-4517}  # the measured HBM read roof of this session's H200 (calibrate)
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
left() { local l=$(( 150 - ($(date +%s) - START) )); [ "$l" -lt "$1" ] && echo $(( l > 1 ? l : 1 )) || echo "$1"; }
S=gemv_streamk
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
case "$ARCH" in 90|100) ARCH="sm_${ARCH}a" ;; "") ARCH=sm_90a ;; *) ARCH="sm_$ARCH" ;; esac

log "0: compile $S's 64 variants (3 dtypes) and the other stages in parallel ($ARCH)"
timeout "$(left 40)" python3 benchmarks/precompile_stage.py "$ARCH" $S:all gemv_splitk gemv_wmma \
  2> "$OUT/precompile.err" | tee -a "$OUT/summary.txt"
log "precompile done at $(( $(date +%s) - START )) s"

log "1: $S verifies at odd shapes (bf16, fp16, fp32)"
for DT in bf16 fp16 fp32; do
  timeout "$(left 25)" roofline run gemm --dtype $DT --stages $S --budget-ms 2 --no-flush -q \
    --no-chart --sizes 1x4097x1031,3x333x4100,17x1000x999,64x4096x4103,2x4104x1032,5x4104x1028,64x40x24,5x3x7,16x11008x4096 \
    --columns stage,time_ms,registers,verified \
    -o "$OUT/verify-$DT.json" --force > "$OUT/verify-$DT.txt" 2>&1
  log "$DT rc $?: $(python3 benchmarks/summarize_decode2.py --verified "$OUT/verify-$DT.json" 2>&1 | tail -1)"
  timeout "$(left 15)" roofline run gemm --dtype $DT --stages $S --budget-ms 2 --no-flush -q \
    --no-chart --alpha 0.5 --beta 2 --sizes 3x1000x515,33x4104x1032,1x4096x4104 \
    --columns stage,time_ms,verified \
    -o "$OUT/verify-beta-$DT.json" --force > "$OUT/verify-beta-$DT.txt" 2>&1
  log "$DT alpha 0.5 beta 2 rc $?: $(python3 benchmarks/summarize_decode2.py --verified "$OUT/verify-beta-$DT.json" 2>&1 | tail -1)"
done
cat "$OUT"/verify-*.txt

log "2: tune $S at 1x11008x4096 bf16"
timeout "$(left 55)" roofline tune gemm --stage $S --m 1 --n 11008 --k 4096 --dtype bf16 \
  --budget-ms 25 -q --columns stage,time_ms,pct_of_roof,pct_of_reference,registers,verified \
  -o "$OUT/tune-bf16.json" --force > "$OUT/tune-bf16.txt" 2>&1
log "tune rc $?"
cat "$OUT/tune-bf16.txt"

log "3: LLaMA-7B shapes, bf16, --tuned"
timeout "$(left 45)" roofline run gemm --dtype bf16 --stages $S,gemv_splitk,gemv_wmma --tuned \
  --sizes 1x12288x4096,1x4096x4096,1x11008x4096,1x4096x11008,1x32000x4096,16x11008x4096 \
  --budget-ms 40 -q --no-chart --columns stage,time_ms,pct_of_roof,pct_of_reference,registers,verified \
  -o "$OUT/decode2-bf16.json" --force > "$OUT/decode2-bf16.txt" 2>&1
log "bf16 rc $?"
cat "$OUT/decode2-bf16.txt"

log "4: fp32 1x4096x4096 (tuned, then the registry's parameters)"
timeout "$(left 15)" roofline run gemm --dtype fp32 --stages $S,gemv_splitk --tuned --m 1 --n 4096 \
  --k 4096 --budget-ms 40 -q --no-chart -o "$OUT/decode2-fp32.json" --force \
  > "$OUT/decode2-fp32.txt" 2>&1
log "fp32 tuned rc $?"
timeout "$(left 15)" roofline run gemm --dtype fp32 --stages $S --m 1 --n 4096 --k 4096 \
  --budget-ms 40 -q --no-chart -o "$OUT/decode2-fp32-default.json" --force \
  > "$OUT/decode2-fp32-default.txt" 2>&1
log "fp32 default rc $?"
cat "$OUT/decode2-fp32.txt" "$OUT/decode2-fp32-default.txt"

log "5: summary against $ROOF_GBS GB/s"
python3 benchmarks/summarize_decode2.py "$ROOF_GBS" "$OUT/decode2-bf16.json" \
  "$OUT/decode2-fp32.json" "$OUT/decode2-fp32-default.json" 2>&1 | tee -a "$OUT/summary.txt"
[ -s "$OUT/tune-bf16.json" ] && python3 benchmarks/summarize_decode2.py "$ROOF_GBS" \
  "$OUT/tune-bf16.json" > "$OUT/tune-summary.txt" 2>&1
log "total $(( $(date +%s) - START )) s"
