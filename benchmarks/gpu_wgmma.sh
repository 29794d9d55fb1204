#!/usr/bin/env bash
# Issue 15, Hopper side, in one device call: stage 27 (wgmma_cluster: 2x1 clusters, B multicast)
# checked on small and odd shapes, tuned at 8192^3 bf16 (CLUSTER_M 1/2 x MAX_BLOCKS 128/132),
# then beside stage 26 and cuBLAS (interleaved) at 8192^3 and 4096^3 in bf16 and fp16.
# Usage: bash benchmarks/gpu_wgmma.sh OUTDIR    Expected run time: about 120 s (at most 180 s:
# every command has its own time limit, so a hung kernel costs its step only).
# Prints the correctness tables, the tune table and the four comparison tables (markdown);
# writes each run's JSON document and log under OUTDIR.
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_wgmma.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
NEW=wgmma_cluster
step() {  # step NAME SECONDS COMMAND...: one step, its time limit, its log, its exit status
  local name=$1 limit=$2
  shift 2
  echo "== $name ($(date +%T))"
  timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  grep -v '^\s*$' "$OUT/$name.log" | grep -v 'Traceback' | tail -30
  echo "-- $name: exit $rc"
}

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv,noheader 2>&1 | head -2
# correctness first: M, N, K not multiples of the tile; 300 rows are 3 row tiles (a pair whose
# second block lies past M); 256^3 is one tile
for dt in bf16 fp16; do
  step "check-$dt" 60 $R run gemm --dtype $dt --sizes 1000x1016x1032,300x520x264,256 \
    --stages $NEW,wgmma_persistent --budget-ms 10 --format markdown --no-chart --quiet \
    -o "$OUT/check-$dt.json"
done
step tune-bf16-8192 90 $R tune gemm --stage $NEW --dtype bf16 --m 8192 --budget-ms 200 \
  --format markdown --quiet -o "$OUT/tune-$NEW-bf16-8192.json"
for m in 8192 4096; do
  for dt in bf16 fp16; do
    step "gemm-$dt-$m" 60 $R run gemm --dtype $dt --m $m --stages $NEW,wgmma_persistent \
      --format markdown --no-chart --quiet -o "$OUT/gemm-$dt-$m.json"
  done
done
echo "== done ($(date +%T))"
