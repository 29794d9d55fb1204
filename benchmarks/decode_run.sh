#!/usr/bin/env bash
# The decode ladder (chapter 14: M = batch 1..64) against cuBLAS, in one device call of about two
# minutes (most of it NVRTC compiling on a cold cache): every results document lands in $OUT.
#   1. sanity: each decode stage verifies at odd shapes in every dtype first (a stage that
#      fails here is left out of the timed runs, where a crash would lose them);
#   2. per token: LLaMA-7B's weight GEMMs at batch 1 and 16 in bf16 (`roofline run llm`: the
#      issue's figures: best stage 17,601 us/token at batch 1, cuBLAS 4,133, HBM roof 2,862);
#   3. the GEMMs one by one (q/k/v/o 4096x4096, gate/up 4096->11008, down 11008->4096, as
#      M = batch, N = out, K = in) in bf16 and fp16, and 1x4096x4096 etc. in fp32;
#   4. the shape class: M = 1..64 at 4096x4096, for the dispatcher;
#   5. variants of the split-K and WMMA stages' tile parameters (benchmarks/decode_variants.py).
# Usage: OUT=/tmp/out bash benchmarks/decode_run.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
case "$ARCH" in 90|100) ARCH="sm_${ARCH}a" ;; "") ARCH=sm_90a ;; *) ARCH="sm_$ARCH" ;; esac
# every decode stage and variant compiled at once, in parallel (NVRTC one at a time is most of
# the wall time otherwise)
time python3 benchmarks/decode_variants.py --precompile "$ARCH"
T16=gemv_naive,gemv_vector,gemv_splitk,gemv_multirow,gemv_wmma
T32=gemv_naive,gemv_vector,gemv_splitk,gemv_multirow

ok_stages() {  # dtype, stage list -> the stages that verified at odd shapes (stderr: the rest)
  local dt=$1 list=$2 good="" s
  for s in ${list//,/ }; do
    if $R run gemm --dtype "$dt" --sizes 1x4099x1031,17x4104x1032,64x40x24 --stages "$s" \
        --budget-ms 1 --no-flush --quiet --format csv > "$OUT/sanity-$dt-$s.csv" 2>&1; then
      good="${good:+$good,}$s"
    else
      echo "sanity: $s $dt FAILED, left out (see $OUT/sanity-$dt-$s.csv)" >&2
    fi
  done
  echo "$good"
}
S16=$(ok_stages bf16 $T16)
F16=$(ok_stages fp16 $T16)
S32=$(ok_stages fp32 $T32)
echo "verified: bf16 '$S16'; fp16 '$F16'; fp32 '$S32'"

LLAMA_B1=1x12288x4096,1x4096x4096,1x11008x4096,1x4096x11008
LLAMA_B16=16x12288x4096,16x4096x4096,16x11008x4096,16x4096x11008
[ -n "$S16" ] && $R run llm --dtype bf16 --batch 1,16 --stages "$S16" --budget-ms 40 --quiet \
  --format markdown --output "$OUT/llm-llama-7b-bf16-decode.json"
[ -n "$S16" ] && $R run gemm --dtype bf16 --sizes $LLAMA_B1,$LLAMA_B16 --stages "$S16" \
  --budget-ms 60 --quiet --format markdown --output "$OUT/decode-bf16-llama.json"
[ -n "$F16" ] && $R run gemm --dtype fp16 --sizes $LLAMA_B1,$LLAMA_B16 --stages "$F16" \
  --budget-ms 40 --quiet --format markdown --output "$OUT/decode-fp16-llama.json"
[ -n "$S32" ] && $R run gemm --dtype fp32 --sizes 1x4096x4096,1x11008x4096,16x4096x4096,16x11008x4096 \
  --stages "$S32" --budget-ms 60 --quiet --format markdown --output "$OUT/decode-fp32.json"

M_SWEEP=1x4096x4096,2x4096x4096,4x4096x4096,8x4096x4096,16x4096x4096,32x4096x4096,64x4096x4096
FAST16=$(echo "$S16" | tr , '\n' | grep -E 'splitk|multirow|wmma' | paste -sd, -)
FAST32=$(echo "$S32" | tr , '\n' | grep -E 'splitk|multirow' | paste -sd, -)
[ -n "$FAST16" ] && $R run gemm --dtype bf16 --sizes $M_SWEEP --stages "$FAST16" --budget-ms 30 \
  --quiet --format markdown --output "$OUT/decode-bf16-m-sweep.json"
[ -n "$FAST32" ] && $R run gemm --dtype fp32 --sizes $M_SWEEP --stages "$FAST32" --budget-ms 30 \
  --quiet --format markdown --output "$OUT/decode-fp32-m-sweep.json"

python3 benchmarks/decode_variants.py --dtype bf16 --output "$OUT/decode-variants-bf16.json"
python3 benchmarks/decode_variants.py --dtype fp32 --output "$OUT/decode-variants-fp32.json"
echo "done: $(ls "$OUT" | tr '\n' ' ')"
