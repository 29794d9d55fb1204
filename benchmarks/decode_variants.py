"""Time variants of the decode stages' tile parameters at decode shapes, next to cuBLAS.

`roofline tune` searches square shapes only; the decode stages' defaults (stages.py) were chosen
on the CPU (registers, spills, the order of loads in the SASS) and want a measurement at the
shapes they serve. Each variant is the registry stage with some parameters changed
(Stage.with_params: tile, threads and shared memory follow), named like `roofline tune` names
them (gemv_splitk@NUM_THREADS=256), verified and timed by the runner like any stage. Variants
that fail to compile or spill are dropped on the CPU first and listed in the document.

    python benchmarks/decode_variants.py --precompile sm_90a   # the compile cache, in parallel
    python benchmarks/decode_variants.py --dtype bf16 --output /tmp/out/decode-variants-bf16.json.gz
    python benchmarks/decode_variants.py --set simt --dtype fp32 --budget-ms 400 --output F.json
    python benchmarks/decode_variants.py --set simt12 --precompile sm_90a   # stage 12's variants

Writes one results document (`roofline show FILE` renders it) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rooflinecli import results  # noqa: E402
from rooflinecli.stages import compiler, gemm as stages  # noqa: E402
from rooflinecli.errors import RooflineError  # noqa: E402

# (stage, parameter changes): a handful around each default, not a grid search
VARIANTS: list[tuple[str, dict[str, int]]] = [
    ("gemv_splitk", {}),
    ("gemv_splitk", {"NUM_THREADS": 256}),  # half the bytes in flight, up to 2 blocks per SM
    ("gemv_splitk", {"KU": 16, "NUM_THREADS": 256}),  # the same bytes, half the threads
    ("gemv_splitk", {"BM": 1, "TM": 1}),  # M = 1 code only: fewer registers
    ("gemv_splitk", {"BN": 64}),  # 128-byte rows per block, half the blocks
    ("gemv_multirow", {}),
    ("gemv_multirow", {"BM": 16, "TM": 8, "MIN_BLOCKS": 1}),  # 2 row groups: fewer conversions
    ("gemv_wmma", {}),
    ("gemv_wmma", {"KW": 32}),  # half the step: 2 KiB of B per warp in flight
    ("gemv_wmma", {"NUM_THREADS": 512, "KW": 32, "MIN_BLOCKS": 1}),
    ("gemv_wmma", {"BM": 64, "KW": 32, "MIN_BLOCKS": 1}),  # M = 64 reads B once
]
LLAMA = [(1, 4096, 4096), (1, 11008, 4096), (1, 4096, 11008), (16, 11008, 4096)]
SHAPES = {"bf16": [*LLAMA, (64, 4096, 4096)], "fp16": LLAMA, "fp32": LLAMA[:2] + LLAMA[3:]}

# --set simt: stage 11's block tile turned round (256x128, cuBLAS SGEMM's on the H200) beside
# its tuned 128x256 and stage 10, at 4096^3 and 8192^3 (fp32 only)
SIMT_VARIANTS: list[tuple[str, dict[str, int]]] = [
    ("multistage", {}),
    ("spread_copies", {"BK": 32, "STAGES": 4, "COPY_STEP": 2}),
    ("spread_copies", {"BM": 256, "BN": 128}),
    ("spread_copies", {"BM": 256, "BN": 128, "BK": 8, "COPY_STEP": 2}),
    ("spread_copies", {"BM": 256, "BN": 128, "BK": 16, "STAGES": 4, "COPY_STEP": 2}),
    ("spread_copies", {"BM": 256, "BN": 128, "BK": 32, "STAGES": 4, "COPY_STEP": 2}),
]
SIMT_SHAPES = {"fp32": [(4096, 4096, 4096), (8192, 8192, 8192)]}
# --set simt12: stage 12 (serpentine_ffma) around its defaults, beside stage 11's best variant
# (spread-copies-variants-fp32.json.gz: 93.6% / 94.5% of cuBLAS at 4096 / 8192), with the controls that say
# which of its changes pays (each undoes one): row-major lanes, stage 11's block tile (one
# 8-warp block per SM), row-major FFMA order, stage 11's 8 x 16 thread tile
SIMT12_VARIANTS: list[tuple[str, dict[str, int]]] = [
    ("spread_copies", {"BM": 256, "BN": 128, "BK": 16, "STAGES": 4, "COPY_STEP": 2}),
    ("serpentine_ffma", {}),  # 128 x 128, 2 blocks per SM, 16 x 8 per thread, paired lanes
    ("serpentine_ffma", {"COPY_STEP": 4}),  # 5 clusters of copies per K tile: 15 fewer dummy LDS
    ("serpentine_ffma", {"STAGES": 3}),
    ("serpentine_ffma", {"BK": 8}),  # cuBLAS's K tile: twice the barriers, half the slots
    ("serpentine_ffma", {"BK": 32, "STAGES": 3}),  # half the barriers (4 stages do not fit twice)
    ("serpentine_ffma", {"GROUP_M": 16}),
    ("serpentine_ffma", {"PAIR_LANES": 0}),  # control: row-major lanes (4-cycle B loads)
    ("serpentine_ffma", {"BM": 256, "MIN_BLOCKS": 1}),  # control: one 8-warp block per SM
    ("serpentine_ffma", {"SERPENTINE": 0}),  # control: row-major FFMA order
    ("serpentine_ffma", {"WNITER": 4}),  # control: stage 11's 8 x 16 thread tile, lanes paired
    # stage 11's best with only its lanes paired: block, thread tile, FFMA order all stage 11's
    ("serpentine_ffma", {"BM": 256, "MIN_BLOCKS": 1, "WNITER": 4, "SERPENTINE": 0}),
    ("serpentine_ffma", {"BN": 64, "COPY_STEP": 4, "MIN_BLOCKS": 4}),  # 2-warp blocks, 4 per SM
    ("serpentine_ffma", {"BM": 64, "COPY_STEP": 4, "MIN_BLOCKS": 4}),
]
SETS = {
    "decode": (VARIANTS, SHAPES),
    "simt": (SIMT_VARIANTS, SIMT_SHAPES),
    "simt12": (SIMT12_VARIANTS, SIMT_SHAPES),
}


def variant(name: str, change: dict[str, int], dtype: str) -> stages.Stage:
    """The variant as `roofline run gemm --stages NAME@K=V` builds and names it (the parameters
    that differ from the registry's, derived ones included, in the registry's order): the
    screen's records name the variants so, and the compile cache holds one build per name."""
    if not change:
        return stages.BY_NAME[name]
    spec = ",".join(f"{k}={v}" for k, v in change.items())
    return stages.select(f"{name}@{spec}", dtype)[0]


def variants(
    dtype: str, arch: str, which: list[tuple[str, dict[str, int]]] = VARIANTS
) -> tuple[list[stages.Stage], list[dict[str, str]]]:
    keep: list[stages.Stage] = []
    dropped: list[dict[str, str]] = []
    for name, change in which:
        if dtype not in stages.BY_NAME[name].all_dtypes:
            continue
        named = name + "".join(f" {k}={v}" for k, v in change.items())  # if it cannot be built
        try:
            v = variant(name, change, dtype)
            named = v.name
            built = compiler.compile_stage(v, arch, dtype)
        except (RooflineError, KeyError, ValueError) as exc:
            dropped.append({"stage": named, "reason": str(exc)})
            continue
        spill = built.resources.spill_bytes if built.resources else 0
        if spill:
            dropped.append({"stage": named, "reason": f"spills {spill} bytes"})
            continue
        keep.append(v)
    return keep, dropped


def _compile(job: tuple[str, dict[str, int], str, str]) -> str:
    name, change, dtype, arch = job
    try:
        compiler.compile_stage(variant(name, change, dtype), arch, dtype)
    except (RooflineError, KeyError, ValueError) as exc:
        return f"{name} {change} {dtype}: {exc}"
    return ""


def precompile(arch: str, which: list[tuple[str, dict[str, int]]] = VARIANTS) -> None:
    """Every variant (and for the decode set every decode stage) in every dtype, compiled in
    parallel into the cache under the name it runs by (the runs after it then start at once
    instead of compiling one NVRTC program at a time)."""
    from concurrent.futures import ProcessPoolExecutor

    decode: list[tuple[str, dict[str, int]]] = []
    if which is VARIANTS:  # the decode set warms every decode stage too
        decode = [(s.name, {}) for s in stages.STAGES if s.m_range]
    jobs = [
        (name, change, dtype, arch)
        for name, change in [*decode, *which]
        for dtype in stages.BY_NAME[name].all_dtypes
    ]
    with ProcessPoolExecutor() as pool:
        for err in pool.map(_compile, jobs):
            if err:
                print(f"precompile: {err}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="bf16", choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--budget-ms", type=float, default=30.0)
    ap.add_argument("--output", help="results document (required unless --precompile)")
    ap.add_argument("--precompile", metavar="ARCH", help="only fill the compile cache, e.g. sm_90a")
    ap.add_argument("--set", default="decode", choices=sorted(SETS), help="which variants")
    args = ap.parse_args()
    which, shape_sets = SETS[args.set]
    if args.precompile:
        precompile(args.precompile, which)
        return 0
    if not args.output:
        ap.error("--output is required")

    from rooflinecli import api, files
    from rooflinecli.gpu import device as gpu
    from rooflinecli.gpu.timer import Timing
    from rooflinecli.present import output, table

    dev = gpu.info()
    keep, dropped = variants(args.dtype, dev["arch"], which)
    for d in dropped:
        print(f"dropped {d['stage']}: {d['reason']}", file=sys.stderr)
    chosen = [*keep, stages.reference_for(args.dtype)]
    shapes = shape_sets.get(args.dtype) or next(iter(shape_sets.values()))
    doc = api.run_gemm(
        shapes, chosen, None, dtype=args.dtype, timing=Timing(budget_ms=args.budget_ms),
        command=f"benchmarks/decode_variants.py --set {args.set}", dropped=dropped,
    )  # fmt: skip
    records = doc["records"]
    files.write_atomic(args.output, results.dumps(doc))
    title = f"{args.set} variants, {args.dtype}"
    output.emit(
        output.of_document(doc, [output.Records(doc, table.RUN_COLUMNS, title)]), "markdown"
    )
    bad = [r for r in records if r.get("verified") is not True]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
