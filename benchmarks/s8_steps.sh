# Steps the session-8 device scripts share (sourced by benchmarks/gpu_s8*.sh, from the repository
# root, with OUT set): the peer probe over both dtypes, the Tensor Core GPU tests, and ncu on
# stage 36.

# probe_dtypes TAG CANDIDATES: benchmarks/probe_peer.py in bf16 (with fast.cu's kernels) and fp16
# (ours and cuBLAS only) at 8192^3 and 4096^3; probe-TAG-DTYPE.json and probe-DTYPE.log in $OUT
probe_dtypes() {
  local tag=$1 cand=$2 dt
  for dt in bf16 fp16; do
    echo "== probe $dt"
    timeout 180 python3 benchmarks/probe_peer.py --lib /tmp/peer/libpeer.so --dtype $dt \
      --sizes 8192,4096 --stages "$cand" --output "$OUT/probe-$tag-$dt.json" 2>&1 \
      | tee "$OUT/probe-$dt.log" | cut -c1-112
  done
}

# tc_gputests: every Tensor Core stage at odd shapes and with beta != 0 ($OUT/gputests.log)
tc_gputests() {
  echo "== GPU tests (Tensor Core stages)"
  timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_tensor_cores.py \
    -k "test_every_tensor_core_stage_verifies_at_odd_shapes or test_tensor_core_stages_read_c_when_beta_is_not_zero" \
    > "$OUT/gputests.log" 2>&1
  echo "  rc=$?"; tail -4 "$OUT/gputests.log" | cut -c1-300
}

# ncu_stage36 STAGES: ncu's instruction and tensor-pipe counts of one launch each of STAGES and
# fast.cu's kernel 12 at 8192^3 bf16 ($OUT/ncu-8192.txt), a summary on stdout
ncu_stage36() {
  echo "== ncu: instructions issued by stage 36 now (8192^3 bf16)"
  timeout 120 ncu --clock-control none --kernel-name regex:'gemm_wgmma|matmulKernel12' \
    --metrics smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    python3 benchmarks/probe_peer.py --lib /tmp/peer/libpeer.so --sizes 8192 --launch-only 1 \
    --kernels 12 --stages "$1" > "$OUT/ncu-8192.txt" 2>&1
  echo "  rc=$?"; grep -E "gemm_wgmma|matmulKernel|inst_executed|duration|per_second|hmma" \
    "$OUT/ncu-8192.txt" | cut -c1-120
}
