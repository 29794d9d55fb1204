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
echo "== build the peer library"
LIBCUDA=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
nvcc -std=c++17 -O3 -DNDEBUG -w --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math \
  -gencode arch=compute_90a,code=sm_90a -Xcompiler=-fPIC -shared -I.peer/fastcu \
  -o /tmp/peer/libpeer.so benchmarks/peer/fastcu_wrap.cu \
  ${LIBCUDA:+-L$(dirname "$LIBCUDA")} -l:libcuda.so.1 > "$OUT/nvcc.log" 2>&1
echo "  rc=$?"
CAND="wgmma_stagger,wgmma_stagger@STAGES=3,wgmma_stmatrix,wgmma_stmatrix@IN_FLIGHT=1,wgmma_stmatrix@LAG=0,wgmma_stmatrix@LAG=1,wgmma_stmatrix@CLUSTER_M=1,LAG=1,wgmma_stmatrix@BN=128,STAGES=5,CLUSTER_M=1,LAG=1"
for dt in bf16 fp16; do
  echo "== probe $dt"
  timeout 180 python3 benchmarks/probe_peer.py --lib /tmp/peer/libpeer.so --dtype $dt \
    --sizes 8192,4096 --stages "$CAND" --output "$OUT/probe-s8c-$dt.json" 2>&1 \
    | tee "$OUT/probe-$dt.log" | cut -c1-112
done
echo "== GPU tests (Tensor Core stages)"
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_tensor_cores.py \
  -k "test_every_tensor_core_stage_verifies_at_odd_shapes or test_tensor_core_stages_read_c_when_beta_is_not_zero" \
  > "$OUT/gputests.log" 2>&1
echo "  rc=$?"; tail -4 "$OUT/gputests.log" | cut -c1-300
