#!/usr/bin/env bash
# The attention ladder, stages 40-43, against PyTorch's scaled_dot_product_attention (its flash
# and cuDNN backends, when PyTorch is installed): the documents of benchmarks/results/ named
# attn-*. Every run checks each stage against float32 attention computed by CuPy on the same
# rounded inputs and times it interleaved with the references, L2 flushed before each launch.
#
#   bash benchmarks/attention.sh OUTDIR [STEP...]     (default: every step, ~5 min)
#
# Steps: precompile (every stage, dtype and head dim in parallel), tests (the GPU tests of the
# attention stages), ladder (every stage at B2 H16 N8192 D128 bf16; the naive one's S is
# 8 GiB), sweep (the fused stages over N = 512..16384 at B*N = 16384 tokens).
source "$(dirname "$0")/lib.sh"
suite "$@"

FUSED=attn_fused,attn_fa2_mma,attn_wgmma
D128=32x16x512x128,16x16x1024x128,8x16x2048x128,4x16x4096x128,2x16x8192x128,1x16x16384x128
D64=32x32x512x64,16x32x1024x64,8x32x2048x64,4x32x4096x64,2x32x8192x64,1x32x16384x64

step_precompile() {
  step precompile-attention 120 python3 - "$ARCH" << 'PY'
import sys
from concurrent.futures import ProcessPoolExecutor

from rooflinecli.stages import attention as A


def build(job):
    name, dtype, hd = job
    try:
        A.compile_stage(A.ATTENTION_BY_NAME[name], sys.argv[1], dtype, hd)
        return f"{name} {dtype} d{hd} ok"
    except Exception as exc:  # reported, never fatal: the runs name it again
        return f"{name} {dtype} d{hd} FAILED {exc}"


jobs = [(s.name, d, h) for s in A.ATTENTION_STAGES for d in s.dtypes for h in s.head_dims]
with ProcessPoolExecutor(max_workers=12) as pool:
    for line in pool.map(build, jobs):
        print(line)
PY
}

step_tests() {  # every stage at N = 1, 77 and 1000, causal and not, grouped-query heads
  step gpu-tests-attention 300 python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_attention_gpu.py
  tail -n 1 "$OUT/logs/gpu-tests-attention.log"
}

step_ladder() {
  doc attn-b2-h16-n8192-d128-bf16.json.gz 120 run attention --dtype bf16 --shapes 2x16x8192x128 \
    --budget-ms 200
  doc attn-b2-h16-n8192-d128-bf16-causal.json.gz 120 run attention --dtype bf16 \
    --shapes 2x16x8192x128 --causal --budget-ms 200
}

step_sweep() {  # 16 heads at D = 128, 32 at D = 64
  doc attn-sweep-d128-bf16.json.gz 200 run attention --dtype bf16 --shapes "$D128" \
    --stages "$FUSED" --budget-ms 100
  doc attn-sweep-d128-bf16-causal.json.gz 200 run attention --dtype bf16 --shapes "$D128" \
    --stages "$FUSED" --causal --budget-ms 100
  doc attn-sweep-d64-bf16.json.gz 200 run attention --dtype bf16 --shapes "$D64" \
    --stages "$FUSED" --budget-ms 100
  doc attn-sweep-d64-bf16-causal.json.gz 200 run attention --dtype bf16 --shapes "$D64" \
    --stages "$FUSED" --causal --budget-ms 100
}

run_steps precompile tests ladder sweep
