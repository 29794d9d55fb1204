#!/usr/bin/env bash
# A transformer's weight GEMMs, one decode or prefill step (`roofline run llm`: LLaMA-7B by
# default), each GEMM verified and timed interleaved with cuBLAS, summed per token: the
# documents of benchmarks/results/ named llm-* (llm-llama-7b-bf16-decode is decode.sh's) and the
# calibrations measured beside them, benchmarks/calibration/h200-2026-12-01-llm*.json.
#
#   bash benchmarks/llm.sh OUTDIR [STEP...]     (default: every step, ~12 min)
#
# Steps: ladder (the Tensor Core stages at batch 1 and 256, fp16), decode_best (--stages best
# at batch 1 and 16), best (--stages best at batch 1, 16 and 512 with `roofline calibrate`
# beside it), best_again (the same step again, its own calibration beside it).
source "$(dirname "$0")/lib.sh"
suite "$@"

step_ladder() {
  doc llm-llama-7b-fp16.json.gz 600 run llm --preset llama-7b --batch 1,256
}

step_decode_best() {  # each GEMM on the stage the shipped tune table picks for its class
  doc llm-llama-7b-bf16-best.json.gz 300 run llm --preset llama-7b --batch 1,16 --dtype bf16 \
    --stages best --budget-ms 60
  python3 benchmarks/summarize_best.py "$OUT/llm-llama-7b-bf16-best.json.gz"
}

step_best() {  # decode (batch 1, 16) and prefill (512) on both sides of the ridge
  calibration h200-2026-12-01-llm.json
  doc llm-llama-7b-bf16-best-1-16-512.json.gz 600 run llm --preset llama-7b --batch 1,16,512 \
    --dtype bf16 --stages best
}

step_best_again() {
  calibration h200-2026-12-01-llm-rerun.json
  doc llm-llama-7b-bf16-best-1-16-512-rerun.json.gz 600 run llm --preset llama-7b \
    --batch 1,16,512 --dtype bf16 --stages best
}

run_steps ladder decode_best best best_again
