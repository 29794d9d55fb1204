# Steps the session-8 device scripts share (sourced by benchmarks/gpu_s8*.sh, from the repository
# root, with OUT set): the peer probe over both dtypes and the Tensor Core GPU tests.

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
