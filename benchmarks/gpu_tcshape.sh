#!/usr/bin/env bash
# Issue 14's last target on the H200: `--stages best` within 95% of cuBLAS (geomean) in bf16
# and fp16 over SET (below), away from large squares. Steps:
#   0. compile the candidates (registry stages and the tile variants below) in parallel;
#   1. `roofline tune dispatch` per dtype over SET, in three groups of shapes, each with its own
#      candidates (a group's classes are its own: the later runs never replace another's):
#        odd    127x333x65 (N, K no multiples of 8: the cp.async stages, 64 x 64 tiles)
#        decode 8x4096x4096 (the decode stages and three gemv_wmma variants without spills)
#        tc     the other seven shapes (WGMMA stages, BN = 128 variants, stream-K)
#      Each group also measures the shapes of the committed documents (benchmarks/results/) that
#      share a class with a shape of SET (e.g. bf16 512x12288x4096 beside 512x11008x4096): a
#      class's pick is the stage that wins most of its shapes, here and when seed_dispatch.py
#      reseeds the shipped table from every document, so both pick from the same measurements;
#      documents tune-dispatch-tc-DT-GROUP.json; each saves its classes to the user's table;
#   2. `roofline run gemm --stages best` over SET per dtype from that table
#      (gemm-DT-tc-shapes-best.json), and the user's table itself (dispatch-table.json);
#   3. per shape best/cuBLAS and the geomean per dtype (summary.txt);
#   4. tests/gpu: the tile variants verify at odd shapes and with alpha 0.5 beta 2.
# Usage: benchmarks/gpu_tcshape.sh OUTDIR
# Expected run time: about 320 s (step 1 about 220 s of it, step 4 about 40 s); step 1 stops by
# 350 s so that step 2 always runs; steps 2-4 are cut at a shared deadline of 415 s.
set -u
OUT=${1:?usage: gpu_tcshape.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} COLUMNS=200 PYTHONUNBUFFERED=1
START=$(date +%s)
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
# seconds for the next step: at most $1, and never past deadline $2 (default 410 s)
left() { local l=$(( ${2:-410} - ($(date +%s) - START) )); [ "$l" -lt "$1" ] && echo $(( l > 1 ? l : 1 )) || echo "$1"; }
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
case "$ARCH" in 90|100) ARCH="sm_${ARCH}a" ;; "") ARCH=sm_90a ;; *) ARCH="sm_$ARCH" ;; esac

SET=127x333x65,1000x1016x1032,4096x4104x1032,8x4096x4096,512x4096x4096,512x11008x4096,512x4096x11008,4096x32000x4096,8192
ODD_SIZES=127x333x65
ODD=mma_sync,mma_ldmatrix,mma_multistage,mma_multistage@BM=64,BN=64,WM=32,WN=32,STAGES=3,mma_multistage@BM=64,BN=64,BK=64,WM=32,WN=32,STAGES=2,mma_multistage@BM=64,BN=64,BK=64,WM=32,WN=32,STAGES=3
DEC_SIZES=8x4096x4096
# gemv_wmma spills 144 bytes in bf16 with NVRTC 13.0 (the registry: KW 64, MIN_BLOCKS 2); its
# variants with MIN_BLOCKS 1 (149 registers) or KW 32 (128, or 112 with MIN_BLOCKS 1) do not
DEC=gemv_wmma,gemv_wmma@MIN_BLOCKS=1,gemv_wmma@KW=32,gemv_wmma@KW=32,MIN_BLOCKS=1,gemv_streamk,gemv_streamk@BN=512,U=8,gemv_streamk_mma,gemv_streamk_mma@BK=32,STAGES=4
TC_SIZES=1000x1016x1032,4096x4104x1032,512x4096x4096,512x11008x4096,512x4096x11008,4096x32000x4096,8192
# the committed documents' shapes in the classes of SET (the shipped table's picks stand on them)
declare -A DEC_MORE=([bf16]=2x4096x4096,4x4096x4096,16x4096x4096 [fp16]=16x4096x4096)
declare -A TC_MORE=([bf16]=512x12288x4096,512x32000x4096,4096
  [fp16]=256x4096x4096,256x4096x11008,256x11008x4096,256x12288x4096,256x32000x4096,4096)
TC=wgmma_tma,wgmma_ws,wgmma_persistent,wgmma_persistent@BN=128,wgmma_persistent@BN=128,STAGES=6,wgmma_cluster,wgmma_stagger@CLUSTER_M=1,LAG=1,wgmma_stagger@BN=128,CLUSTER_M=1,LAG=1,wgmma_streamk,wgmma_streamk@BN=128,wgmma_streamk@BN=128,STAGES=6

log "0: compile the candidates in parallel ($ARCH)"
# precompile_stage.py takes one stage or variant per argument: split the lists at the stage names
ITEMS=$(python3 -c "import sys; from rooflinecli.stages import gemm as stages
print(' '.join(s.name for s in stages.select(sys.argv[1], 'fp16')[:-1]))" "$ODD,$DEC,$TC")
# shellcheck disable=SC2086  # one argument per item
timeout "$(left 60)" python3 benchmarks/precompile_stage.py "$ARCH" $ITEMS \
  2> "$OUT/precompile.err" | tee -a "$OUT/summary.txt"
log "precompile done at $(( $(date +%s) - START )) s"

tune() {  # tune DT GROUP SIZES STAGES CAP
  timeout "$(left "$5" 350)" roofline tune dispatch --dtype "$1" --sizes "$3" --stages "$4" \
    --budget-ms 100 -q --columns stage,time_ms,pct_of_reference,registers,verified \
    -o "$OUT/tune-dispatch-tc-$1-$2.json" --force > "$OUT/tune-dispatch-tc-$1-$2.txt" 2>&1
  local rc=$?
  log "tune dispatch $1 $2 rc $rc at $(( $(date +%s) - START )) s"
  [ -s "$OUT/tune-dispatch-tc-$1-$2.json" ] && python3 benchmarks/summarize_best.py --winners \
    "$OUT/tune-dispatch-tc-$1-$2.json" 2>&1 | tee -a "$OUT/summary.txt"
}
for DT in bf16 fp16; do
  log "1: tune dispatch $DT"
  tune $DT odd $ODD_SIZES "$ODD" 25
  tune $DT decode "$DEC_SIZES,${DEC_MORE[$DT]}" "$DEC" 30
  tune $DT tc "$TC_SIZES,${TC_MORE[$DT]}" "$TC" 130
done
python3 -c "from rooflinecli.stages import dispatch; print(dispatch.user_table_path('NVIDIA H200'))" \
  > "$OUT/dispatch-table-path.txt" 2>&1 && cp "$(cat "$OUT/dispatch-table-path.txt")" \
  "$OUT/dispatch-table.json" 2>> "$OUT/dispatch-table-path.txt"

for DT in bf16 fp16; do
  log "2: run gemm --stages best $DT"
  timeout "$(left 35 415)" roofline run gemm --stages best --sizes $SET --dtype $DT --budget-ms 100 \
    -q --no-chart -o "$OUT/gemm-$DT-tc-shapes-best.json" --force \
    > "$OUT/gemm-$DT-tc-shapes-best.txt" 2>&1 || log "run gemm best $DT: rc $? (see the .txt)"
done

log "3: best/cuBLAS per shape, geomean per dtype"
for DT in bf16 fp16; do
  [ -s "$OUT/gemm-$DT-tc-shapes-best.json" ] && python3 benchmarks/summarize_best.py \
    "$OUT/gemm-$DT-tc-shapes-best.json" 2>&1 | tee -a "$OUT/summary.txt"
done

log "4: tests/gpu: the tile variants verify at odd shapes and read C when beta != 0"
# last, in the time left: the tests compile their kernels again (their own cache), about 40 s
timeout "$(left 70 415)" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_tensor_cores.py \
  -k variants > "$OUT/test-variants-gpu.txt" 2>&1
log "rc $?: $(tail -1 "$OUT/test-variants-gpu.txt")"
log "total $(( $(date +%s) - START )) s"
