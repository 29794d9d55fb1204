#!/usr/bin/env bash
# Session 8, sixth call (issue 15): stage 36 releasing each slot once per consumer warpgroup
# (WG_RELEASE=1, as CUTLASS counts its consumers and fast.cu arrives) against once per warp, with
# and without a cluster, beside stages 28 and 29, cuBLAS and fast.cu's kernels in the same rounds;
# the GPU tests of every Tensor Core stage at odd shapes; ncu's instruction and tensor-pipe counts.
# GPU wall time: about 150 s (probe ~90 s, tests ~40 s).
# Usage: bash benchmarks/gpu_s8f.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_s8f.sh OUTDIR}
mkdir -p "$OUT" /tmp/peer
source benchmarks/s8_steps.sh
bash benchmarks/peer/build.sh /tmp/peer/libpeer.so "$OUT/nvcc.log"
CAND="wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@WG_RELEASE=0,wgmma_stmatrix@CLUSTER_M=1,LAG=0,wgmma_stmatrix@CLUSTER_M=1,LAG=0,WG_RELEASE=0,wgmma_stmatrix@LAG=0"
probe_dtypes s8f "$CAND"
tc_gputests
ncu_stage36 wgmma_stmatrix,wgmma_stmatrix@WG_RELEASE=0
