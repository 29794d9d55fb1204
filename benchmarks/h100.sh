#!/usr/bin/env bash
# The figures of the seed's GPU, the H100 SXM, beside the H200's: every document ends in -h100
# (benchmarks/results/) and the calibration is benchmarks/calibration/h100.json. Each step takes
# under 10 minutes, so that they can be made one at a time where a GPU is free only that long.
#
#   bash benchmarks/h100.sh OUTDIR [STEP...]     (default: every step, ~12 min)
#
# Steps:
#   roofs      `roofline calibrate` (the read roof the token and decode figures stand against)
#   main       the main job, `run gemm --m 4096` (the FP32 ladder beside cuBLAS SGEMM)
#   ladder     the Tensor Core ladder at 8192^3 and 4096^3, bf16 and fp16
#   attention  the attention ladder at B2 H16 N8192 D128, bf16
#   fp8        every FP8 stage at 8192^3 beside cuBLASLt in both accumulation modes, and
#              gemm_fp8.sh's widths, odd, decode and fill steps
#   fill       shapes.sh's fill step (stage 26's widths at 128-512 rows)
#   pitch      shapes.sh's pitch step (the decode stages at pitches no 16 bytes divide)
#   borrowed   `--stages best` over the public, odd and held-out sets with the H100's own table
#              set aside: the picks of the table made on the H200 (the same architecture)
#   grid       `tune dispatch` over benchmarks/shapes/grid.txt (shapes.sh grid, gemm_fp8.sh
#              grid), then the H100's table from this run's grid documents
#              (OUTDIR/h100-sxm5.toml); to ship it, copy the documents to benchmarks/results/
#              and seed dispatch/h100-sxm5.toml from them (seed_dispatch.py --grid-only)
#   own        `--stages best` over the same sets with the H100's own table (OUTDIR's, where the
#              grid step made one, else the shipped dispatch/h100-sxm5.toml), the H200's table
#              filling the classes it lacks; FP8 too (gemm_fp8.sh best)
#   single     a chain of one 1 x 4096 x 4096 GEMM beside `run gemm --no-flush` (token.sh's),
#              and the same launch from a graph and from the stream (probes/graph_vs_eager.py)
#   variants   stage 57 with the L2 prefetch 0, 8 and 16 boxes ahead, each token's stamped
#              timeline (probes/token_variants.py --stamps)
#   token      the decode token as a dependent chain (`run llm --chain`): LLaMA-7B bf16 batch 1,
#              3, 8 and 16, fp16 batch 1, LLaMA-3-8B bf16 batch 1, against the roofs step's read
#              roof; stage 57 on CUDA cores (token) and on Tensor Cores (token+mma)
source "$(dirname "$0")/lib.sh"
suite "$@"

FP8=wgmma_fp8,wgmma_fp8_n128,wgmma_fp8_promote,wgmma_fp8_pingpong,wgmma_fp8_persistent
DEVICE="NVIDIA H100 80GB HBM3"

step_roofs() {
  calibration h100.json
}

roof() { [ -s "$OUT/h100.json" ] && echo "--calibration $OUT/h100.json"; }

step_main() {
  doc gemm-fp32-4096-ladder-h100.json.gz 120 run gemm --m 4096
}

step_ladder() {
  local dt
  for dt in bf16 fp16; do
    doc "gemm-$dt-8192-h100.json.gz" 150 run gemm --m 8192 --dtype "$dt"
    doc "gemm-$dt-4096-h100.json.gz" 120 run gemm --m 4096 --dtype "$dt"
  done
}

step_attention() {
  doc attn-b2-h16-n8192-d128-bf16-h100.json.gz 150 run attention --dtype bf16 \
    --shapes 2x16x8192x128 --budget-ms 200
}

step_fp8() {
  doc gemm-fp8-8192-h100.json.gz 120 run gemm --dtype fp8 --m 8192 --stages "$FP8" --budget-ms 150
  # gemm_fp8.sh's tile widths, odd shapes, decode stages and stages taking their width from the
  # shape, named -h100
  DOC_SUFFIX=-h100 DEADLINE_S=$(left 450) bash benchmarks/gemm_fp8.sh "$OUT" widths odd decode fill
}

step_fill() {  # shapes.sh's fill: stage 26's widths beside the stage that picks one per shape
  DOC_SUFFIX=-h100 DEADLINE_S=$(left 200) bash benchmarks/shapes.sh "$OUT" fill
}

step_pitch() {  # shapes.sh's pitch: the decode stages at pitches no 16 bytes divide
  DOC_SUFFIX=-h100 DEADLINE_S=$(left 200) bash benchmarks/shapes.sh "$OUT" pitch
}

step_borrowed() {  # shapes.sh's verdict, the H100's own table set aside
  DOC_SUFFIX=-borrowed-h100 ROOFLINE_SET_ASIDE_TABLES=h100-sxm5 DEADLINE_S=$(left 600) \
    bash benchmarks/shapes.sh "$OUT" verdict
}

step_grid() {
  # shapes.sh's grid and candidates, its documents named -h100, a user table of their own
  DOC_SUFFIX=-h100 ROOFLINE_CACHE_DIR=$OUT/cache-grid DEADLINE_S=$(left 400) \
    bash benchmarks/shapes.sh "$OUT" grid
  DOC_SUFFIX=-h100 ROOFLINE_CACHE_DIR=$OUT/cache-grid DEADLINE_S=$(left 200) \
    bash benchmarks/gemm_fp8.sh "$OUT" grid
  # the table from the grid's documents alone (16-bit and FP8): the classes they leave out
  # (M >= 1024 in 16 bits) take the H200's entries, the same architecture
  python3 benchmarks/seed_dispatch.py --grid-only "$DEVICE" h100-sxm5 "$OUT"/*-h100.json.gz \
    > "$OUT/h100-sxm5.toml" && echo "   the H100's table: $OUT/h100-sxm5.toml"
}

step_own() {  # shapes.sh's verdict with the H100's table (this run's grid's, where it made one)
  [ -s "$OUT/h100-sxm5.toml" ] && cp "$OUT/h100-sxm5.toml" dispatch/h100-sxm5.toml
  DOC_SUFFIX=-h100 DEADLINE_S=$(left 450) bash benchmarks/shapes.sh "$OUT" verdict
  DOC_SUFFIX=-h100 DEADLINE_S=$(left 120) bash benchmarks/gemm_fp8.sh "$OUT" best
}

step_token() {
  local ways=best,best+pdl,token,token+mma,cublas,torch
  doc token-llama-7b-bf16-h100.json.gz 240 run llm --chain --preset llama-7b --dtype bf16 \
    --batch 1,3,8,16 --ways "$ways" $(roof)
  doc token-llama-7b-fp16-h100.json.gz 90 run llm --chain --preset llama-7b --dtype fp16 \
    --batch 1 --ways "$ways" $(roof)
  doc token-llama-3-8b-bf16-h100.json.gz 90 run llm --chain --preset llama-3-8b --dtype bf16 \
    --batch 1 --ways "$ways" $(roof)
}

step_single() {  # a chain of one GEMM against the per-GEMM timing without a flush (within 3%)
  doc token-single-1x4096x4096-bf16-h100.json.gz 40 run llm --chain --chain-shape 1x4096x4096 \
    --dtype bf16 --ways best,cublas --repeats 200
  doc gemm-bf16-1x4096x4096-no-flush-h100.json.gz 40 run gemm --m 1 --n 4096 --k 4096 \
    --dtype bf16 --stages best --no-flush
  python3 benchmarks/chain_single.py "$OUT/token-single-1x4096x4096-bf16-h100.json.gz" \
    "$OUT/gemm-bf16-1x4096x4096-no-flush-h100.json.gz"
  # the same launch from a graph and from the stream, in the same rounds (stage 52)
  step graph-vs-eager 60 python3 benchmarks/probes/graph_vs_eager.py --shape 1x4096x4096 \
    --dtype bf16 --stage gemv_splitk --output "$OUT/graph-vs-eager-1x4096x4096-bf16-h100.json"
}

step_variants() {  # stage 57's L2 prefetch ahead of the loads, each token's stamped timeline
  step token-variants 150 python3 benchmarks/probes/token_variants.py --stamps \
    --variants PREFETCH=0 PREFETCH=8 PREFETCH=16 \
    --output "$OUT/token-variants-prefetch-h100.json"
}

run_steps roofs main ladder attention fp8 fill pitch borrowed grid own token single variants
