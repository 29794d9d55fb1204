#!/usr/bin/env bash
# The shapes users run: LLM weight GEMMs from batch 1 to 4096 (benchmarks/shapes/), the grid the
# shipped H200 tune table is seeded from, and `--stages best` judged on shapes it was not made on.
#
#   bash benchmarks/shapes.sh OUTDIR [STEP...]     (default: tests grid verdict llm, ~6 min)
#
# DOC_SUFFIX (e.g. -h100) ends the names of the grid's and the verdict's documents, for a GPU
# whose documents sit beside the H200's (benchmarks/h100.sh).
#
# Steps: tests (tests/gpu/test_swapab.py, each test in its own process: a launch that fails
# takes its process's CUDA context along), grid (per dtype and per M of
# benchmarks/shapes/grid.txt, `roofline tune dispatch` over that M's shapes with its bucket's
# candidates: the documents benchmarks/seed_dispatch.py seeds the grid's classes from), verdict
# (`run gemm --stages best` over the public, odd and held-out sets, per dtype, from the table as
# shipped: no user table), fill (stage 26's widths beside the stage that takes its width from the
# shape, at 128-512 rows), pitch (the decode stages at pitches no 16 bytes divide), llm
# (`run llm --preset llama-7b --batch 1,16 --stages best`, bf16).
# To reseed after grid: copy OUTDIR/tune-dispatch-grid-*.json.gz to benchmarks/results/ and run
# benchmarks/seed_dispatch.py (docs/dispatch.md).
source "$(dirname "$0")/lib.sh"
suite "$@"

shapes() { grep -v '^#' "benchmarks/shapes/$1.txt" | grep . | paste -sd, -; }

# The candidates of each M bucket of the grid: the decode stages, stage 31 in the tile that
# holds the batch (BM = the next power of two, BN = 64 columns a consumer warpgroup), the 64-row
# WGMMA tiles with split-K or stream-K; at 128-512 rows stage 31 beside the 128-wide WGMMA tiles,
# among them its 128x256 tiles on two consumers of 128 columns (WN=128: half the re-reads of A),
# also with RED=1 (a cut tile's workers add into its owner's slot: one sum to read, not many),
# and the persistent pairs at tile widths between and below 128 and 256 (BN 192: 2 x 64 tiles
# fill 128 SMs at N = 12288; BN 64: at N = 4096), from 200 rows the persistent and stream-K
# stages at BN 192 too, and stage 26 taking its width from the shape (wgmma_persistent_fill),
# chosen per class like every other candidate.
declare -A CAND=(
  [1]="gemv_splitk,gemv_splitk@NUM_THREADS=256,gemv_streamk,gemv_streamk@BN=512,U=8,wgmma_swapab@BM=8,wgmma_swapab@BM=8,BN=256"
  [3]="gemv_wmma,gemv_wmma@MIN_BLOCKS=1,gemv_splitk,wgmma_swapab@BM=8,wgmma_swapab@BM=8,BN=256"
  [12]="gemv_wmma,gemv_wmma@MIN_BLOCKS=1,wgmma_swapab@BM=16,wgmma_swapab@BM=16,BN=256"
  [24]="gemv_wmma,wgmma_swapab@BM=32,wgmma_swapab@BM=32,BN=256,wgmma_tma@BM=64,SPLIT_K=3"
  [56]="wgmma_swapab,wgmma_swapab@BN=256,wgmma_tma@BM=64,SPLIT_K=3,wgmma_streamk@BM=64,BN=128,LAG=0"
  [112]="wgmma_swapab@BM=128,wgmma_swapab@BM=128,BN=64,wgmma_swapab@BM=128,BN=256,WN=128,wgmma_swapab@BM=128,BN=256,WN=128,RED=1,wgmma_persistent@BN=128,wgmma_tma@BM=64,SPLIT_K=3,wgmma_cluster@BN=192,wgmma_cluster@BN=64,STAGES=8,wgmma_persistent_fill"
  [200]="wgmma_swapab@BM=256,BN=64,wgmma_swapab@BM=256,wgmma_swapab@BM=128,BN=256,WN=128,wgmma_swapab@BM=128,BN=256,WN=128,RED=1,wgmma_persistent@BN=128,wgmma_streamk@BN=128,wgmma_tma,wgmma_cluster@BN=192,wgmma_cluster@BN=64,STAGES=8,wgmma_persistent@BN=192,wgmma_streamk@BN=192,wgmma_persistent_fill"
  [320]="wgmma_swapab@BM=256,BN=64,wgmma_swapab@BM=256,wgmma_swapab@BM=128,BN=256,WN=128,wgmma_swapab@BM=128,BN=256,WN=128,RED=1,wgmma_persistent@BN=128,wgmma_persistent,wgmma_streamk@BN=128,wgmma_tma,wgmma_cluster@BN=192,wgmma_cluster@BN=64,STAGES=8,wgmma_persistent@BN=192,wgmma_streamk@BN=192,wgmma_persistent_fill"
)
CAND[448]=${CAND[320]}
# above 512 rows the full GEMM stages: the persistent tiles at each width and taking it from the
# shape, the pairs, stream-K, the staggered pairs and the plain TMA pipeline
CAND[768]="wgmma_tma,wgmma_persistent,wgmma_persistent@BN=128,wgmma_persistent@BN=192,wgmma_persistent_fill,wgmma_cluster,wgmma_cluster@BN=192,wgmma_streamk,wgmma_streamk@BN=128,wgmma_stagger"
CAND[3072]=${CAND[768]}
# GRID_MS (e.g. "112 200 320") remakes only those buckets' documents
GRID_MS=${GRID_MS:-1 3 12 24 56 112 200 320 448 768 3072}
DOC_SUFFIX=${DOC_SUFFIX:-}

step_tests() {
  local t i=0
  for t in $(python3 -m pytest -q --collect-only -p no:cacheprovider tests/gpu/test_swapab.py \
    2> /dev/null | grep '::'); do
    i=$((i + 1))
    step "test-swapab-$i" 90 python3 -m pytest -q -p no:cacheprovider "$t"
  done
}

step_grid() {
  local dt m all items
  all=$(for m in $GRID_MS; do printf '%s,' "${CAND[$m]}"; done)
  items=$(python3 -c "import sys; from rooflinecli.stages import gemm
print(' '.join(s.name for s in gemm.select(sys.argv[1].rstrip(','), 'fp16') if not s.reference))" \
    "$all")
  # shellcheck disable=SC2086  # one argument per stage or variant
  precompile $items
  for dt in bf16 fp16; do
    for m in $GRID_MS; do
      doc "tune-dispatch-grid-$dt-m$m${DOC_SUFFIX}.json.gz" 120 tune dispatch --dtype "$dt" \
        --budget-ms 10 \
        --sizes "$(grep -v '^#' benchmarks/shapes/grid.txt | grep "^${m}x" | paste -sd, -)" \
        --stages "${CAND[$m]}"
    done
  done
}

# best_over NAME DTYPE SET: `run gemm --stages best` over benchmarks/shapes/SET.txt into NAME,
# from the table as shipped (a cache of its own: no user table)
best_over() {
  ROOFLINE_CACHE_DIR=$OUT/cache doc "$1" 200 run gemm --stages best --dtype "$2" \
    --sizes "$(shapes "$3")" --budget-ms 20 --no-chart
  python3 benchmarks/summarize_best.py "$OUT/$1" 2>&1 | tail -1
}

step_verdict() {
  local dt
  for dt in bf16 fp16; do
    best_over "gemm-$dt-public-best${DOC_SUFFIX}.json.gz" "$dt" public
    best_over "gemm-$dt-odd-best${DOC_SUFFIX}.json.gz" "$dt" odd
    best_over "gemm-$dt-heldout-best${DOC_SUFFIX}.json.gz" "$dt" heldout
  done
}

# medium: the table's picks over the odd set and the public set's M = 65-512 shapes, both dtypes
# (each interleaved with cuBLAS, 10 ms a shape, at most 45 s a dtype): the check after a reseed
step_medium() {
  local dt sizes
  sizes="$(shapes odd),$(grep -v '^#' benchmarks/shapes/public.txt | grep . \
    | awk -Fx '$1 >= 65 && $1 <= 512' | paste -sd, -)"
  for dt in bf16 fp16; do
    ROOFLINE_CACHE_DIR=$OUT/cache doc "gemm-$dt-medium-best.json.gz" 45 run gemm --stages best \
      --dtype "$dt" --sizes "$sizes" --budget-ms 10 --no-chart
    python3 benchmarks/summarize_best.py "$OUT/gemm-$dt-medium-best.json.gz" 2>&1 | tail -1
  done
}

# fill: stage 26 at each of its widths beside wgmma_persistent_fill, which takes its width from
# the shape, over the public set's 128-512 rows (bf16)
step_fill() {
  local sizes
  sizes=$(grep -v '^#' benchmarks/shapes/public.txt | grep . | awk -Fx '$1 >= 128 && $1 <= 512' \
    | paste -sd, -)
  doc "gemm-bf16-fill${DOC_SUFFIX}.json.gz" 150 run gemm --dtype bf16 --budget-ms 10 --no-chart \
    --stages "wgmma_persistent,wgmma_persistent@BN=128,STAGES=6,wgmma_persistent@BN=192,$FILL" \
    --sizes "$sizes"
}
FILL=wgmma_persistent_fill

# pitch: the decode stages at pitches no 16 bytes divide (benchmarks/shapes/pitch.txt): stage 59,
# which shifts aligned 16-byte pieces, beside the stages whose 16-byte paths then load scalars,
# stage 33 (stage 31's rows at any pitch) and cuBLAS
step_pitch() {
  local dt
  for dt in bf16 fp16; do
    doc "gemm-$dt-pitch${DOC_SUFFIX}.json.gz" 150 run gemm --dtype "$dt" --budget-ms 10 \
      --no-chart --stages "$PITCH" --sizes "$(shapes pitch)"
  done
}
PITCH=gemv_shift,gemv_shift@BM=8,gemv_shift@BM=16,gemv_shift@BN=16,gemv_shift@BN=64
PITCH=$PITCH,gemv_shift@NUM_THREADS=256,MIN_BLOCKS=2
PITCH=$PITCH,gemv_splitk,gemv_wmma,gemv_wmma@MIN_BLOCKS=1,gemv_streamk,wgmma_swapab_ld@BM=8
PITCH=$PITCH,wgmma_swapab_ld@BM=16,wgmma_swapab_ld@BM=32,wgmma_swapab_ld@BM=64

step_llm() {
  ROOFLINE_CACHE_DIR=$OUT/cache doc llm-llama-7b-bf16-best-1-16.json.gz 120 run llm \
    --preset llama-7b --batch 1,16 --stages best --dtype bf16 --no-chart
}

run_steps tests grid verdict llm
