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
echo "== build the peer library"
LIBCUDA=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
nvcc -std=c++17 -O3 -DNDEBUG -w --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math \
  -gencode arch=compute_90a,code=sm_90a -Xcompiler=-fPIC -shared -I.peer/fastcu \
  -o /tmp/peer/libpeer.so benchmarks/peer/fastcu_wrap.cu \
  ${LIBCUDA:+-L$(dirname "$LIBCUDA")} -l:libcuda.so.1 > "$OUT/nvcc.log" 2>&1
echo "  rc=$?"
CAND="wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@WG_RELEASE=0,wgmma_stmatrix@CLUSTER_M=1,LAG=0,wgmma_stmatrix@CLUSTER_M=1,LAG=0,WG_RELEASE=0,wgmma_stmatrix@LAG=0"
for dt in bf16 fp16; do
  echo "== probe $dt"
  timeout 180 python3 benchmarks/probe_peer.py --lib /tmp/peer/libpeer.so --dtype $dt \
    --sizes 8192,4096 --stages "$CAND" --output "$OUT/probe-s8f-$dt.json" 2>&1 \
    | tee "$OUT/probe-$dt.log" | cut -c1-112
done
echo "== GPU tests (Tensor Core stages)"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_tensor_cores.py \
  -k "test_every_tensor_core_stage_verifies_at_odd_shapes or test_tensor_core_stages_read_c_when_beta_is_not_zero" \
  > "$OUT/gputests.log" 2>&1
echo "  rc=$?"; tail -4 "$OUT/gputests.log" | cut -c1-300
echo "== ncu: instructions issued by stage 36 now (8192^3 bf16)"
timeout 120 ncu --clock-control none --kernel-name regex:'gemm_wgmma|matmulKernel12' \
  --metrics smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
  python3 benchmarks/probe_peer.py --lib /tmp/peer/libpeer.so --sizes 8192 --launch-only 1 --kernels 12 \
  --stages wgmma_stmatrix,wgmma_stmatrix@WG_RELEASE=0 > "$OUT/ncu-8192.txt" 2>&1
echo "  rc=$?"; grep -E "gemm_wgmma|matmulKernel|inst_executed|duration|per_second|hmma" "$OUT/ncu-8192.txt" | cut -c1-120
