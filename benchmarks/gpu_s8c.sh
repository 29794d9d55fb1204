#!/usr/bin/env bash
# Session 8, third call (issue 15): stage 36 with its slots released as soon as a consumer's
# WGMMAs are done (IN_FLIGHT=0; call 2's stage 36 kept stage 28's release on a 3-deep ring and
# ran at 91-93% of cuBLAS), against stage 28 on the same 3-deep ring, stage 28 as it ships,
# cuBLAS and fast.cu's kernels 11/12, all in the same rounds (benchmarks/probe_peer.py);
# then the GPU tests of every Tensor Core stage at odd shapes (the test now names every stage).
# GPU wall time: about 150 s (probe ~90 s, tests ~40 s).
# Usage: bash benchmarks/gpu_s8c.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_s8c.sh OUTDIR}
mkdir -p "$OUT" /tmp/peer
source benchmarks/s8_steps.sh
bash benchmarks/peer/build.sh /tmp/peer/libpeer.so "$OUT/nvcc.log"
CAND="wgmma_stagger,wgmma_stagger@STAGES=3,wgmma_stmatrix,wgmma_stmatrix@IN_FLIGHT=1,wgmma_stmatrix@LAG=0,wgmma_stmatrix@LAG=1,wgmma_stmatrix@CLUSTER_M=1,LAG=1,wgmma_stmatrix@BN=128,STAGES=5,CLUSTER_M=1,LAG=1"
probe_dtypes s8c "$CAND"
tc_gputests
