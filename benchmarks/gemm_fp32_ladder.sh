#!/usr/bin/env bash
# The FP32 (SIMT) GEMM ladder, stages 01-13, against cuBLAS SGEMM: the documents of
# benchmarks/results/ named gemm-fp32-*, tune-double_buffer-4096, tune-spread_copies-4096,
# spread-copies-variants-fp32 and serpentine-variants-fp32. Every run verifies each stage against
# a float64 product and times it interleaved with cuBLAS (400 ms per stage unless --budget-ms
# says otherwise, L2 flushed before each launch).
#
#   bash benchmarks/gemm_fp32_ladder.sh OUTDIR [STEP...]     (default: every step, ~25 min)
#
# Steps: ladder (the whole ladder at 4096^3 and 8192^3), first (the documents of the first
# stages), odd (shapes no tile divides), tune, extra (your own kernel beside the ladder),
# spread (stage 11 tuned), serpentine (stage 12's settings and stage 13's stream-K tail).
source "$(dirname "$0")/lib.sh"
suite "$@"

SEED=naive_xcol,naive_xrow,thread_tile_4x4,thread_tile_8x8
ODD=1000,4097,127x333x65,1x4096x4096
# stage 11 with its best tile (the variant screen's winner) beside stage 12's variants
S11=spread_copies@BM=256,BN=128,STAGES=4,COPY_STEP=2

step_ladder() {  # every FP32 stage of the registry: the README's ladder table
  doc gemm-fp32-4096-ladder.json.gz 300 run gemm --m 4096
  doc gemm-fp32-8192-all.json.gz 600 run gemm --m 8192
  # the same command, the documents the tests and the plots read
  doc gemm-fp32-4096.json.gz 300 run gemm --m 4096
  doc gemm-fp32-4096-interleaved.json.gz 300 run gemm --m 4096
}

step_first() {  # the first four stages, and the tiled ones at 8192^3
  doc gemm-fp32-4096-seed.json.gz 200 run gemm --m 4096 --stages "$SEED"
  doc gemm-fp32-8192.json.gz 300 run gemm --m 8192 \
    --stages blocktile_2d,vectorized,warptile,double_buffer,multistage --budget-ms 200
}

step_odd() {  # edge tiles, partial K tiles, N % 4 != 0, one row
  doc gemm-fp32-odd-seed.json.gz 120 run gemm --sizes 1000,127x333x65 --stages "$SEED" --budget-ms 50
  doc gemm-fp32-odd.json.gz 300 run gemm --sizes "$ODD" --budget-ms 30
  doc gemm-fp32-odd-ladder.json.gz 120 run gemm --sizes "$ODD" --stages multistage,double_buffer \
    --budget-ms 20
}

step_tune() {
  doc tune-double_buffer-4096.json.gz 300 tune gemm --stage double_buffer
}

step_extra() {  # examples/my_gemm.toml: a kernel of your own, verified and timed like a stage
  doc gemm-extra-stage-4096.json.gz 120 run gemm --m 4096 --stages double_buffer \
    --extra-stage examples/my_gemm.toml
}

step_spread() {  # stage 11: its tune space at 4096^3, then tuned beside stage 10
  precompile spread_copies:all multistage
  doc tune-spread_copies-4096.json.gz 200 tune gemm --stage spread_copies --m 4096 --budget-ms 150
  doc gemm-fp32-4096-spread.json.gz 120 run gemm --m 4096 --stages spread_copies,multistage --tuned
  doc gemm-fp32-8192-spread.json.gz 200 run gemm --m 8192 --stages spread_copies,multistage --tuned
  # stage 11's tile turned round (256x128) beside its tuned 128x256, at 4096^3 and 8192^3
  step precompile-simt 120 python3 benchmarks/decode_variants.py --set simt --precompile "$ARCH"
  step spread-copies-variants-fp32 300 python3 benchmarks/decode_variants.py --set simt \
    --dtype fp32 --budget-ms 400 --output "$OUT/spread-copies-variants-fp32.json.gz"
}

step_serpentine() {  # stage 12 (serpentine FFMA order) and stage 13 (its stream-K tail)
  # the screen: each variant undoes one change of stage 12
  step precompile-simt12 120 python3 benchmarks/decode_variants.py --set simt12 \
    --precompile "$ARCH"
  step serpentine-variants-fp32 300 python3 benchmarks/decode_variants.py --set simt12 \
    --dtype fp32 --budget-ms 400 --output "$OUT/serpentine-variants-fp32.json.gz"
  # lanes left row-major (PAIR_LANES=0) with the screen's next-best settings
  local v=serpentine_ffma@PAIR_LANES=0,serpentine_ffma@PAIR_LANES=0,BK=32,STAGES=3
  v=$v,serpentine_ffma@PAIR_LANES=0,STAGES=3,serpentine_ffma@PAIR_LANES=0,GROUP_M=16
  v=$v,serpentine_ffma@PAIR_LANES=0,BM=256,NUM_THREADS=256,MIN_BLOCKS=1,serpentine_ffma
  doc gemm-fp32-4096-serpentine-unpaired.json.gz 120 run gemm --m 4096 --stages "$S11,$v"
  # the registry's stage 12 against settings it has not tried
  local s=serpentine_ffma,serpentine_ffma@STAGES=2,serpentine_ffma@COPY_STEP=4
  s=$s,serpentine_ffma@GROUP_M=4,serpentine_ffma@GROUP_M=16,serpentine_ffma@BK=8,STAGES=4
  s=$s,serpentine_ffma@BM=256,NUM_THREADS=256,MIN_BLOCKS=1
  doc gemm-fp32-4096-serpentine-settings.json.gz 120 run gemm --m 4096 --stages "$S11,$s"
  doc gemm-fp32-8192-serpentine-settings.json.gz 200 run gemm --m 8192 --stages "$S11,$s"
  # stage 13 against stage 12, its whole-tile control (STREAMK=0) and one more wave cut
  local k=serpentine_ffma,simt_streamk,simt_streamk@STREAMK=0,simt_streamk@SK_WAVES=2
  doc gemm-fp32-8192-simt-streamk.json.gz 200 run gemm --m 8192 --stages "$k"
}

run_steps ladder first odd tune extra spread serpentine
