#!/usr/bin/env bash
# The shapes users run (LLM weight GEMMs from batch 1 to 4096), on the GPU at hand, in two steps:
#
#   benchmarks/shapes.sh grid OUTDIR
#     0. compile the candidates in parallel; the GPU tests of the skinny stages
#        (tests/gpu/test_swapab.py);
#     1. per dtype and per M of benchmarks/shapes/grid.txt, `roofline tune dispatch` over that
#        M's shapes with its bucket's candidates (below): tune-dispatch-grid-DT-mM.json. These
#        documents, copied into benchmarks/results/, are what benchmarks/seed_dispatch.py seeds
#        the shipped table of the grid's classes from (docs/dispatch.md).
#   benchmarks/shapes.sh verdict OUTDIR
#     0. the GPU tests of the skinny stages, as in step 0;
#     2. per dtype, `roofline run gemm --stages best` over the public set, the odd shapes and
#        the held-out set (benchmarks/shapes/*.txt) from the table as shipped (a bare cache):
#        gemm-DT-public-best.json, gemm-DT-odd-best.json, gemm-DT-heldout-best.json;
#     3. `roofline run llm --preset llama-7b --batch 1,16 --stages best` (bf16);
#     4. per document the geometric mean of % of cuBLAS and the worst shape (summary.txt).
#
# Everything lands in OUTDIR/docs and is packed into OUTDIR/shapes-STEP.tgz (one file to
# fetch from a remote machine). Run from anywhere; ROOFLINE_COMMIT (the full hash) names the code.
set -u
STEP=${1:?usage: shapes.sh grid|verdict OUTDIR}
OUT=${2:?usage: shapes.sh grid|verdict OUTDIR}
mkdir -p "$OUT/docs" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} COLUMNS=200 PYTHONUNBUFFERED=1
START=$(date +%s)
D=$OUT/docs
log() { echo "== $*" | tee -a "$D/summary.txt"; }
shapes() { grep -v '^#' "benchmarks/shapes/$1.txt" | grep . | paste -sd, -; }
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
case "$ARCH" in 90|100) ARCH="sm_${ARCH}a" ;; "") ARCH=sm_90a ;; *) ARCH="sm_$ARCH" ;; esac
R="python3 -m rooflinecli"
log "shapes.sh $STEP at ${ROOFLINE_COMMIT:-unknown commit}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv \
  >> "$D/summary.txt" 2>&1

# The candidates of each M bucket of the grid: the stages and tile variants that can win there.
# Skinny M: the decode stages, stage 31 with the tile that holds the batch (BM = the next power
# of two, BN = 64 columns a consumer warpgroup), the 64-row WGMMA stages with split-K or
# stream-K; medium M: stage 31 at 128-256 rows beside the full WGMMA stages with 128-wide tiles.
declare -A CAND=(
  [1]="gemv_splitk,gemv_splitk@NUM_THREADS=256,gemv_streamk,gemv_streamk@BN=512,U=8,wgmma_swapab@BM=8,wgmma_swapab@BM=8,BN=256"
  [3]="gemv_wmma,gemv_wmma@MIN_BLOCKS=1,gemv_splitk,wgmma_swapab@BM=8,wgmma_swapab@BM=8,BN=256"
  [12]="gemv_wmma,gemv_wmma@MIN_BLOCKS=1,wgmma_swapab@BM=16,wgmma_swapab@BM=16,BN=256"
  [24]="gemv_wmma,wgmma_swapab@BM=32,wgmma_swapab@BM=32,BN=256,wgmma_tma@BM=64,SPLIT_K=3"
  [56]="wgmma_swapab,wgmma_swapab@BN=256,wgmma_tma@BM=64,SPLIT_K=3,wgmma_streamk@BM=64,BN=128,LAG=0"
  [112]="wgmma_swapab@BM=128,wgmma_swapab@BM=128,BN=64,wgmma_persistent@BN=128,wgmma_tma@BM=64,SPLIT_K=3"
  [200]="wgmma_swapab@BM=256,BN=64,wgmma_persistent@BN=128,wgmma_streamk@BN=128,wgmma_tma"
  [320]="wgmma_swapab@BM=256,BN=64,wgmma_persistent@BN=128,wgmma_persistent,wgmma_streamk@BN=128,wgmma_tma"
)
GRID_MS="1 3 12 24 56 112 200 320"

# the documents so far, in one file (repacked after each step: a run cut short keeps them)
pack() { tar -C "$D" -cf - . | gzip -1 > "$OUT/shapes-$STEP.tgz.part" && mv "$OUT/shapes-$STEP.tgz.part" "$OUT/shapes-$STEP.tgz"; }
DEADLINE=${SHAPES_DEADLINE:-330}  # seconds after which no further run starts
late() { [ $(( $(date +%s) - START )) -ge "$DEADLINE" ] && { log "deadline: $* not run"; return 0; }; return 1; }

# tests/gpu/test_swapab.py, each test in its own process (a kernel that fails its launch takes
# the CUDA context of its process with it: the tests after it would fail for that alone)
gpu_tests() {
  local t rc
  for t in $(python3 -m pytest -q --collect-only -p no:cacheprovider tests/gpu/test_swapab.py \
      2>/dev/null | grep '::'); do
    timeout 90 python3 -m pytest -q -p no:cacheprovider "$t" >> "$D/test-swapab-gpu.txt" 2>&1
    rc=$?
    log "tests/gpu: $t rc $rc at $(( $(date +%s) - START )) s"
  done
}

if [ "$STEP" = grid ]; then
  log "0: compile the candidates in parallel ($ARCH)"
  ALL=$(for m in $GRID_MS; do printf '%s,' "${CAND[$m]}"; done)
  ITEMS=$(python3 -c "import sys; from rooflinecli.stages import gemm as stages
print(' '.join(s.name for s in stages.select(sys.argv[1].rstrip(','), 'fp16')[:-1]))" "$ALL")
  # shellcheck disable=SC2086  # one argument per item
  timeout 120 python3 benchmarks/precompile_stage.py "$ARCH" $ITEMS \
    > "$D/precompile.txt" 2>&1
  log "precompiled (rc $?) at $(( $(date +%s) - START )) s"
  gpu_tests
  for DT in bf16 fp16; do
    for m in $GRID_MS; do
      S=$(grep -v '^#' benchmarks/shapes/grid.txt | grep "^${m}x" | paste -sd, -)
      late "tune dispatch $DT M=$m" && continue
      timeout 120 $R tune dispatch --dtype "$DT" --sizes "$S" --stages "${CAND[$m]}" \
        --budget-ms 10 -q --format csv -o "$D/tune-dispatch-grid-$DT-m$m.json" --force \
        > "$D/tune-dispatch-grid-$DT-m$m.csv" 2> "$D/tune-dispatch-grid-$DT-m$m.err"
      log "1: tune dispatch $DT M=$m rc $? at $(( $(date +%s) - START )) s"
      pack
    done
  done
  log "total $(( $(date +%s) - START )) s"
  pack
  exit 0
fi

if [ "$STEP" = verdict ]; then
  log "0: the GPU tests of the skinny stages"
  gpu_tests
  export ROOFLINE_CACHE_DIR=$OUT/cache  # no user table: the shipped one decides
  for DT in bf16 fp16; do
    for SET in public odd heldout; do
      late "run gemm best $DT $SET" && continue
      timeout 200 $R run gemm --stages best --dtype "$DT" --sizes "$(shapes $SET)" \
        --budget-ms 20 -q --no-chart --format csv -o "$D/gemm-$DT-$SET-best.json" --force \
        > "$D/gemm-$DT-$SET-best.csv" 2> "$D/gemm-$DT-$SET-best.err"
      log "2: run gemm best $DT $SET rc $? at $(( $(date +%s) - START )) s"
      pack
    done
  done
  late "run llm" || timeout 120 $R run llm --preset llama-7b --batch 1,16 --stages best --dtype bf16 -q \
    -o "$D/llm-llama-7b-bf16-best-1-16.json" --force > "$D/llm-llama-7b-bf16-best-1-16.txt" \
    2>&1
  log "3: run llm rc $? at $(( $(date +%s) - START )) s"
  for f in "$D"/gemm-*-best.json "$D"/llm-*.json; do
    [ -s "$f" ] && python3 benchmarks/summarize_best.py "$f" 2>&1 | tail -3 >> "$D/summary.txt"
  done
  log "total $(( $(date +%s) - START )) s"
  pack
  exit 0
fi
echo "shapes.sh: the step is grid or verdict, not $STEP" >&2
exit 2
