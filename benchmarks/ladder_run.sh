#!/usr/bin/env bash
# The ladder runs whose documents the README quotes, in one device call. New stages get a
# small sanity run first; one that fails is left out of the big runs (a crash would lose them).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
R="python3 -m rooflinecli"
F32="" TC=""
$R run gemm --sizes 512,1000,127x333x65 --stages multistage --budget-ms 5 --quiet --format csv \
  > /dev/null 2>&1 || F32="naive_xcol,naive_xrow,thread_tile_4x4,thread_tile_8x8,smem_tile,blocktile_1d,blocktile_2d,vectorized,warptile,double_buffer"
for dt in fp16 bf16; do
  $R run gemm --sizes 512,1000,1016x1032x520 --dtype $dt --stages wgmma_persistent --budget-ms 5 \
    --quiet --format csv > /dev/null 2>&1 || TC="mma_sync,mma_ldmatrix,mma_multistage,wgmma_tma,wgmma_ws"
done
echo "sanity: fp32 stages '${F32:-all}', tensor core stages '${TC:-all}'"
S32=${F32:+--stages $F32}
STC=${TC:+--stages $TC}
$R run gemm --m 4096 $S32 --budget-ms 200 --output "$OUT/gemm-fp32-4096.json" --format markdown --quiet
$R run gemm --m 8192 --stages ${F32:-blocktile_2d,vectorized,warptile,double_buffer,multistage} \
  --budget-ms 200 --output "$OUT/gemm-fp32-8192.json" --format markdown --quiet
for dt in fp16 bf16; do
  $R run gemm --m 8192 --dtype $dt $STC --budget-ms 200 --output "$OUT/gemm-$dt-8192.json" \
    --format markdown --quiet
  $R run gemm --sizes 4096,1000 --dtype $dt $STC --budget-ms 100 --output "$OUT/gemm-$dt-4096.json" \
    --format markdown --quiet
done
$R run gemm --sizes 1000,4097,127x333x65,1x4096x4096 --stages ${F32:-multistage,double_buffer} \
  --budget-ms 20 --output "$OUT/gemm-fp32-odd-ladder.json" --format markdown --quiet
