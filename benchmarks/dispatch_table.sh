#!/usr/bin/env bash
# The measurements behind `--stages best` and the shipped tune table (dispatch/h200-sxm.toml):
# the documents of benchmarks/results/ named tune-dispatch-* and gemm-*-tc-shapes-best. Each
# `roofline tune dispatch` runs its candidates over a group of shapes, keeps per shape class the
# verified stage with the best geomean against cuBLAS and saves it to the user's table; each
# `run gemm --stages best` then runs the picks over SET interleaved with cuBLAS.
#
#   bash benchmarks/dispatch_table.sh OUTDIR [STEP...]     (default: every step, ~12 min)
#
# Steps: tc (the registry's Tensor Core stages and a few tile variants, by group), tiles (tile
# variants for the classes where the picks trailed cuBLAS), best (the picks over SET), seed
# (the shipped table made again from the committed documents, no GPU: compare it with
# dispatch/h200-sxm.toml).
source "$(dirname "$0")/lib.sh"
suite "$@"

SET=127x333x65,1000x1016x1032,4096x4104x1032,8x4096x4096,512x4096x4096,512x11008x4096
SET=$SET,512x4096x11008,4096x32000x4096,8192

# tune_dispatch NAME DTYPE SIZES STAGES LIMIT: one `roofline tune dispatch` into OUTDIR/NAME
tune_dispatch() {
  doc "$1" "$5" tune dispatch --dtype "$2" --sizes "$3" --stages "$4" --budget-ms 100
}

# compile_candidates LIST...: every stage and variant of the --stages lists, in parallel
compile_candidates() {
  local items
  items=$(python3 -c "import sys; from rooflinecli.stages import gemm
print(' '.join(s.name for s in gemm.select(sys.argv[1], 'fp16') if not s.reference))" \
    "$(IFS=,; echo "$*")")
  # shellcheck disable=SC2086  # one argument per stage or variant
  precompile $items
}

step_tc() {
  # odd: N, K no multiples of 8 (the cp.async stages, 64 x 64 tiles); decode: the decode stages
  # and gemv_wmma variants without spills; tc: the WGMMA stages, BN = 128 tiles, stream-K.
  # Each group also measures the committed documents' shapes that share a class with one of
  # SET, so that this run and seed_dispatch.py pick from the same measurements.
  local mm=mma_multistage@BM=64,BN=64
  local odd=mma_sync,mma_ldmatrix,mma_multistage,$mm,WM=32,WN=32,STAGES=3
  odd=$odd,$mm,BK=64,WM=32,WN=32,STAGES=2,$mm,BK=64,WM=32,WN=32,STAGES=3
  local dec=gemv_wmma,gemv_wmma@MIN_BLOCKS=1,gemv_wmma@KW=32,gemv_wmma@KW=32,MIN_BLOCKS=1
  dec=$dec,gemv_streamk,gemv_streamk@BN=512,U=8,gemv_streamk_mma,gemv_streamk_mma@BK=32,STAGES=4
  local tc=wgmma_tma,wgmma_ws,wgmma_persistent,wgmma_persistent@BN=128
  tc=$tc,wgmma_persistent@BN=128,STAGES=6,wgmma_cluster,wgmma_stagger@CLUSTER_M=1,LAG=1
  tc=$tc,wgmma_stagger@BN=128,CLUSTER_M=1,LAG=1,wgmma_streamk,wgmma_streamk@BN=128
  tc=$tc,wgmma_streamk@BN=128,STAGES=6
  local tc_sizes=1000x1016x1032,4096x4104x1032,512x4096x4096,512x11008x4096,512x4096x11008
  tc_sizes=$tc_sizes,4096x32000x4096,8192
  local more16=256x4096x4096,256x4096x11008,256x11008x4096,256x12288x4096,256x32000x4096,4096
  compile_candidates "$odd" "$dec" "$tc"
  tune_dispatch tune-dispatch-tc-bf16-odd.json.gz bf16 127x333x65 "$odd" 60
  tune_dispatch tune-dispatch-tc-bf16-decode.json.gz bf16 8x4096x4096,2x4096x4096,4x4096x4096,16x4096x4096 \
    "$dec" 90
  tune_dispatch tune-dispatch-tc-bf16-tc.json.gz bf16 "$tc_sizes,512x12288x4096,512x32000x4096,4096" \
    "$tc" 300
  tune_dispatch tune-dispatch-tc-fp16-odd.json.gz fp16 127x333x65 "$odd" 60
  tune_dispatch tune-dispatch-tc-fp16-decode.json.gz fp16 8x4096x4096,16x4096x4096 "$dec" 90
  tune_dispatch tune-dispatch-tc-fp16-tc.json.gz fp16 "$tc_sizes,$more16" "$tc" 300
}

step_tiles() {
  # odd 127x333x65: 32-row tiles and all three K tiles of K = 65 in the prologue; small
  # 1000x1016x1032: BM = 64 (128 tiles, two blocks an SM) and SPLIT_K (grid z cuts K); big
  # 4096x4104x1032 and 512x11008x4096: 128 x 128 and 64 x 128 tiles, GROUP_M 8, 132 blocks.
  # The user's own table is moved aside first (kept in OUTDIR): only these classes and the
  # shipped table speak.
  local table
  table=$(python3 -c "from rooflinecli.stages import dispatch
print(dispatch.user_table_path('NVIDIA H200'))")
  [ -f "$table" ] && mv "$table" "$OUT/dispatch-table-before.json"
  local ms=mma_multistage@BM=64,BN=64 m32=mma_multistage@BM=32,BN=64
  local odd=mma_sync,$ms,WM=32,WN=32,STAGES=3,$ms,WM=32,WN=32,$ms,BK=64,WM=32,WN=32,STAGES=3
  odd=$odd,$m32,WM=16,WN=32,STAGES=3,$m32,WM=16,WN=32,$m32,BK=64,WM=16,WN=32,STAGES=3
  local small=wgmma_tma,wgmma_tma@BM=64,wgmma_tma@SPLIT_K=2,wgmma_tma@SPLIT_K=3
  small=$small,wgmma_tma@BM=64,SPLIT_K=2,wgmma_tma@BM=64,STAGES=3,SPLIT_K=3,wgmma_persistent@BN=128
  local big=wgmma_cluster,wgmma_cluster@GROUP_M=8,wgmma_cluster@MAX_BLOCKS=132,wgmma_stagger
  big=$big,wgmma_stagger@LAG=1,wgmma_stagger@BN=128,CLUSTER_M=1,LAG=1,wgmma_tma
  big=$big,wgmma_tma@STAGES=3,wgmma_tma@BM=64,wgmma_tma@BM=64,STAGES=3,wgmma_persistent@BN=128
  big=$big,wgmma_persistent@BN=128,GROUP_M=8,wgmma_cluster@BN=128,wgmma_streamk
  big=$big,wgmma_streamk@BN=128,STAGES=6
  compile_candidates "$odd" "$small" "$big"
  local dt
  for dt in bf16 fp16; do
    tune_dispatch "tune-dispatch-tcsmall-$dt-odd.json.gz" $dt 127x333x65 "$odd" 60
    tune_dispatch "tune-dispatch-tcsmall-$dt-small.json.gz" $dt 1000x1016x1032 "$small" 60
    tune_dispatch "tune-dispatch-tcsmall-$dt-big.json.gz" $dt 4096x4104x1032,512x11008x4096 "$big" 120
  done
  [ -f "$table" ] && cp "$table" "$OUT/dispatch-table.json"
}

step_best() {  # the picks over SET, each interleaved with cuBLAS; best/cuBLAS per shape
  local dt
  for dt in bf16 fp16; do
    doc "gemm-$dt-tc-shapes-best.json.gz" 200 run gemm --stages best --sizes "$SET" --dtype $dt \
      --budget-ms 100
    [ -s "$OUT/gemm-$dt-tc-shapes-best.json.gz" ] && python3 benchmarks/summarize_best.py \
      "$OUT/gemm-$dt-tc-shapes-best.json.gz"
  done
}

step_seed() {  # no GPU: the shipped table as benchmarks/seed_dispatch.py makes it
  python3 benchmarks/seed_dispatch.py "NVIDIA H200" h200-sxm benchmarks/results/*.json.gz \
    > "$OUT/h200-sxm.toml"
  if diff -q "$OUT/h200-sxm.toml" dispatch/h200-sxm.toml > /dev/null; then
    echo "== seed: dispatch/h200-sxm.toml is what the committed documents make"
  else
    echo "== seed: the committed documents make a different table ($OUT/h200-sxm.toml)"
  fi
}

run_steps tc tiles best seed
