#!/usr/bin/env bash
# Measured intensity: Nsight Compute (ncu, --clock-control none) on each stage's timed launch
# (`roofline profile gemm`) and on any program's kernels (`roofline profile app`): the documents
# of benchmarks/results/ named profile-*. Needs ncu and read access to the GPU's counters; the
# stages are found by their NVTX ranges (the nvtx package).
#
#   bash benchmarks/profile.sh OUTDIR [STEP...]     (default: every step, ~10 min)
#
# Steps: gemm (the FP32 ladder at 4096^3 in three documents), app (a CuPy matmul and a PyTorch
# program, examples/).
source "$(dirname "$0")/lib.sh"
suite "$@"

step_gemm() {
  doc profile-fp32-4096.json.gz 900 profile gemm --m 4096 \
    --stages naive_xcol,naive_xrow,thread_tile_4x4,thread_tile_8x8,double_buffer
  doc profile-fp32-4096-b.json.gz 900 profile gemm --m 4096 \
    --stages smem_tile,blocktile_1d,blocktile_2d,vectorized,warptile
  doc profile-fp32-4096-multistage.json.gz 300 profile gemm --m 4096 --stages multistage
}

step_app() {  # the program after `--`, its kernels placed on the roofline
  step profile-app-cupy-matmul-fp16 300 $R profile app --nvtx "app@matmul/" --format markdown \
    --force --output "$OUT/profile-app-cupy-matmul-fp16.json.gz" \
    -- python3 examples/cupy_app.py --n 8192 --gib 0
  step profile-app-torch 300 $R profile app --format markdown --force \
    --output "$OUT/profile-app-torch.json.gz" -- python3 examples/torch_app.py
}

run_steps gemm app
