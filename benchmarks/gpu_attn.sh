#!/usr/bin/env bash
# The attention ladder on the GPU (issue 16), in one device call of at most about 420 s on the
# H200 (expected about 250 s: 15 s compiling every stage in parallel, 45 s of GPU tests, 70 s
# of runs; each step has its own time limit).
# Every log and results document lands in OUTDIR.
#   1. tests/gpu/test_attention_gpu.py: every attention stage in the registry verifies at
#      sequence lengths 1, 77 and 1000, causal and not, GQA, each dtype, head dims 64 and 128;
#      the PyTorch references verify and are paired;
#   2. `roofline run attention` at B2 H16 N8192 D128 bf16, non-causal and causal: every stage
#      (the naive one too: its S is 8 GiB) beside PyTorch's flash and cuDNN backends;
#   3. the fused stages over N = 512..16384 with B*N = 16384 tokens: 16 heads at D128, 32 at
#      D64, bf16, non-causal and causal (the issue's target shapes).
# Each step has its own time limit; one failing does not stop the rest.
# Usage: bash benchmarks/gpu_attn.sh OUTDIR
set -u
export PYTHONUNBUFFERED=1
OUT=${1:?usage: gpu_attn.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1  # the repository root: the paths below are relative to it
R="python3 -m rooflinecli"
START=$(date +%s)
say() { echo "[$(( $(date +%s) - START ))s] $*"; }

ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
case "$ARCH" in 90|100) ARCH="sm_${ARCH}a" ;; "") ARCH=sm_90a ;; *) ARCH="sm_$ARCH" ;; esac
say "compiling every attention stage, dtype and head dim for $ARCH, in parallel"
timeout 45 python3 - "$ARCH" <<'PY' > "$OUT/precompile.log" 2>&1
import sys
from concurrent.futures import ProcessPoolExecutor
from rooflinecli.stages import attention as A

def build(job):
    name, dtype, hd = job
    try:
        A.compile_stage(A.ATTENTION_BY_NAME[name], sys.argv[1], dtype, hd)
        return f"{name} {dtype} d{hd} ok"
    except Exception as exc:  # reported, never fatal: the tests name it again
        return f"{name} {dtype} d{hd} FAILED {exc}"

jobs = [(s.name, d, h) for s in A.ATTENTION_STAGES for d in s.dtypes for h in s.head_dims]
with ProcessPoolExecutor(max_workers=12) as pool:
    for line in pool.map(build, jobs):
        print(line)
PY
say "precompile rc=$?: $(grep -c ' ok$' "$OUT/precompile.log") built, $(grep -c FAILED "$OUT/precompile.log") failed"
grep FAILED "$OUT/precompile.log" | cut -c1-200

say "GPU tests (attention)"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_attention_gpu.py \
  > "$OUT/gpu-tests.log" 2>&1
say "tests rc=$? : $(tail -n 1 "$OUT/gpu-tests.log")"
grep -E "FAILED|Error" "$OUT/gpu-tests.log" | head -n 5

FUSED=$(python3 -c "from rooflinecli.stages.attention import ATTENTION_STAGES as S
print(','.join(s.name for s in S if not s.materializes_scores and 'bf16' in s.dtypes))")
say "fused stages: $FUSED"

run() {  # name, limit (s), roofline args...
  local name=$1 limit=$2
  shift 2
  timeout "$limit" $R run attention --dtype bf16 --quiet --format markdown --no-chart \
    --output "$OUT/$name.json" --force "$@" > "$OUT/$name.md" 2> "$OUT/$name.err"
  local rc=$?
  say "$name rc=$rc"
  python3 - "$OUT/$name.json" <<'PY' 2>/dev/null || tail -n 3 "$OUT/$name.err"
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["records"]:
    from rooflinecli.core.attention import label
    tf = r.get("tflops")
    extra = "".join(
        f" {k[7:]}={r[k]:.0f}%" for k in ("pct_of_torch_flash", "pct_of_torch_cudnn") if r.get(k)
    )
    print(f"  {label(r):<28} {r['stage']:<14} "
          f"{'%.1f TFLOP/s' % tf if tf else '-':>14} verified={r.get('verified')}{extra}"
          f"{'  ' + r['error'] if r.get('error') else ''}")
PY
}

run attn-b2-h16-n8192-d128-bf16 35 --shapes 2x16x8192x128 --budget-ms 200
run attn-b2-h16-n8192-d128-bf16-causal 25 --shapes 2x16x8192x128 --causal --budget-ms 200
D128=32x16x512x128,16x16x1024x128,8x16x2048x128,4x16x4096x128,2x16x8192x128,1x16x16384x128
D64=32x32x512x64,16x32x1024x64,8x32x2048x64,4x32x4096x64,2x32x8192x64,1x32x16384x64
run attn-sweep-d128-bf16 80 --shapes "$D128" --stages "$FUSED" --budget-ms 100
run attn-sweep-d128-bf16-causal 70 --shapes "$D128" --stages "$FUSED" --causal --budget-ms 100
run attn-sweep-d64-bf16 70 --shapes "$D64" --stages "$FUSED" --budget-ms 100
run attn-sweep-d64-bf16-causal 60 --shapes "$D64" --stages "$FUSED" --causal --budget-ms 100
say "done: $(ls "$OUT" | tr '\n' ' ')"
