#!/usr/bin/env bash
# Session 8, second call (issue 15): stage 36 (wgmma_stmatrix, stage 28 with a whole-tile
# stmatrix epilogue) verified and timed.
#   1. The GPU tests of every Tensor Core stage at odd shapes and with beta != 0 (stage 36 new).
#   2. benchmarks/probe_peer.py: stage 36 and its variants, stage 28, cuBLAS and fast.cu's
#      kernels 11/12 in the same rounds (bf16; fp16 without the peer), 8192^3 and 4096^3.
#   3. `roofline run gemm` (each stage interleaved with cuBLAS, default timing), both dtypes and
#      sizes, stages 28, 29 and 36: the documents the README's tables come from.
# GPU wall time: about 240 s (tests ~70 s, probe ~50 s, run gemm ~100 s).
# Usage: bash benchmarks/gpu_s8b.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_s8b.sh OUTDIR}
mkdir -p "$OUT" /tmp/peer
source benchmarks/s8_steps.sh
R="python3 -m rooflinecli"
tc_gputests
bash benchmarks/peer/build.sh /tmp/peer/libpeer.so "$OUT/nvcc.log"
CAND="wgmma_stagger,wgmma_stmatrix,wgmma_stmatrix@LAG=0,wgmma_stmatrix@LAG=1,wgmma_stmatrix@CLUSTER_M=1,LAG=1"
probe_dtypes s8b "$CAND"
for dt in bf16 fp16; do
  for m in 8192 4096; do
    echo "== run gemm $dt $m"
    timeout 120 $R run gemm --dtype $dt --m $m --quiet --no-chart --format markdown \
      --stages wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@LAG=1 \
      -o "$OUT/gemm-$dt-$m-s8b.json" > "$OUT/gemm-$dt-$m.md" 2> "$OUT/gemm-$dt-$m.err"
    echo "  rc=$?"; grep -E "^\| " "$OUT/gemm-$dt-$m.md" | cut -c1-120
  done
done
