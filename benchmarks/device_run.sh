#!/usr/bin/env bash
# One call on the lent GPU machine: install offline, run the GPU tests and the benchmark runs,
# and leave logs and results documents under $OUT. Usage: bash benchmarks/device_run.sh STEP...
# Steps: setup, gputests, issue2, simt, tc, calibrate, profile, llm, probe, ncusrc, ... (the
# case list below; run in the order given).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
log() { echo "== $* ($(date +%T))"; }
R="python3 -m rooflinecli"

setup() {
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  fi
  python3 -m pip install -q --no-build-isolation --no-deps -e . > /tmp/install.log 2>&1 \
    || { tail -5 /tmp/install.log; exit 1; }
  # the device's copy of the checkout reports the session's first commit: the caller says which
  # commit it really is (ROOFLINE_COMMIT=$(git rev-parse HEAD) in the call), documents record it
  echo "commit ${ROOFLINE_COMMIT:-unknown (set ROOFLINE_COMMIT)}"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv
  python3 -c "import cupy, cuda.bindings, nvtx; from cuda.bindings import nvrtc; \
print('cupy', cupy.__version__, 'bindings', cuda.bindings.__version__, 'nvrtc', nvrtc.nvrtcVersion()[1:])"
}

for step in "$@"; do
  log "$step"
  case "$step" in
    setup) setup ;;
    gputests) python3 -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tee "$OUT/gputests.log" | tail -15 ;;
    decode) OUT=/tmp/decode bash benchmarks/decode_run.sh 2>&1 | tail -80 ;;
    decodevariants)
      python3 benchmarks/decode_variants.py --dtype bf16 --output "$OUT/decode-variants-bf16.json" 2>&1 | tail -25 ;;
    ncufp16)  # which fp16 SIMT counters fire in float32 elementwise kernels (profile app counted some)
      ncu --clock-control none --target-processes all --kernel-name regex:axpb --launch-count 1 \
        --metrics smsp__sass_thread_inst_executed_op_hadd_pred_on.sum,smsp__sass_thread_inst_executed_op_hmul_pred_on.sum,smsp__sass_thread_inst_executed_op_hfma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__sass_thread_inst_executed_op_hadd_pred_on.sum,sm__sass_thread_inst_executed_op_hfma_pred_on.sum,sm__sass_thread_inst_executed_op_hmul_pred_on.sum,smsp__sass_inst_executed_op_fp16.sum \
        python3 examples/cupy_app.py --n 0 --gib 0.25 2>&1 | tail -25
      cuobjdump -sass /dev/null >/dev/null 2>&1 || true ;;
    gpu_*)  # a worker's device script: benchmarks/gpu_NAME.sh OUTDIR, its log beside its files
      mkdir -p "$OUT/${step#gpu_}"
      timeout 500 bash "benchmarks/$step.sh" "$OUT/${step#gpu_}" > "$OUT/${step#gpu_}/stdout.log" 2>&1
      echo "rc=$?"; tail -40 "$OUT/${step#gpu_}/stdout.log" | cut -c1-220 ;;
    final)  # issue 14's documents: the LLM step at decode and prefill batches on the picks of the
      # shipped tune table, the Tensor Core shape set on --stages best, the roofs calibrated beside
      $R calibrate --format json > "$OUT/calibration-h200.json" 2> "$OUT/calibrate.err"; echo "calibrate rc=$?"
      $R run llm --preset llama-7b --batch 1,16,512 --dtype bf16 --stages best --no-chart \
        --format markdown -o "$OUT/llm-llama-7b-bf16-best-1-16-512.json" > "$OUT/llm.md" 2>&1; echo "llm rc=$?"
      grep -iE "per token|best|roofs allow|cublas" "$OUT/llm.md" | tail -12
      for dt in bf16 fp16; do
        $R run gemm --dtype $dt --stages best --budget-ms 100 --no-chart --format markdown \
          --sizes 127x333x65,1000x1016x1032,4096x4104x1032,8x4096x4096,512x4096x4096,512x11008x4096,512x4096x11008,4096x32000x4096,8192 \
          -o "$OUT/gemm-$dt-tc-shapes-best.json" > "$OUT/tc-$dt.md" 2>&1; echo "tc $dt rc=$?"
      done ;;
    simtvariants)  # stage 11's tile turned round (256x128) beside its tuned 128x256, at 4096 and 8192
      python3 benchmarks/decode_variants.py --set simt --precompile sm_90a
      python3 benchmarks/decode_variants.py --set simt --dtype fp32 --budget-ms 400 \
        --output "$OUT/simt-variants-fp32.json" 2>&1 | tail -25 ;;
    packall)  # everything under $OUT in one archive (the call returns at most 8 files)
      (cd "$OUT" && tar czf /tmp/all.tgz . && find . -mindepth 1 -delete && mv /tmp/all.tgz . && ls -la) ;;
    pack)  # every results document of the call in one archive (the call returns at most 8 files)
      mkdir -p /tmp/decode; (cd /tmp/decode && ls *.json >/dev/null 2>&1 && cp *.json *.csv "$OUT"/ 2>/dev/null)
      (cd "$OUT" && tar czf results.tgz *.json *.csv 2>/dev/null; rm -f *.json *.csv; ls) ;;
    trust)  # the documents of the trust issue: samples kept, the reference interleaved, last launch checked
      $R run gemm --m 4096 --output "$OUT/gemm-fp32-4096.json" --format markdown --no-chart
      for dt in bf16 fp16; do
        $R run gemm --m 8192 --dtype $dt --output "$OUT/gemm-$dt-8192.json" --format markdown --no-chart
      done ;;
    issue2)
      $R run gemm --m 4096 --stages naive_xcol,naive_xrow,thread_tile_4x4,thread_tile_8x8 \
        --output "$OUT/gemm-fp32-4096-seed.json" --format markdown
      $R run gemm --sizes 1000,127x333x65 --stages naive_xcol,naive_xrow,thread_tile_4x4,thread_tile_8x8 \
        --output "$OUT/gemm-fp32-odd-seed.json" --format markdown --budget-ms 50 ;;
    simt)
      $R run gemm --m 4096 --output "$OUT/gemm-fp32-4096.json" --format markdown
      $R run gemm --m 8192 --output "$OUT/gemm-fp32-8192.json" --format markdown \
        --stages blocktile_2d,vectorized,warptile,double_buffer
      $R run gemm --sizes 1000,4097,127x333x65,1x4096x4096 --budget-ms 30 \
        --output "$OUT/gemm-fp32-odd.json" --format markdown ;;
    tune) $R tune gemm --stage double_buffer --output "$OUT/tune-double_buffer-4096.json" --format markdown ;;
    calibrate) $R calibrate --format json > "$OUT/calibration-h200.json" && tail -c 600 "$OUT/calibration-h200.json" ;;
    rowb)  # stages 23-26 reading the contract's row-major B: the layout probe, then every shape
      python3 benchmarks/check_wgmma_layout.py > /tmp/layout.txt 2>&1; echo "layout rc=$?"
      grep -vE '^(PASS|XFAIL)' /tmp/layout.txt; grep -cE '^(PASS|XFAIL)' /tmp/layout.txt
      python3 benchmarks/check_tc.py --stages mma_tma_ws,wgmma_tma,wgmma_ws,wgmma_persistent > /tmp/tc.txt 2>&1
      echo "tc rc=$?"; grep -hE '^(FAIL|SKIP|TIME|# .*regs|# .*rc=|[0-9]+ stages)' /tmp/tc.txt
      grep -hc '^PASS' /tmp/tc.txt ;;
    profile)
      $R profile gemm --m 4096 --output "$OUT/profile-fp32-4096.json" --format markdown ;;
    profiletc)  # Tensor Core FLOPs against 2MNK, no L1 intensity where TMA bypasses L1
      for dt in fp16 bf16; do
        $R profile gemm --m 4096 --dtype $dt --output "$OUT/profile-$dt-4096.json" --format markdown
      done ;;
    profileapp)  # any program on the measured roofline (calibrate first: measured roofs)
      python3 -m pytest -q tests/gpu/test_profile_app_gpu.py 2>&1 | tail -15
      $R profile app --output "$OUT/profile-app-cupy.json" --format markdown \
        -- python3 examples/cupy_app.py
      $R profile app --output "$OUT/profile-app-torch.json" --format markdown \
        -- python3 examples/torch_app.py ;;
    profileapps)  # one document per program: CuPy (matmuls fp16/fp32 at 4096 and 8192, elementwise), Triton
      $R profile app --nvtx "app@matmul/" --output "$OUT/profile-app-cupy-matmul-fp16.json" \
        --format markdown -- python3 examples/cupy_app.py --n 8192 --gib 0
      $R profile app --nvtx "app@matmul/" --output "$OUT/profile-app-cupy-matmul-fp32.json" \
        --format markdown -- python3 examples/cupy_app.py --n 8192 --gib 0 --dtype fp32
      $R profile app --nvtx "app@elementwise/" --output "$OUT/profile-app-cupy-elementwise.json" \
        --format markdown -- python3 examples/cupy_app.py --n 0 --gib 1
      $R profile app --output "$OUT/profile-app-triton.json" --format markdown \
        -- python3 examples/triton_app.py --gib 1 ;;
    checktc) python3 benchmarks/check_tc.py 2>&1 | tail -60 ;;
    tc)
      for dt in fp16 bf16; do
        $R run gemm --m 8192 --dtype $dt --output "$OUT/gemm-$dt-8192.json" --format markdown
        $R run gemm --sizes 4096,1000 --dtype $dt --output "$OUT/gemm-$dt-4096.json" --format markdown
      done ;;
    llm)
      $R run llm --preset llama-7b --batch 1,256 --output "$OUT/llm-llama-7b.json" --format markdown
      $R run gemm --m 4096 --stages naive_xcol --extra-stage examples/my_gemm.toml \
        --output "$OUT/gemm-extra-stage-4096.json" --format markdown ;;
    ladder8192)  # every FP32 stage at 8192^3, the naive ones included (issue 3)
      $R run gemm --m 8192 --output "$OUT/gemm-fp32-8192-all.json" --format markdown ;;
    ncutc)  # where the mma.sync and WGMMA stages stall: ncu's own sections, one launch each
      for st in mma_multistage wgmma_persistent; do
        ncu --clock-control none --target-processes all --nvtx --nvtx-include "roofline@$st/" \
          --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
          --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
          --section SchedulerStats --section WarpStateStats --section Occupancy \
          --section LaunchStats -o "/tmp/ncu-$st" -f \
          $R run gemm --m 4096 --dtype fp16 --stages $st --budget-ms 5 --format markdown > /dev/null 2>&1
        ncu --import "/tmp/ncu-$st.ncu-rep" --page details >> "$OUT/ncu-tc-4096.txt" 2>&1
      done
      tail -c 3000 "$OUT/ncu-tc-4096.txt" ;;
    tunetc)
      $R tune gemm --stage mma_multistage --m 8192 --output "$OUT/tune-mma_multistage-8192.json" --format markdown
      $R tune gemm --stage wgmma_persistent --m 4096 --output "$OUT/tune-wgmma_persistent-4096.json" --format markdown
      for i in 1 2; do
        $R run gemm --m 4096 --dtype fp16 --stages wgmma_persistent --format markdown --no-chart
      done ;;
    ncu23)  # stall reasons, pipes and shared-memory traffic of the mma.sync stages, per instruction
      for st in mma_tma_ws mma_multistage; do
        ncu --clock-control none --target-processes all --nvtx --nvtx-include "roofline@$st/" \
          --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
          --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats \
          --section SourceCounters --section InstructionStats \
          --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,sm__cycles_active.avg,l1tex__throughput.avg.pct_of_peak_sustained_active" \
          -o "/tmp/ncu-$st" -f \
          $R run gemm --m 4096 --dtype fp16 --stages $st --budget-ms 5 --format markdown > "/tmp/ncu-$st.log" 2>&1 \
          || tail -5 "/tmp/ncu-$st.log"
        ncu --import "/tmp/ncu-$st.ncu-rep" --page details > "$OUT/ncu-$st-details.txt" 2>&1
        ncu --import "/tmp/ncu-$st.ncu-rep" --page raw --csv > "$OUT/ncu-$st-raw.csv" 2>&1
        ncu --import "/tmp/ncu-$st.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu-$st-source.csv" 2>&1 \
          || head -3 "$OUT/ncu-$st-source.csv"
      done
      grep -i "stalled\|hmma\|bank\|wavefront" "$OUT/ncu-mma_tma_ws-details.txt" | head -40 ;;
    tunetma)
      $R tune gemm --stage mma_tma_ws --m 8192 --output "$OUT/tune-mma_tma_ws-8192.json" --format markdown ;;
    fp32final)  # the FP32 ladder document README quotes
      $R run gemm --m 4096 --output "$OUT/gemm-fp32-4096.json" --format markdown ;;
    tcfinal)  # the Tensor Core ladder documents README quotes (FP16, BF16 at 8192, 4096, 1000)
      for dt in fp16 bf16; do
        $R run gemm --m 8192 --dtype $dt --output "$OUT/gemm-$dt-8192.json" --format markdown
        $R run gemm --sizes 4096,1000 --dtype $dt --output "$OUT/gemm-$dt-4096.json" --format markdown
      done
      $R run gemm --m 4096 --dtype fp16 --output "$OUT/gemm-fp16-4096-rerun.json" --format markdown ;;
    checks)  # bitwise-equal outputs across stages; stage 23 at alpha/beta and odd shapes
      python3 benchmarks/check_identical.py
      python3 benchmarks/check_tc.py --stages mma_tma_ws --no-time 2>&1 | tail -30 ;;
    check23)  # stage 23's TMA-store epilogue and its 256x128 tiles: alpha/beta, odd shapes
      python3 benchmarks/check_tc.py --stages none --variant mma_tma_ws:TMA_C=1 \
        --variant mma_tma_ws:BM=256,BN=128,TMA_C=1 2>&1 | tail -40 ;;
    profile10)
      $R profile gemm --m 4096 --stages multistage --output "$OUT/profile-fp32-4096-multistage.json" --format markdown ;;
    probe)  # mma.sync's rate with stage 23's warp shape, fragment stream and barriers, no memory
      python3 benchmarks/probe_mma.py --output "$OUT/probe-mma-h200.json" 2>&1 | tee "$OUT/probe-mma.md"
      for cfg in 0:8:4:8:fp16 2:8:4:8:fp16; do  # the HMMA pipe's own counter on the same loops
        ncu --clock-control none -k probe --launch-skip 1 --launch-count 1 \
          --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum \
          python3 benchmarks/probe_mma.py --configs $cfg --launches 1 2>&1 | grep -E "hmma|per_second|duration|^\|" ;
      done ;;
    run23)  # stage 23 and cuBLAS at 8192^3 in the call that measured the probe (one-run ratios)
      for dt in fp16 bf16; do
        $R run gemm --m 8192 --dtype $dt --stages mma_tma_ws,cublas_hgemm \
          --output "$OUT/gemm-$dt-8192-mma.json" --format markdown --no-chart
      done ;;
    ncusrc)  # stage 23 per SASS instruction: where its warps stall (ncu's source page)
      st=mma_tma_ws
      ncu --clock-control none --target-processes all --nvtx --nvtx-include "roofline@$st/" \
        --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SourceCounters \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg \
        -o /tmp/ncusrc -f $R run gemm --m 4096 --dtype fp16 --stages $st --budget-ms 5 \
        --format markdown > /tmp/ncusrc.log 2>&1 || tail -5 /tmp/ncusrc.log
      ncu --import /tmp/ncusrc.ncu-rep --page source --csv --print-source sass > "$OUT/ncu-23-source.csv" 2>&1 \
        || head -3 "$OUT/ncu-23-source.csv"
      ncu --import /tmp/ncusrc.ncu-rep --page details > "$OUT/ncu-23-details.txt" 2>&1
      cp /tmp/ncusrc.ncu-rep "$OUT/ncu-23.ncu-rep"
      grep -i "hmma\|cycles_active\|Duration\|SM Freq" "$OUT/ncu-23-details.txt" ;;
    flushab) python3 benchmarks/flush_ab.py 2>&1 | tee "$OUT/flush-ab.md" ;;
    cluster23)  # stage 23 with B multicast to a pair of blocks: checked, then A/B against the registry
      python3 benchmarks/check_tc.py --stages none --variant mma_tma_ws:CLUSTER_M=2 --no-time 2>&1 | tail -16
      for dt in fp16 bf16; do
        python3 benchmarks/ab_stage.py mma_tma_ws CLUSTER_M=2 --sizes 8192 --dtype $dt --rounds 2 \
          --check-sizes 600x1016x1032,1000x1016x1032 2>&1 | tee -a "$OUT/ab-cluster23.md"
      done ;;
    *) log "unknown step $step" ;;
  esac
done
