#!/usr/bin/env bash
# FP8 (e4m3) GEMM, stage 32 and its variants, against cuBLASLt's FP8 GEMM (torch._scaled_mm, in
# both accumulation modes): the documents of benchmarks/results/ named gemm-fp8-*. Every run
# checks each stage against the float64 product of the dequantised inputs (output poisoned
# first), times it interleaved with both cuBLASLt modes and compares it with the mode whose
# accumulation matches its own (promoted: default; not promoted: use_fast_accum), at beta = 0.
#
#   bash benchmarks/gemm_fp8.sh OUTDIR [STEP...]     (default: every step, ~12 min)
#
# Steps: best (`--stages best` at 8192^3 and the prefill shapes, M >= 1024, of
# benchmarks/shapes/public.txt: the picks of the tune table, fixed before the run), odd (every
# FP8 stage of the registry at shapes that are no tile multiple, verified: K and N multiples of
# 16, M any; the decode stage where M <= 64), grid
# (`roofline tune dispatch --dtype fp8` per M of benchmarks/shapes/grid.txt, and at M 1024 and
# 4096 over its weight shapes, with the M bucket's candidates: the documents
# tune-dispatch-grid-fp8-m*.json.gz that benchmarks/seed_dispatch.py seeds the FP8 classes from),
# widths (stage 32's tile widths between 128 and 256 at shapes whose last wave 256 leaves short),
# fill (the stages that take their tile width from the shape, over best's shapes), decode (the
# decode stages, 34 and 58, at M = 1, 16 and 64 over the public set's weight shapes), tiles (the
# decode stages' tiles at M = 16 and 64), even (stage 34 on a whole number of blocks per tile);
# tiles and even are not among the default steps.
# DOC_SUFFIX (e.g. -h100) ends every document's name, as in shapes.sh; GRID_MS (e.g. "1 3 12")
# remakes only those M of the grid.
source "$(dirname "$0")/lib.sh"
suite "$@"
DOC_SUFFIX=${DOC_SUFFIX:-}

PREFILL=$(awk -F x '/^[0-9]/ && $1 >= 1024' benchmarks/shapes/public.txt | paste -sd, -)

step_best() {
  doc "gemm-fp8-prefill-best${DOC_SUFFIX}.json.gz" 100 run gemm --dtype fp8 --stages best \
    --sizes "8192x8192x8192,$PREFILL" --budget-ms 60
}

step_odd() {
  doc "gemm-fp8-odd${DOC_SUFFIX}.json.gz" 90 run gemm --dtype fp8 \
    --sizes 1x48x16,77x16x4096,129x272x160,1000x1040x1024,511x4112x2064 --budget-ms 10
}

# The grid's candidates: at decode batches (M <= 64) stage 34 with BM the next power of two that
# holds the batch and the one above it, each on its stream-K line over every SM and on its even
# grid (EVEN=1), beside the 16-bit grid's fallbacks; above, stage 32's
# tiles, pipelines and pairs, its widths between 128 and 256 (FP8_WIDTHS), and the stages that
# take their width from the shape (wgmma_fp8_fill, wgmma_fp8_cluster_fill).
FP8_WIDTHS=wgmma_fp8_persistent@BN=160,STAGES=5,wgmma_fp8_persistent@BN=192,STAGES=5,wgmma_fp8_persistent@BN=224,STAGES=5,wgmma_fp8_cluster@BN=192,wgmma_fp8_tma_store@BN=192,wgmma_fp8_tma_store@BN=128,STAGES=6
FP8_WIDE=wgmma_fp8_fill,wgmma_fp8_cluster_fill,wgmma_fp8_n128,wgmma_fp8_promote,wgmma_fp8_promote_async,wgmma_fp8_pingpong,wgmma_fp8_tma_store,wgmma_fp8_cluster,wgmma_fp8_cluster_promote,wgmma_fp8_persistent,$FP8_WIDTHS
# stage 58 (gemv_fp8) at decode batches: its batch tile (BM) holding the batch, strips of 16 and
# 32 weight rows, 4 and 8 chunks in flight
GEMV8=gemv_fp8,gemv_fp8@BN=32,gemv_fp8@KU=8
GEMV16=gemv_fp8@BM=16,gemv_fp8@BM=16,BN=32
GEMV32=gemv_fp8@BM=32,KU=2,gemv_fp8@BM=32,BN=32,KU=2
declare -A FP8_CAND=(
  [1]="$GEMV8,wgmma_fp8_swapab@BM=8,wgmma_fp8_swapab@BM=8,EVEN=1,wgmma_fp8_swapab@BM=16,wgmma_fp8_swapab@BM=16,EVEN=1,wgmma_fp8_n128,wgmma_fp8_persistent"
  [3]="$GEMV8,wgmma_fp8_swapab@BM=8,wgmma_fp8_swapab@BM=8,EVEN=1,wgmma_fp8_swapab@BM=16,wgmma_fp8_swapab@BM=16,EVEN=1,wgmma_fp8_n128,wgmma_fp8_persistent"
  [12]="$GEMV16,wgmma_fp8_swapab@BM=16,wgmma_fp8_swapab@BM=16,EVEN=1,wgmma_fp8_swapab@BM=32,wgmma_fp8_swapab@BM=32,EVEN=1,wgmma_fp8_n128,wgmma_fp8_persistent"
  [24]="$GEMV32,wgmma_fp8_swapab@BM=32,wgmma_fp8_swapab@BM=32,EVEN=1,wgmma_fp8_swapab@BM=64,wgmma_fp8_swapab@BM=64,EVEN=1,wgmma_fp8_n128,wgmma_fp8_persistent"
  [56]="$GEMV32,wgmma_fp8_swapab@BM=64,wgmma_fp8_swapab@BM=64,EVEN=1,wgmma_fp8_n128,wgmma_fp8_promote,wgmma_fp8_persistent"
)

# decode: the decode stages (34 and 58 at their batch tiles, 34 also on its even grid) at M = 1,
# 16 and 64 over the public set's weight shapes, beside cuBLASLt in both modes (the decode
# targets' shapes)
SWAP_DECODE=wgmma_fp8_swapab@BM=8,wgmma_fp8_swapab@BM=16,wgmma_fp8_swapab@BM=64
SWAP_DECODE=$SWAP_DECODE,wgmma_fp8_swapab@BM=16,EVEN=1,wgmma_fp8_swapab@BM=64,EVEN=1
# decode_sizes M...: each M times the public set's weight shapes (N x K), a comma list
decode_sizes() {
  local weights m w
  weights=$(grep -v '^#' benchmarks/shapes/public.txt | grep '^1x' | cut -d x -f 2-)
  for m in "$@"; do for w in $weights; do printf '%sx%s,' "$m" "$w"; done; done
}
step_decode() {
  local sizes
  sizes=$(decode_sizes 1 16 64)
  doc "gemm-fp8-decode${DOC_SUFFIX}.json.gz" 180 run gemm --dtype fp8 --budget-ms 10 \
    --stages "$GEMV8,$GEMV16,$GEMV32,$SWAP_DECODE" \
    --sizes "${sizes%,}"
}

# tiles: the decode stages' tiles at M = 16 and 64: stage 58's wider strips (BN = 64) and
# 64-row batch tiles (fewer F2FP widenings per MMA) beside its shipped tiles, stage 34's
# widths and shortest ranges (SK_MIN), and cuBLASLt
step_tiles() {
  local s=wgmma_fp8_swapab@BM=64 g=gemv_fp8
  doc "gemm-fp8-tiles${DOC_SUFFIX}.json.gz" 100 run gemm --dtype fp8 --budget-ms 5 \
    --sizes 64x4096x4096,64x11008x4096,64x14336x4096,64x2560x2560,16x4096x4096,16x14336x4096 \
    --stages "$s,$s,BN=64,$s,BN=256,$s,SK_MIN=2,$s,SK_MIN=8,$s,SK_MIN=16,$s,BN=256,SK_MIN=8,\
$g@BM=32,KU=2,$g@BM=16,$g@BM=16,BN=64,KU=2,$g@BM=16,BN=64,KU=1,\
$g@BM=32,BN=64,KU=1,NUM_THREADS=128,$g@BM=64,BN=32,KU=1,NUM_THREADS=128,\
$g@BM=64,BN=16,KU=2,NUM_THREADS=128"
}

# even: stage 34 on a grid of a whole number of blocks per tile (EVEN=1: every tile cut into
# equal whole ranges; at M = 64 with 16-row tiles, one block per tile and all of K) beside its
# stream-K line over every SM, at M = 16 and 64 over the public set's weight shapes, and cuBLASLt
step_even() {
  local s=wgmma_fp8_swapab sizes
  sizes=$(decode_sizes 16 64)
  doc "gemm-fp8-even${DOC_SUFFIX}.json.gz" 150 run gemm --dtype fp8 --budget-ms 5 \
    --sizes "${sizes%,}" --stages "$s@BM=16,$s@BM=16,EVEN=1,$s@BM=64,$s@BM=64,EVEN=1,\
$s@BM=64,BN=64,EVEN=1,$s@BM=32,EVEN=1,$s@BM=16,BN=64,EVEN=1,$GEMV16"
}

# widths: stage 32 at BN 160, 192 and 224 beside 256, at the shapes whose tile counts leave the
# last wave short at 256 (DeepGEMM's 4096x7168x16384: 896 tiles of 128 x 256 on 132 SMs)
step_widths() {
  doc "gemm-fp8-widths${DOC_SUFFIX}.json.gz" 120 run gemm --dtype fp8 --budget-ms 60 \
    --stages "wgmma_fp8_persistent,wgmma_fp8_tma_store,wgmma_fp8_cluster,wgmma_fp8_fill,wgmma_fp8_cluster_fill,$FP8_WIDTHS" \
    --sizes 8192x8192x8192,4096x7168x16384,6144x1536x7168,1024x6144x4096,3000x4096x4112
}

# fill: the stages that take their tile width from the shape beside the fixed widths they choose
# among, over --stages best's shapes (8192^3 and the prefill shapes of the public set)
step_fill() {
  doc "gemm-fp8-prefill-fill${DOC_SUFFIX}.json.gz" 150 run gemm --dtype fp8 --budget-ms 20 \
    --stages "wgmma_fp8_persistent,wgmma_fp8_tma_store,wgmma_fp8_fill,wgmma_fp8_cluster,$FILL" \
    --sizes "8192x8192x8192,$PREFILL"
}
FILL=wgmma_fp8_cluster_fill

step_grid() {
  local m sizes weights
  weights=$(grep -v '^#' benchmarks/shapes/grid.txt | grep '^1x' | cut -d x -f 2-)
  for m in ${GRID_MS:-1 3 12 24 56 112 200 320 1024 4096}; do
    sizes=$(for w in $weights; do printf '%sx%s,' "$m" "$w"; done)
    doc "tune-dispatch-grid-fp8-m$m${DOC_SUFFIX}.json.gz" 150 tune dispatch --dtype fp8 \
      --budget-ms 10 \
      --sizes "${sizes%,}" --stages "${FP8_CAND[$m]:-$FP8_WIDE}"
  done
}

run_steps best odd widths decode grid
