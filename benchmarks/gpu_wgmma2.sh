#!/usr/bin/env bash
# Issue 15, Hopper side, round 2, in one device call: stage 29 (wgmma_streamk: stage 28 on every
# SM, the tiles past the last full wave cut along K over all of them, partials summed through a
# global workspace) checked on small and odd shapes and under few blocks (every tile cut, up to
# 7 workers per tile), then tuned and run beside stage 28 and cuBLAS (interleaved, default timing:
# 400 ms, L2 flushed) at 8192^3 and 4096^3, bf16 and fp16. Tune winners are kept per stage, not
# per shape, so each size is tuned (bf16) right before its two --tuned runs.
# Usage: bash benchmarks/gpu_wgmma2.sh OUTDIR
# Expected run time: about 90 s; never more than 195 s (each step has its own time limit and all
# of them share a 192 s deadline, so a hung kernel (a flag never set) costs its step only).
# Prints: FAIL lines and short timings of check_tc.py, the runner's checks, the tune and
# comparison tables (markdown), each step's exit status, then one line per record (stage, params
# that differ from the registry, TFLOP/s, % of cuBLAS, SM clock). Writes every JSON document and
# log under OUTDIR.
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_wgmma2.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
# a cache of its own: compiled kernels, and tune winners that only this call's tunes decide
export ROOFLINE_CACHE_DIR=$(mktemp -d /tmp/gpu-wgmma2-cache.XXXXXX)
R="python3 -m rooflinecli"
NEW=wgmma_streamk
DEADLINE=192
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
echo "commit ${ROOFLINE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
# correctness first. check_tc.py: C poisoned with NaN, beta 0 and alpha 0.5 / beta 0.75, at
# 256^3, 4096^3, 8192^3, 1000x1016x1032, 600x1016x1032 and 1001x600x1032, each in a subprocess
# of its own; the registry's stage, SK_MIN=1 (more workers: ranges of 1-4 slices at the odd
# shapes) and MAX_BLOCKS=7 (7 blocks: at 4096^3 one tile cut over all 7, its owner adds 6
# partials; the flags cleared by one tile are set again by the next launch's)
SHOW='^(FAIL|TIME|# |[0-9]+ stages)' step check-tc 75 python3 benchmarks/check_tc.py \
  --stages $NEW --variant $NEW:SK_MIN=1 --variant $NEW:MAX_BLOCKS=7 --timeout 60
# the runner's own check (first launch, then the last of the timed ones: the flags must have been
# left cleared by every launch in between): tiles and K slices that divide nothing, one tile,
# one K slice, and 128 tiles of one K slice each (fewer tiles than SMs)
for dt in bf16 fp16; do
  step "check-$dt" 30 $R run gemm --dtype $dt \
    --sizes 1000x1016x1032,600x1016x1032,300x520x264,256,128x64x64,2048x2048x64 \
    --stages $NEW,wgmma_stagger --budget-ms 5 --format markdown --no-chart --quiet \
    -o "$OUT/check-$dt.json"
done
for m in 8192 4096; do
  # 8 variants (STREAMK 1/0: the tail cut or not, LAG 1/2, GROUP_M 16/8); the winner is saved
  step "tune-$NEW-bf16-$m" 40 $R tune gemm --stage $NEW --dtype bf16 --m $m --budget-ms 150 \
    --format markdown --quiet -o "$OUT/tune-$NEW-bf16-$m.json"
  for dt in bf16 fp16; do
    step "gemm-$dt-$m" 25 $R run gemm --dtype $dt --m $m --stages $NEW,wgmma_stagger --tuned \
      --format markdown --no-chart --quiet -o "$OUT/gemm-$dt-$m.json"
  done
done
echo "== summary: stage, params that differ from the registry, TFLOP/s, % of cuBLAS, SM clock"
python3 benchmarks/summarize_runs.py "$OUT"
echo "== done (${SECONDS}s)"
rm -rf "$ROOFLINE_CACHE_DIR"
