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
echo "== ncu: instructions issued by stage 36 now (8192^3 bf16)"
timeout 120 ncu --clock-control none --kernel-name regex:'gemm_wgmma|matmulKernel12' \
  --metrics smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
  python3 benchmarks/probe_peer.py --lib /tmp/peer/libpeer.so --sizes 8192 --launch-only 1 --kernels 12 \
  --stages wgmma_stmatrix,wgmma_stmatrix@WG_RELEASE=0 > "$OUT/ncu-8192.txt" 2>&1
echo "  rc=$?"; grep -E "gemm_wgmma|matmulKernel|inst_executed|duration|per_second|hmma" "$OUT/ncu-8192.txt" | cut -c1-120
