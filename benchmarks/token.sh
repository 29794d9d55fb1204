#!/usr/bin/env bash
# One decode token as engines run it: LLaMA-7B's 161 weight GEMMs as a dependent chain replayed
# from a CUDA graph (`roofline run llm --chain`): our picks with and without programmatic
# dependent launch, and stage 57 (the whole token in one launch: on CUDA cores at batch 1 to 4,
# on Tensor Cores at 1 to 16), beside cuBLAS and PyTorch's F.linear, each verified, one replayed
# token per way traced (kernel times and the gaps between them). `roofline calibrate` runs
# first: its HBM read roof is the one the documents put each way against.
#
#   bash benchmarks/token.sh OUTDIR [STEP...]     (default: every step, about 5 min by estimate)
#
# Steps: roof (the calibration, benchmarks/calibration/h200-token.json), bf16 (batch 1, 3, 8, 16
# and 64), fp16 (batch 1 and 16), llama3 (LLaMA-3-8B, bf16, batch 1 and 3: its own target,
# rooflinecli.core.chain.MODEL_TARGETS), single (a chain of one 1 x 4096 x 4096 GEMM beside
# `run gemm --no-flush` at that shape: the two should agree within 3%).
source "$(dirname "$0")/lib.sh"
suite "$@"

WAYS=best,best+pdl,token,token+mma,cublas,torch

roof() {  # --calibration FILE where the roof step wrote one (else the documents say why not)
  [ -s "$OUT/h200-token.json" ] && echo "--calibration $OUT/h200-token.json"
}

step_roof() {  # the read roof the documents are put against, measured first
  calibration h200-token.json
}

step_bf16() {
  doc token-llama-7b-bf16.json.gz 180 run llm --chain --preset llama-7b --dtype bf16 \
    --batch 1,3,8,16,64 --ways "$WAYS" $(roof)
}

step_fp16() {
  doc token-llama-7b-fp16.json.gz 60 run llm --chain --preset llama-7b --dtype fp16 \
    --batch 1,16 --ways "$WAYS" $(roof)
}

step_llama3() {  # a GQA model: 8 K/V heads of 32, FFN 14336, a 128256-word lm_head
  doc token-llama-3-8b-bf16.json.gz 90 run llm --chain --preset llama-3-8b --dtype bf16 \
    --batch 1,3 --ways "$WAYS" $(roof)
}

step_single() {  # a chain of one GEMM against the per-GEMM timing without a flush
  doc token-single-1x4096x4096-bf16.json.gz 40 run llm --chain --chain-shape 1x4096x4096 \
    --dtype bf16 --ways best,cublas --repeats 200
  doc gemm-bf16-1x4096x4096-no-flush.json.gz 40 run gemm --m 1 --n 4096 --k 4096 --dtype bf16 \
    --stages best --no-flush
  python3 benchmarks/chain_single.py "$OUT/token-single-1x4096x4096-bf16.json.gz" \
    "$OUT/gemm-bf16-1x4096x4096-no-flush.json.gz"
}

run_steps roof bf16 fp16 llama3 single
