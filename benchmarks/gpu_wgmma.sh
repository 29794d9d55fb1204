#!/usr/bin/env bash
# Issue 15, Hopper side, in one device call: stages 27 (wgmma_cluster: 2x1 clusters, B multicast)
# and 28 (wgmma_stagger: the two consumers LAG K slices apart) checked on small and odd shapes,
# tuned at 8192^3 bf16, then run with their tuned parameters beside stage 26 and cuBLAS
# (interleaved) at 8192^3 and 4096^3, bf16 and fp16.
# Usage: bash benchmarks/gpu_wgmma.sh OUTDIR
# Expected run time: about 110 s; never more than 180 s (each step has its own time limit and all
# of them share a 178 s deadline, so a hung kernel costs its step only).
# Prints: the correctness tables, the two tune tables and the four comparison tables (markdown),
# each step's exit status. Writes each step's JSON document and log under OUTDIR.
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_wgmma.sh OUTDIR}
mkdir -p "$OUT"
# a cache of its own: compiled kernels, and tune winners that only this call's tunes decide
export ROOFLINE_CACHE_DIR=$(mktemp -d /tmp/gpu-wgmma-cache.XXXXXX)
R="python3 -m rooflinecli"
NEW=wgmma_stagger,wgmma_cluster
DEADLINE=178
step() {  # step NAME SECONDS COMMAND...: one step, its time limit, its log, its exit status
  local name=$1 limit=$2
  shift 2
  local left=$((DEADLINE - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit < 5)); then echo "-- $name: skipped (deadline)"; return; fi
  echo "== $name (${SECONDS}s, limit ${limit}s)"
  timeout -k 3 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  grep -v '^\s*$' "$OUT/$name.log" | grep -E "${SHOW:-.}" | tail -40
  echo "-- $name: exit $rc"
}

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv,noheader 2>&1 | head -2
echo "commit ${ROOFLINE_COMMIT:-unknown}"
# correctness first. check_tc.py: C poisoned with NaN, beta 0 and alpha 0.5 / beta 0.75, at
# 256^3, 4096^3, 8192^3, 1000x1016x1032, 600x1016x1032 (an odd count of row tiles) and
# 1001x600x1032, each stage in a subprocess of its own; stage 28 also without clusters, LAG 3
# (and short unthrottled timings at 4096^3 and 8192^3 beside cuBLAS: 20 launches, not 400 ms)
SHOW='^(FAIL|TIME|# |[0-9]+ stages)' step check-tc 60 python3 benchmarks/check_tc.py \
  --stages wgmma_cluster,wgmma_stagger --variant wgmma_stagger:CLUSTER_M=1,LAG=3 --timeout 40
# the runner's own check: M, N, K not multiples of the tile; 300 rows are 3 row tiles (a pair whose
# second block lies past M); 256^3 is one tile; 128x64x64 is one K slice, fewer than LAG
for dt in bf16 fp16; do
  step "check-$dt" 30 $R run gemm --dtype $dt --sizes 1000x1016x1032,300x520x264,256,128x64x64 \
    --stages $NEW,wgmma_persistent --budget-ms 5 --format markdown --no-chart --quiet \
    -o "$OUT/check-$dt.json"
done
# the variants at 8192^3 bf16; the winners are saved in the cache and used by --tuned below
for st in wgmma_cluster wgmma_stagger; do
  step "tune-$st-bf16-8192" 45 $R tune gemm --stage $st --dtype bf16 --m 8192 --budget-ms 150 \
    --format markdown --quiet -o "$OUT/tune-$st-bf16-8192.json"
done
for m in 8192 4096; do
  for dt in bf16 fp16; do
    step "gemm-$dt-$m" 30 $R run gemm --dtype $dt --m $m --stages $NEW,wgmma_persistent --tuned \
      --format markdown --no-chart --quiet -o "$OUT/gemm-$dt-$m.json"
  done
done
echo "== summary: stage, params that differ from the registry, TFLOP/s, % of cuBLAS, SM clock"
python3 benchmarks/summarize_runs.py "$OUT"
echo "== done (${SECONDS}s)"
rm -rf "$ROOFLINE_CACHE_DIR"
