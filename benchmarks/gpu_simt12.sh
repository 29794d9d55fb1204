#!/usr/bin/env bash
# Issue 15, SIMT target: stage 12 (serpentine_ffma) beside stage 11's best variant and cuBLAS SGEMM.
# GPU wall time: about 125 s on an H200, at most 240 s (the timeouts below add up to 239 s):
# 14 NVRTC builds on the device's cores (~20 s), odd-shape checks (~15 s), the screen of 13
# stage 12 variants and stage 11 at 4096^3 and 8192^3 with default timing (~55 s), two documents
# (~25 s), a residency check (~5 s). Every run verifies against a float64 product; a failed
# check shows as failed.
#   1. precompile every variant under the name it runs by (benchmarks/decode_variants.py
#      --set simt12 --precompile);
#   2. sanity: the registry's serpentine_ffma, its 2-warp blocks (4 per SM) and its 8-warp control
#      at odd shapes (edge tiles, partial K tiles, N % 4 != 0), beta != 0; then the blocks per
#      SM the driver lets each of them keep resident (2, 4, 1: the premise of the block shapes);
#   3. the screen: decode_variants.py --set simt12, default timing (400 ms budget, L2 flushed,
#      each stage interleaved with cuBLAS) -> simt12-variants-fp32.json; per variant % of cuBLAS
#      at each size, its blocks per SM and registers. The controls each undo one change of
#      stage 12: PAIR_LANES=0 (row-major lanes), BM=256,MIN_BLOCKS=1 (one 8-warp block per SM),
#      SERPENTINE=0, WNITER=4 (stage 11's 8 x 16 thread tile); and the last three at once
#      (BM=256,MIN_BLOCKS=1,WNITER=4,SERPENTINE=0: stage 11's best with only its lanes paired);
#   4. the documents: stage 11's best and the best 3 stage 12 variants of the screen (mean % of
#      cuBLAS over both sizes) beside cuBLAS, `roofline run gemm --m N --stages ...`, default
#      timing -> gemm-fp32-4096-simt12.json, gemm-fp32-8192-simt12.json.
# Usage: bash benchmarks/gpu_simt12.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_simt12.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
S11="spread_copies@BM=256,BN=128,STAGES=4,COPY_STEP=2"  # stage 11's best (93.6 / 94.5%), BK 16
start=$SECONDS
step() { echo "== $* ($((SECONDS - start)) s)"; }

step "precompile the simt12 variants in parallel (one NVRTC build at a time: ~2 minutes)"
timeout 50 python3 benchmarks/decode_variants.py --set simt12 --precompile sm_90a \
  > "$OUT/precompile.txt" 2>&1
echo "  rc=$?"
tail -5 "$OUT/precompile.txt"

step "sanity: serpentine_ffma at odd shapes"
SANE="serpentine_ffma,serpentine_ffma@BN=64,COPY_STEP=4,MIN_BLOCKS=4,serpentine_ffma@BM=256,MIN_BLOCKS=1"
timeout 35 $R run gemm --sizes 127x333x65,1000,4097,1x4096x4096,8192x4096x1000 --stages "$SANE" \
  --budget-ms 2 --no-flush --quiet --format csv > "$OUT/sanity-odd.csv" 2>&1
echo "  rc=$? (0: all verified; 1: a check failed, named below)"
grep -iE "^error|verification failed|False" "$OUT/sanity-odd.csv"
timeout 15 $R run gemm --sizes 1000,127x333x65 --beta 0.5 --stages serpentine_ffma --budget-ms 2 \
  --no-flush --quiet --format csv > "$OUT/sanity-beta.csv" 2>&1
echo "  beta rc=$?"
grep -iE "^error|verification failed|False" "$OUT/sanity-beta.csv"

step "resident blocks per SM, as the driver computes them"
timeout 15 python3 - <<'PY'
import cupy as cp

from rooflinecli.stages import compiler, gemm as stages

for change in ({}, {"BN": 64, "COPY_STEP": 4, "MIN_BLOCKS": 4}, {"BM": 256, "MIN_BLOCKS": 1}):
    try:
        st = stages.BY_NAME["serpentine_ffma"].with_params(change)
        built = compiler.compile_stage(st, "sm_90a")
        fn = cp.RawModule(path=built.cubin_path).get_function(st.entry)
        fn.max_dynamic_shared_size_bytes = st.smem_bytes
        try:
            n = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                fn.ptr, st.threads[0], st.smem_bytes
            )
        except AttributeError:  # CuPy without the wrapper: cuda-bindings
            from cuda.bindings import driver

            err, n = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                driver.CUfunction(fn.ptr), st.threads[0], st.smem_bytes
            )
        print(f"  serpentine_ffma {change or '(registry)'}: {n} blocks of {st.threads[0]} threads "
              f"per SM (MIN_BLOCKS {st.params['MIN_BLOCKS']}), {built.resources.registers} "
              f"registers, {st.smem_bytes} B of slots")
    except Exception as exc:  # noqa: BLE001 - a report line, the script goes on
        print(f"  serpentine_ffma {change}: {type(exc).__name__}: {exc}")
PY

step "screen: stage 12 variants and stage 11's best beside cuBLAS at 4096^3 and 8192^3"
timeout 70 python3 benchmarks/decode_variants.py --set simt12 --dtype fp32 --budget-ms 400 \
  --output "$OUT/simt12-variants-fp32.json" > "$OUT/simt12-variants-fp32.md" 2>&1
echo "  rc=$?"
grep -E "^dropped" "$OUT/simt12-variants-fp32.md"
# per variant: % of cuBLAS at each size, blocks per SM, registers; the best 3 of stage 12
BEST=$(python3 - "$OUT/simt12-variants-fp32.json" <<'PY'
import json
import sys
from collections import defaultdict

try:
    recs = json.load(open(sys.argv[1]))["records"]
except (OSError, ValueError, KeyError) as exc:
    print(f"  no screen document ({exc})", file=sys.stderr)
    recs = []
pct = defaultdict(dict)
info = {}
for r in recs:
    if r["stage"] == "cublas":
        continue
    ok = r.get("verified") is True and r.get("pct_of_reference")
    pct[r["stage"]][r["m"]] = r["pct_of_reference"] if ok else None
    info[r["stage"]] = (r.get("blocks_per_sm"), r.get("registers"))
print(f"  {'variant':58} {'4096':>7} {'8192':>7}  blocks/SM regs", file=sys.stderr)
mean = {}
for name, by_m in pct.items():
    vals = [by_m.get(4096), by_m.get(8192)]
    cells = " ".join(f"{v:6.1f}%" if v else "   fail" for v in vals)
    print(f"  {name:58} {cells}  {info[name][0]} {info[name][1]}", file=sys.stderr)
    if all(vals) and name.startswith("serpentine_ffma"):
        mean[name] = sum(vals) / 2
best = sorted(mean, key=mean.get, reverse=True)[:3]
for name in best:
    print(f"  best: {name} (mean {mean[name]:.1f}% of cuBLAS)", file=sys.stderr)
print(",".join(best))
PY
)
[ -n "$BEST" ] || BEST="serpentine_ffma"  # no screen: the registry's parameters

for m in 4096 8192; do
  step "run gemm --m $m: stage 11's best and $BEST"
  timeout 27 $R run gemm --m "$m" --stages "$S11,$BEST" --quiet --format markdown \
    --output "$OUT/gemm-fp32-$m-simt12.json" > "$OUT/gemm-fp32-$m-simt12.md" 2>&1
  echo "  rc=$?"
  cat "$OUT/gemm-fp32-$m-simt12.md"
done

step "summary (pct: of cuBLAS in the same run)"
python3 benchmarks/summarize_runs.py "$OUT" gemm-fp32-4096-simt12.json gemm-fp32-8192-simt12.json
step "done"
