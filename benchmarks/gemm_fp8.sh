#!/usr/bin/env bash
# FP8 (e4m3) GEMM, stage 32 and its variants, against cuBLASLt's FP8 GEMM (torch._scaled_mm, in
# both accumulation modes): the documents of benchmarks/results/ named gemm-fp8-*. Every run
# checks each stage against the float64 product of the dequantised inputs (output poisoned
# first), times it interleaved with both cuBLASLt modes and compares it with the mode whose
# accumulation matches its own (promoted: default; not promoted: use_fast_accum), at beta = 0.
#
#   bash benchmarks/gemm_fp8.sh OUTDIR [STEP...]     (default: every step, ~2 min)
#
# Steps: best (`--stages best` at 8192^3 and the prefill shapes, M >= 1024, of
# benchmarks/shapes/public.txt: the picks of the tune table, fixed before the run), odd (every
# FP8 stage at shapes that are no tile multiple, verified: K and N multiples of 16, M any).
source "$(dirname "$0")/lib.sh"
suite "$@"

PREFILL=$(awk -F x '/^[0-9]/ && $1 >= 1024' benchmarks/shapes/public.txt | paste -sd, -)
FP8=wgmma_fp8,wgmma_fp8_n128,wgmma_fp8_promote,wgmma_fp8_pingpong,wgmma_fp8_persistent

step_best() {
  doc gemm-fp8-prefill-best.json 100 run gemm --dtype fp8 --stages best \
    --sizes "8192x8192x8192,$PREFILL" --budget-ms 60
}

step_odd() {
  doc gemm-fp8-odd.json 40 run gemm --dtype fp8 --stages "$FP8" \
    --sizes 1x48x16,77x16x4096,129x272x160,1000x1040x1024,511x4112x2064 --budget-ms 10
}

run_steps best odd
