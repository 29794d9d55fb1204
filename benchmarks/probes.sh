#!/usr/bin/env bash
# The probes: programs under benchmarks/probes/ that each answer one question the results
# documents cannot (a loop with no memory, ncu's counters, a peer's kernels, a timer check).
# What they measured on the H200 is in benchmarks/probes/h200-findings.json (one entry per
# step below, by its id) and benchmarks/probes/probe-mma-h200.json.
#
#   bash benchmarks/probes.sh OUTDIR STEP...     (no default: each step answers its question)
#
# Steps and the finding each makes again:
#   mma           probe-mma-h200.json and mma-sync-probe-ncu: mma.sync's rate, no memory
#   wave_tail     mma-sync-probe-ncu: stage 23 at a shape of whole waves against 8192^3
#   stalls        stage23-stalls: where stage 23's warps stall, per SASS instruction (ncu)
#   cluster23     stage23-cluster-ab: stage 23 with B multicast to block pairs
#   flush         l2-flush-kind: the L2 flushed by a write against a read
#   peer          peer-fastcu: fast.cu's kernels 11 and 12 beside ours and cuBLAS
#   peer_ncu      peer-fastcu-ncu: instructions and tensor-pipe activity of the same kernels
#   read_sizes    hbm-read-sizes: one kernel's HBM read rate by size, empty launches
#   timer         timer-vs-ncu: the gated timer's event time against ncu's kernel time
#   fp16_counters fp16-counters-in-fp32-kernel: ncu's FP16 SIMT counters on FP32 work
#   odd_cublas    cuBLAS's kernels at 127x333x65 in fp16 and bf16 (ncu), beside ours
#   checks        wgmma-stagger-cool-run; bitwise-equal outputs; the WGMMA B layout
#   fa2           fa2-tiles: stage 42's tile configurations at D = 128
#   fa3           fa3-key-tile: stage 43's schedules and key tile
#   widths        tile widths at 128-512 rows: stages 26-29 with 64- and 192-column tiles (and
#                 a cluster pair) beside the picks of the shipped table and cuBLAS, bf16
source "$(dirname "$0")/lib.sh"
suite "$@"
DOC_SUFFIX=${DOC_SUFFIX:-}  # e.g. -h100: ends the names of the widths step's documents
P=benchmarks/probes
NCU=${ROOFLINE_NCU:-ncu}

step_mma() {
  step probe-mma 300 python3 $P/probe_mma.py --output "$OUT/probe-mma-h200.json"
  local cfg  # the HMMA pipe's own counter on two of the loops
  for cfg in 0:8:4:8:fp16 2:8:4:8:fp16; do
    step "ncu-probe-mma-${cfg//:/-}" 120 "$NCU" --clock-control none -k probe --launch-skip 1 \
      --launch-count 1 --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum \
      python3 $P/probe_mma.py --configs $cfg --launches 1
  done
}

step_wave_tail() {  # 8448 = 66 row tiles of 128: 2,112 tiles, 16 whole waves on 132 SMs
  local dt
  for dt in bf16 fp16; do
    doc "wave-tail-$dt.json.gz" 200 run gemm --sizes 8448x8192x8192,8192 --dtype $dt \
      --stages mma_tma_ws,cublas_hgemm
  done
}

step_stalls() {
  step ncu-stalls-mma_tma_ws 300 "$NCU" --clock-control none --target-processes all --nvtx \
    --nvtx-include "roofline@mma_tma_ws/" --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section SourceCounters -o "$OUT/ncu-mma_tma_ws" -f \
    $R run gemm --m 4096 --dtype fp16 --stages mma_tma_ws --budget-ms 5 --quiet
  "$NCU" --import "$OUT/ncu-mma_tma_ws.ncu-rep" --page source --csv --print-source sass \
    > "$OUT/ncu-mma_tma_ws-source.csv" 2>&1
}

step_cluster23() {  # verified first at odd shapes, then A/B in alternating rounds
  local dt
  for dt in fp16 bf16; do
    step "ab-cluster23-$dt" 300 python3 $P/ab_stage.py mma_tma_ws CLUSTER_M=2 --sizes 8192 \
      --dtype $dt --rounds 2 --check-sizes 600x1016x1032,1000x1016x1032
  done
}

step_flush() { step flush-ab 300 python3 $P/flush_ab.py; }

# peer_library: fast.cu's kernels 11 and 12 built into the library probe_peer.py loads (their
# headers exported to .peer/ by benchmarks/probes/peer/export_fastcu.sh; nvcc needed)
peer_library() {
  mkdir -p /tmp/peer
  step peer-build 120 bash $P/peer/build.sh /tmp/peer/libpeer.so "$OUT/logs/nvcc.log"
}

step_peer() {
  peer_library
  local cand=wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@WG_RELEASE=0
  cand=$cand,wgmma_stmatrix@CLUSTER_M=1,LAG=0,wgmma_stmatrix@CLUSTER_M=1,LAG=0,WG_RELEASE=0
  cand=$cand,wgmma_stmatrix@LAG=0
  local dt
  for dt in bf16 fp16; do  # fp16: ours and cuBLAS only
    step "peer-fastcu-$dt" 300 python3 $P/probe_peer.py --lib /tmp/peer/libpeer.so --dtype $dt \
      --sizes 8192,4096 --stages "$cand" --output "$OUT/peer-fastcu-$dt.json"
  done
}

step_peer_ncu() {
  peer_library
  local met=smsp__inst_executed.sum,sm__cycles_active.avg,gpu__time_duration.sum
  met=$met,sm__cycles_elapsed.avg.per_second
  met=$met,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  met=$met,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
  met=$met,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_bytes.sum,dram__bytes_read.sum
  met="$met,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
  local size
  for size in 8192 4096; do
    step "ncu-peer-$size" 300 "$NCU" --clock-control none \
      --kernel-name regex:'gemm_wgmma|matmulKernel|nvjet' --metrics "$met" --csv \
      python3 $P/probe_peer.py --lib /tmp/peer/libpeer.so --sizes $size --launch-only 1 \
      --stages wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@CLUSTER_M=1,LAG=1
  done
}

step_read_sizes() {
  step read-sizes 300 python3 $P/probe_read_sizes.py --output "$OUT/read-sizes-h200.json"
}

step_timer() {  # the decode stages and cuBLAS at 1x4096x4096: event times, then ncu's
  local dt stages
  for dt in bf16 fp32; do
    stages=gemv_naive,gemv_vector,gemv_splitk,gemv_multirow
    [ $dt = bf16 ] && stages=$stages,gemv_wmma
    doc "events-$dt.json.gz" 120 run gemm --m 1 --n 4096 --k 4096 --dtype $dt --stages "$stages" \
      --budget-ms 100
    step "timer-vs-ncu-$dt" 300 python3 $P/timer_vs_ncu.py "$OUT/events-$dt.json.gz" $dt \
      "$OUT/timer-vs-ncu-$dt.json"
    cat "$OUT/logs/timer-vs-ncu-$dt.log"
  done
  step gpu-tests-timer-hold 120 python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_timer_hold_gpu.py
}

step_fp16_counters() {  # a float32-only elementwise kernel (axpb: one FFMA per element)
  local m=smsp__sass_thread_inst_executed_op
  step ncu-fp16-counters 120 "$NCU" --clock-control none --target-processes all \
    --kernel-name regex:axpb --launch-count 1 \
    --metrics ${m}_hadd_pred_on.sum,${m}_hmul_pred_on.sum,${m}_hfma_pred_on.sum,${m}_fadd_pred_on.sum,${m}_fmul_pred_on.sum,${m}_ffma_pred_on.sum,smsp__sass_inst_executed_op_fp16.sum \
    python3 examples/cupy_app.py --n 0 --gib 0.25
}

step_odd_cublas() {  # which algorithm cuBLAS takes per dtype where fp16 ran 4 us faster
  local dt
  for dt in fp16 bf16; do
    step "ncu-odd-cublas-$dt" 120 $R profile app --kernel "gemm|xmma|cutlass|[Kk]ernel|splitK" \
      --launch-count 30 --format csv -- python3 $P/probe_odd_cublas.py $dt \
      "mma_sync,mma_multistage@BM=64,BN=64,WM=32,WN=32,STAGES=3"
  done
}

step_checks() {
  # every Tensor Core stage: C poisoned, alpha/beta, odd shapes, short unthrottled timings
  step check-tc 300 python3 $P/check_tc.py --stages wgmma_cluster,wgmma_stagger \
    --variant wgmma_stagger:CLUSTER_M=1,LAG=3 --timeout 40
  grep -E '^(FAIL|TIME)' "$OUT/logs/check-tc.log"
  step check-identical 300 python3 $P/check_identical.py
  step check-wgmma-layout 120 python3 $P/check_wgmma_layout.py
}

# attention_kernel NAME LIMIT FILE ENTRY ARGS...: one check_attention.py run of a kernel file,
# its PASS/FAIL lines and timings in logs/NAME.log, its rows in OUTDIR/NAME.jsonl
attention_kernel() {
  local name=$1 limit=$2 file=$3 entry=$4
  shift 4
  step "$name" "$limit" python3 $P/check_attention.py --file "$file" --entry "$entry" \
    --label "$name" --out "$OUT/$name.jsonl" "$@"
  grep -E '^(PASS.*TFLOP|FAIL|LAUNCH-FAIL|COMPILE-FAIL)' "$OUT/logs/$name.log" | cut -c1-200
}

# fa2_config D BLOCK_M BLOCK_N WARP_M STAGES MIN_BLOCKS Q_IN_SMEM: check_attention.py's
# arguments for one configuration of stage 42 (threads, shared memory by the kernel's formula)
fa2_config() {
  local d=$1 bm=$2 bn=$3 wm=$4 st=$5 mb=$6 qs=$7
  local stage=$((2 * bn * d * 2)) q=$((bm * d * 2)) smem
  if [ "$qs" = 1 ]; then smem=$((st * stage + q)); else smem=$((st * stage + (q > stage ? q - stage : 0))); fi
  echo "--threads $((32 * bm / wm)) --block-m $bm --smem $smem --head-dim $d -D BLOCK_M=$bm" \
    "-D BLOCK_N=$bn -D WARP_M=$wm -D STAGES=$st -D MIN_BLOCKS=$mb -D Q_IN_SMEM=$qs"
}

step_fa2() {  # 8 warps of 16 rows holding Q in registers against 4 warps of 32 with Q in SMEM
  local f=kernels/42_attn_fa2_mma.cu e=attn_fa2_mma
  local lens=32x16x16x512,8x16x16x2048,2x16x16x8192,1x16x16x16384
  local odd=1x2x2x77,2x3x1x1000,1x4x2x129,1x2x2x1,1x2x1x64,1x1x1x200
  # shellcheck disable=SC2046  # the configuration's arguments, one word each
  attention_kernel fa2-check-d128-w16 120 $f $e $(fa2_config 128 128 64 16 2 1 0) \
    --dtype fp16,bf16 --causal 0,1 --check $odd
  # shellcheck disable=SC2046
  attention_kernel fa2-check-d128-w32qs 120 $f $e $(fa2_config 128 128 64 32 2 2 1) \
    --dtype fp16,bf16 --causal 0,1 --check $odd
  # shellcheck disable=SC2046
  attention_kernel fa2-time-d128-w16 120 $f $e $(fa2_config 128 128 64 16 2 1 0) --dtype bf16 \
    --causal 0,1 --torch --budget-ms 150 --time $lens
  # shellcheck disable=SC2046
  attention_kernel fa2-time-d128-w32qs 120 $f $e $(fa2_config 128 128 64 32 2 2 1) --dtype bf16 \
    --causal 0,1 --budget-ms 80 --time $lens
}

step_fa3() {  # the ping-pong schedule with 128- and 176-key tiles, checked, then timed
  local f=kernels/43_attn_wgmma.cu e=attn_wgmma base=(--threads 384 --block-m 128 --tma)
  local v2=(-D OVERLAP=1 -D PINGPONG=1) v3=(-D OVERLAP=1 -D PINGPONG=1 -D BLOCK_N=176)
  # shared memory: Q 32 KiB + 2 stages x (K + V) + 1 KiB alignment, by key tile
  local smem128=164864 smem176=214016 check=1x1x1x1,1x2x2x77,2x3x1x1000,1x4x2x300
  attention_kernel fa3-check-n128 120 $f $e "${base[@]}" "${v2[@]}" --smem $smem176 \
    --dtype fp16,bf16 --head-dim 64,128 --causal 0,1 --check $check
  attention_kernel fa3-check-n176 120 $f $e "${base[@]}" "${v3[@]}" --smem $smem176 \
    --dtype fp16,bf16 --head-dim 64,128 --causal 0,1 --check $check
  attention_kernel fa3-time-n128 120 $f $e "${base[@]}" "${v2[@]}" --smem $smem128 \
    --dtype bf16 --head-dim 128 --causal 0,1 --time 2x16x16x8192 --torch --budget-ms 200
  attention_kernel fa3-time-n176 120 $f $e "${base[@]}" "${v3[@]}" --smem $smem176 \
    --dtype bf16 --head-dim 128 --causal 0,1 --time 2x16x16x8192 --torch --budget-ms 200
}

if [ ${#STEPS[@]} = 0 ]; then
  sed -n 's/^#   \([a-z0-9_]*\) .*/\1/p' "$0" | tr '\n' ' '
  echo "<- name one or more"
  exit 2
fi
# The public set's N x K at 128, 256 and 512 rows, where 128- and 256-column tiles leave SMs
# idle: the picks the shipped table makes there, split-K and cluster-pair alternatives, and the
# persistent stages at widths 64 and 192, one run per M so that each stage meets the same cuBLAS
WIDTH_STAGES="wgmma_swapab@BM=128,wgmma_persistent@BN=128,wgmma_persistent,wgmma_tma@BM=64,\
SPLIT_K=3,wgmma_tma,wgmma_tma@SPLIT_K=2,wgmma_streamk@BN=128,wgmma_cluster@BN=128,\
wgmma_persistent@BN=192,wgmma_cluster@BN=192,wgmma_stagger@BN=192,wgmma_streamk@BN=192,\
wgmma_persistent@BN=64,wgmma_cluster@BN=64,STAGES=8,wgmma_stagger@BN=64,STAGES=8"

step_widths() {
  local m nk sizes
  # shellcheck disable=SC2046  # one argument per variant
  precompile $(python3 -c "import sys; from rooflinecli.stages import gemm
print(' '.join(s.name for s in gemm.select(sys.argv[1], 'bf16') if not s.reference))" \
    "$WIDTH_STAGES")
  for m in ${WIDTH_MS:-256 128 512}; do  # WIDTH_MS: some of them
    sizes=""
    for nk in 4096x4096 12288x4096 11008x4096 4096x11008 6144x4096 14336x4096 4096x14336 \
      32000x4096; do
      sizes="$sizes,${m}x$nk"
    done
    doc "widths-bf16-m$m${DOC_SUFFIX}.json.gz" 150 run gemm --dtype bf16 --sizes "${sizes#,}" \
      --stages "$WIDTH_STAGES" --budget-ms 40 --no-chart
  done
}

run_steps
