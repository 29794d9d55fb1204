#!/usr/bin/env bash
# Session 8, fifth call (issue 15): stage 36 with its WGMMA descriptors advanced by constant
# offsets (69 instructions per slice in the consumer loop, 85 before), beside stages 28 and 29,
# cuBLAS and fast.cu's kernels 11/12 in the same rounds (benchmarks/probe_peer.py), without a
# cluster on 128 and on 132 SMs too; then the GPU tests of every Tensor Core stage at odd shapes.
# GPU wall time: about 150 s (probe ~90 s, tests ~40 s).
# Usage: bash benchmarks/gpu_s8e.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_s8e.sh OUTDIR}
mkdir -p "$OUT" /tmp/peer
source benchmarks/s8_steps.sh
bash benchmarks/peer/build.sh /tmp/peer/libpeer.so "$OUT/nvcc.log"
CAND="wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@LAG=0,wgmma_stmatrix@CLUSTER_M=1,LAG=1,wgmma_stmatrix@CLUSTER_M=1,LAG=0,wgmma_stmatrix@CLUSTER_M=1,LAG=1,MAX_BLOCKS=132"
probe_dtypes s8e "$CAND"
tc_gputests
ncu_stage36 wgmma_stmatrix,wgmma_stmatrix@CLUSTER_M=1,LAG=1
