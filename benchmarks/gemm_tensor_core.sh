#!/usr/bin/env bash
# The Tensor Core GEMM ladder, stages 20-30 (mma.sync, then TMA and WGMMA), against cuBLAS
# (cublasGemmEx) in fp16 and bf16: the documents of benchmarks/results/ named gemm-fp16-*,
# gemm-bf16-* (but the --stages best ones, dispatch_table.sh) and tune-mma_*, tune-wgmma_*.
# Every run verifies each stage against a float64 product and times it interleaved with cuBLAS
# (400 ms per stage, L2 flushed before each launch).
#
#   bash benchmarks/gemm_tensor_core.sh OUTDIR [STEP...]     (default: every step, ~20 min)
#
# Steps: ladder (every stage at 8192^3, 4096^3 and 1000^3), mma (stage 23 alone beside cuBLAS),
# tune (stages 22, 23 and 26's tune spaces), wgmma_cluster (stages 27 and 28, tuned),
# wgmma_streamk (stage 29, tuned), wgmma_stmatrix (stage 30 beside 28 and 29).
source "$(dirname "$0")/lib.sh"
suite "$@"

step_ladder() {
  doc gemm-fp16-8192.json.gz 300 run gemm --m 8192 --dtype fp16
  doc gemm-bf16-8192.json.gz 300 run gemm --m 8192 --dtype bf16
  doc gemm-fp16-4096.json.gz 300 run gemm --sizes 4096,1000 --dtype fp16
  doc gemm-bf16-4096.json.gz 300 run gemm --sizes 4096,1000 --dtype bf16
  doc gemm-fp16-4096-rerun.json.gz 200 run gemm --m 4096 --dtype fp16
  # the same commands, the documents the README's table and the plots read
  doc gemm-fp16-8192-interleaved.json.gz 300 run gemm --m 8192 --dtype fp16
  doc gemm-bf16-8192-interleaved.json.gz 300 run gemm --m 8192 --dtype bf16
}

step_mma() {  # stage 23 (mma.sync, TMA, warp-specialized) and cuBLAS only: one-run ratios
  local dt
  for dt in fp16 bf16; do
    doc "gemm-$dt-8192-mma.json.gz" 120 run gemm --m 8192 --dtype $dt --stages mma_tma_ws,cublas_hgemm
  done
}

step_tune() {  # tune spaces; the winners are saved for --tuned
  doc tune-mma_multistage-8192.json.gz 300 tune gemm --stage mma_multistage --m 8192
  doc tune-mma_tma_ws-8192.json.gz 300 tune gemm --stage mma_tma_ws --m 8192
  doc tune-wgmma_persistent-4096.json.gz 120 tune gemm --stage wgmma_persistent --m 4096
}

# with_own_cache: tune winners that only this step's tunes decide (and its own kernel cache)
with_own_cache() { export ROOFLINE_CACHE_DIR="$OUT/cache-$1"; }
own_cache_done() { unset ROOFLINE_CACHE_DIR; }

step_wgmma_cluster() {  # stage 27 (2x1 clusters, B multicast), 28 (consumers LAG slices apart)
  with_own_cache wgmma-27-28
  local st m dt
  for st in wgmma_cluster wgmma_stagger; do
    doc "tune-$st-bf16-8192.json.gz" 120 tune gemm --stage $st --dtype bf16 --m 8192 --budget-ms 150
  done
  for m in 8192 4096; do
    for dt in bf16 fp16; do
      doc "gemm-$dt-$m-wgmma-27-28.json.gz" 120 run gemm --dtype $dt --m $m \
        --stages wgmma_stagger,wgmma_cluster,wgmma_persistent --tuned
    done
  done
  own_cache_done
}

step_wgmma_streamk() {  # stage 29: stage 28 on every SM, the last wave's tiles cut along K
  with_own_cache wgmma-29
  local m dt
  for m in 8192 4096; do  # winners are kept per stage, not per shape: tune each size first
    doc "tune-wgmma_streamk-bf16-$m.json.gz" 120 tune gemm --stage wgmma_streamk --dtype bf16 \
      --m $m --budget-ms 150
    for dt in bf16 fp16; do
      doc "gemm-$dt-$m-wgmma-29.json.gz" 120 run gemm --dtype $dt --m $m \
        --stages wgmma_streamk,wgmma_stagger --tuned
    done
  done
  own_cache_done
}

step_wgmma_stmatrix() {  # stage 30 (a whole-tile stmatrix epilogue), with and without clusters
  local m dt
  for dt in bf16 fp16; do
    for m in 8192 4096; do
      doc "gemm-$dt-$m-wgmma-30.json.gz" 120 run gemm --dtype $dt --m $m \
        --stages wgmma_stagger,wgmma_streamk,wgmma_stmatrix,wgmma_stmatrix@CLUSTER_M=1,LAG=0
    done
  done
}

run_steps ladder mma tune wgmma_cluster wgmma_streamk wgmma_stmatrix
