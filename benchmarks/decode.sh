#!/usr/bin/env bash
# The decode GEMV ladder, stages 50-55 (M = batch 1..64: the weight GEMMs of one decoded token),
# against cuBLAS: the documents of benchmarks/results/ named decode-*, tune-gemv_streamk-* and
# llm-llama-7b-bf16-decode. Shapes are M x N x K with N the layer's outputs and K its inputs
# (LLaMA-7B: q/k/v fused 12288x4096, o 4096x4096, gate/up 11008x4096, down 4096x11008, lm_head
# 32000x4096). Every run verifies each stage against a float64 product and times it interleaved
# with cuBLAS, L2 flushed before each launch.
#
#   bash benchmarks/decode.sh OUTDIR [STEP...]     (default: every step, ~10 min)
#
# Steps: llama (the ladder at LLaMA-7B's shapes, batch 1 and 16), m_sweep (M = 1..64 at
# 4096x4096, for the dispatcher), variants (tile parameters at decode shapes), streamk (stage
# 54, tuned), streamk_mma (stage 55, tuned), summary (per token, against the HBM read roof).
source "$(dirname "$0")/lib.sh"
suite "$@"

T16=gemv_naive,gemv_vector,gemv_splitk,gemv_multirow,gemv_wmma
T32=gemv_naive,gemv_vector,gemv_splitk,gemv_multirow
LLAMA_B1=1x12288x4096,1x4096x4096,1x11008x4096,1x4096x11008
LLAMA_B16=16x12288x4096,16x4096x4096,16x11008x4096,16x4096x11008
M_SWEEP=1x4096x4096,2x4096x4096,4x4096x4096,8x4096x4096,16x4096x4096,32x4096x4096,64x4096x4096

step_llama() {
  step precompile-decode 120 python3 benchmarks/decode_variants.py --precompile "$ARCH"
  doc llm-llama-7b-bf16-decode.json.gz 300 run llm --dtype bf16 --batch 1,16 --stages "$T16" \
    --budget-ms 40
  doc decode-fp16-llama.json.gz 300 run gemm --dtype fp16 --sizes "$LLAMA_B1,$LLAMA_B16" \
    --stages "$T16" --budget-ms 40
  doc decode-fp32.json.gz 300 run gemm --dtype fp32 \
    --sizes 1x4096x4096,1x11008x4096,16x4096x4096,16x11008x4096 --stages "$T32" --budget-ms 60
}

step_m_sweep() {
  doc decode-bf16-m-sweep.json.gz 200 run gemm --dtype bf16 --sizes "$M_SWEEP" \
    --stages gemv_splitk,gemv_multirow,gemv_wmma --budget-ms 30
  doc decode-fp32-m-sweep.json.gz 200 run gemm --dtype fp32 --sizes "$M_SWEEP" \
    --stages gemv_splitk,gemv_multirow --budget-ms 30
}

step_variants() {  # split-K, multirow and WMMA tile variants (benchmarks/decode_variants.py)
  step decode-variants-bf16 300 python3 benchmarks/decode_variants.py --dtype bf16 \
    --output "$OUT/decode-variants-bf16.json.gz"
}

step_streamk() {  # stage 54: a persistent stream-K GEMV, every SM the same share of B
  precompile gemv_streamk:all gemv_splitk gemv_wmma
  doc tune-gemv_streamk-1x11008x4096.json.gz 200 tune gemm --stage gemv_streamk --m 1 --n 11008 \
    --k 4096 --dtype bf16 --budget-ms 25
  doc decode-gemv-streamk-bf16.json.gz 200 run gemm --dtype bf16 \
    --stages gemv_streamk,gemv_splitk,gemv_wmma --tuned \
    --sizes "$LLAMA_B1,1x32000x4096,16x11008x4096" --budget-ms 40
  # the registry's parameters, in fp32
  doc decode-gemv-streamk-fp32.json.gz 60 run gemm --dtype fp32 --stages gemv_streamk --m 1 \
    --n 4096 --k 4096 --budget-ms 40
}

step_streamk_mma() {  # stage 55: stage 54's shares of B, the math on mma.sync (batch 16)
  precompile gemv_streamk_mma:all gemv_wmma
  doc tune-gemv_streamk_mma-16x11008x4096.json.gz 200 tune gemm --stage gemv_streamk_mma --m 16 \
    --n 11008 --k 4096 --dtype bf16 --budget-ms 60
  doc decode-gemv-streamk-mma-bf16.json.gz 200 run gemm --dtype bf16 \
    --stages gemv_streamk_mma,gemv_wmma --tuned \
    --sizes 16x12288x4096,16x4096x4096,16x11008x4096,16x4096x11008,16x32000x4096 --budget-ms 40
}

step_summary() {  # per shape GB/s and % of the HBM read roof; per token at batch 1
  # the measured HBM read roof: ROOF_GBS, else the calibration committed beside the LLM runs
  local cal=benchmarks/calibration/h200-2026-12-01-llm.json roof
  roof=${ROOF_GBS:-$(python3 -c "import json, sys
print(round(json.load(open(sys.argv[1]))['measurements']['hbm_read_gbs']))" "$cal")}
  python3 benchmarks/summarize_decode.py "$roof" "$OUT"/decode-*.json.gz | tee "$OUT/logs/summary.txt"
}

run_steps llama m_sweep variants streamk streamk_mma summary
