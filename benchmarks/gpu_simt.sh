#!/usr/bin/env bash
# Issue 15, SIMT side: stage 11 (spread_copies) against stage 10 (multistage) and cuBLAS SGEMM,
# in one device call of about 110 s on an H200 (at most 150 s): 37 NVRTC builds on 8 processes
# (~15 s), the tune (~30 s), two documents at 4096^3 and one at 8192^3 (~45 s), start-ups.
# Every run verifies against a float64 product; a failed check shows as failed. Each command has
# a timeout, so one that hangs cannot take the rest down.
#   1. sanity: spread_copies at odd shapes (edge tiles, partial K tiles, N % 4 != 0), 4097^3
#      (33 row tiles: a last group of one row) and 8192x4096x1000, beta != 0 at 1000^3;
#   2. `roofline tune` at 4096^3 over its tune_space (BK 8/16/32 x STAGES 3/4 x COPY_STEP
#      2/4/12: 18 variants, none spills), 150 ms each; the winner is saved for `--tuned`;
#   3. the documents: spread_copies (tuned) and multistage beside cuBLAS at 4096^3 and 8192^3,
#      default timing (400 ms budget, L2 flushed), and the registry's spread_copies at 4096^3.
# Usage: bash benchmarks/gpu_simt.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_simt.sh OUTDIR}
mkdir -p "$OUT"
R="python3 -m rooflinecli"
S=spread_copies
start=$SECONDS
step() { echo "== $* ($((SECONDS - start)) s)"; }

step "precompile $S's variants in parallel (NVRTC one at a time would take a minute)"
python3 - "$S" <<'PY'
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context

from rooflinecli import api
from rooflinecli.stages import compiler, gemm as stages
from rooflinecli.gpu import tune

ARCH = api.target_arch(None)[0]
base = stages.BY_NAME[sys.argv[1]].for_arch(ARCH)
# tune compiles each variant under the registry's name (dropping spills), then runs it under
# its label (stage@K=V), and the cache file is named after the stage: warm both
TODO = [stages.BY_NAME["multistage"].for_arch(ARCH)]
for v in base.variants():
    TODO += [v, replace(v, name=tune.label(base, v))]


def build(i):  # by index: a Stage holds a lambda (rebuild), which does not pickle
    try:
        compiler.compile_stage(TODO[i], ARCH)
        return "ok"
    except Exception as exc:  # a variant its static_asserts reject: tune drops it as well
        return str(exc)[:80]


with ProcessPoolExecutor(8, mp_context=get_context("fork")) as pool:  # workers inherit TODO
    done = list(pool.map(build, range(len(TODO))))
print(f"  {len(done)} builds for {ARCH}, {done.count('ok')} compiled")
PY

step "sanity: $S at odd shapes"
timeout 60 $R run gemm --sizes 127x333x65,1000,4097,1x4096x4096,8192x4096x1000 --stages $S --budget-ms 2 \
  --no-flush --quiet --format csv > "$OUT/sanity-odd.csv" 2>&1
echo "  rc=$? (0: all verified; 1: a check failed, named below)"
grep -iE "^error|verification failed" "$OUT/sanity-odd.csv"
timeout 30 $R run gemm --sizes 1000,127x333x65 --beta 0.5 --stages $S --budget-ms 2 --no-flush --quiet \
  --format csv > "$OUT/sanity-beta.csv" 2>&1
echo "  beta rc=$?"
grep -iE "^error|verification failed" "$OUT/sanity-beta.csv"

step "tune $S at 4096^3"
timeout 75 $R tune gemm --stage $S --m 4096 --budget-ms 150 --quiet --output "$OUT/tune-$S-4096.json" \
  > "$OUT/tune-$S-4096.txt" 2>&1
echo "  rc=$?"
grep -E "^winner|dropped|$S|cublas" "$OUT/tune-$S-4096.txt" | head -20

for m in 4096 8192; do
  step "run gemm --m $m --tuned"
  timeout 60 $R run gemm --m $m --stages $S,multistage --tuned --quiet --format markdown \
    --output "$OUT/gemm-fp32-$m.json" > "$OUT/gemm-fp32-$m.md" 2>&1
  echo "  rc=$?"
  cat "$OUT/gemm-fp32-$m.md"
done

step "run gemm --m 4096 with the registry's parameters"
timeout 30 $R run gemm --m 4096 --stages $S --quiet --format markdown \
  --output "$OUT/gemm-fp32-4096-registry.json" > "$OUT/gemm-fp32-4096-registry.md" 2>&1
echo "  rc=$?"
cat "$OUT/gemm-fp32-4096-registry.md"
step "summary (pct: of cuBLAS in the same run)"
python3 benchmarks/summarize_runs.py "$OUT" gemm-fp32-4096.json gemm-fp32-8192.json gemm-fp32-4096-registry.json
step "done"
