"""What a compiled stage holds, without a GPU: registers, shared memory, spills, occupancy on a
spec, and the SASS instruction mix of its main loop per k step (NVRTC + nvdisasm from PyPI)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from rooflinecli.core import occupancy
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError
from rooflinecli.stages import compiler, gemm, sass

# instructions counted per k step of the main loop
PER_K = ("LDG", "LDS", "LDGSTS", "UTMALDG", "STS", "LDSM", "FFMA", "HMMA", "HGMMA", "QGMMA")


def ratio(a: int, b: int) -> str | None:
    """a:b in lowest terms (32 LDG, 16 FFMA -> '2:1'); None when either is zero."""
    if not a or not b:
        return None
    f = Fraction(a, b)
    return f"{f.numerator}:{f.denominator}"


def results_per_thread(stage: gemm.Stage) -> float:
    """Elements of C one thread computes: each needs one multiply-add per k step."""
    threads = stage.threads[0] * stage.threads[1]
    return stage.tile[0] * stage.tile[1] / threads


def inspect_stage(
    stage: gemm.Stage, arch: str, spec: Spec, dtype: str | None = None
) -> dict[str, Any]:
    """One flat record: resources, occupancy on `spec`, SASS mix of the main loop per k step."""
    return inspect_stages([stage], arch, spec, dtype)[0]


Step = Callable[[str], None]


def inspect_stages(
    stages: list[gemm.Stage],
    arch: str,
    spec: Spec,
    dtype: str | None = None,
    step: Step | None = None,
) -> list[dict[str, Any]]:
    """inspect_stage() of each stage, the work done at once: every build the cache lacks in
    parallel processes (compiler.compile_many), then every listing it lacks in parallel nvdisasm
    runs (sass.listings). `step(label)` is called as each of a stage's two steps (its build, its
    listing) is over: 2 x len(stages) calls in all."""
    tick = step or (lambda label: None)
    recs, targets = [], []
    for stage in stages:
        if hasattr(stage, "for_arch"):  # the parameters the runner uses on this target
            stage = stage.for_arch(arch)
        targets.append(stage)
        recs.append(_head(stage, arch, dtype or stage.dtype))
    jobs: list[compiler.Job] = []
    owner: list[int] = []  # the stage of each job
    for i, (stage, rec) in enumerate(zip(targets, recs, strict=True)):
        why_not = gemm.cannot_run(stage, arch)
        if why_not:
            rec["error"] = why_not
        else:
            try:
                jobs.append(compiler.stage_job(stage, arch, rec["dtype"]))
                owner.append(i)
                continue
            except RooflineError as exc:
                rec["error"] = exc.message
        tick(f"{stage.name}: {rec['error']}")
        tick(f"{stage.name}: nothing to list")

    def built_one(j: int, result: compiler.Compiled | RooflineError) -> None:
        tick(f"compiled {targets[owner[j]].name}")

    results = compiler.compile_many(jobs, done=built_one)
    listed: list[tuple[int, compiler.Compiled]] = []
    for j, result in enumerate(results):
        i, rec = owner[j], recs[owner[j]]
        if isinstance(result, RooflineError):
            rec["error"] = result.message
        elif result.resources is None:
            rec["error"] = "NVRTC gave no ptxas report (set CUDA_CACHE_DISABLE=1 and retry)"
        else:
            _resources(rec, targets[i], result.resources, spec)
            listed.append((i, result))
            continue
        tick(f"{targets[i].name}: nothing to list")

    def listed_one(j: int) -> None:
        tick(f"disassembled {targets[listed[j][0]].name}")

    texts = sass.listings([built.cubin_path for _, built in listed], done=listed_one)
    for (i, _), text in zip(listed, texts, strict=True):
        _sass(recs[i], targets[i], sass.analyze(text, targets[i].entry or ""))
    return recs


def _head(stage: gemm.Stage, arch: str, dtype: str) -> dict[str, Any]:
    threads = stage.threads[0] * stage.threads[1]
    return {
        "stage": stage.name,
        "dtype": dtype,
        "arch": arch,
        "entry": stage.entry,
        "threads": threads,
        "tile": f"{stage.tile[0]}x{stage.tile[1]}",
        "params": dict(stage.params),
        "error": None,
    }


def _resources(rec: dict[str, Any], stage: gemm.Stage, res: compiler.Resources, spec: Spec) -> None:
    threads = rec["threads"]
    smem = res.smem_static_bytes + stage.smem_bytes
    occ = occupancy.theoretical(occupancy.SmLimits.from_spec(spec), threads, res.registers, smem)
    rec.update(
        registers=res.registers,
        smem_static_bytes=res.smem_static_bytes,
        smem_dynamic_bytes=stage.smem_bytes,
        smem_bytes=smem,
        spill_bytes=res.spill_bytes,
        stack_bytes=res.stack_frame_bytes,
        blocks_per_sm=occ.blocks_per_sm,
        warps_per_sm=occ.warps_per_sm,
        occupancy_pct=100.0 * occ.occupancy,
        limited_by=",".join(occ.limiters),
        limit_registers=occ.limit_registers,
        limit_smem=occ.limit_smem,
        limit_warps=occ.limit_warps,
        limit_blocks=occ.limit_blocks,
        regs_per_warp_allocated=occ.regs_per_warp,
        smem_per_block_allocated=occ.smem_per_block,
    )


def _sass(rec: dict[str, Any], stage: gemm.Stage, rep: sass.Report) -> None:
    per_thread = results_per_thread(stage)
    k_per_iter = rep.loop_macs_per_thread / per_thread if rep.main_loop else None
    if rep.loop_gmma_k_steps:  # warpgroup MMA: from the accumulator tiles (see sass)
        k_per_iter = rep.loop_gmma_k_steps
    if k_per_iter is not None and abs(k_per_iter - round(k_per_iter)) < 1e-9:
        k_per_iter = float(round(k_per_iter))
    loop, kern = rep.loop, rep.kernel
    rec.update(
        main_loop=(
            f"{rep.main_loop.label} 0x{rep.main_loop.start:04x}-0x{rep.main_loop.end:04x}"
            if rep.main_loop
            else None
        ),
        loops=rep.loops,
        loop_instructions=rep.loop_instructions if rep.main_loop else None,
        k_per_iter=k_per_iter,
        ldg_ffma=ratio(loop["LDG"], loop["FFMA"]),
        lds_ffma=ratio(loop["LDS"], loop["FFMA"]),
        loop_widths=", ".join(f"{v} {k}" for k, v in sorted(rep.loop_widths.items())) or None,
        kernel_instructions=rep.instructions,
    )
    for op in sass.MIX_KEYS:
        rec[f"loop_{op.lower()}"] = loop[op]
        rec[f"kernel_{op.lower()}"] = kern[op]
    for op in PER_K:
        rec[f"{op.lower()}_per_k"] = loop[op] / k_per_iter if k_per_iter else None
    rec["sass"] = rep.to_dict()


def check_arch(arch: str) -> None:
    """A target NVRTC cannot build for is bad input: one line now, not an error row per stage."""
    cc = compiler.cc_of_arch(arch)
    try:
        _, archs = compiler._nvrtc().nvrtcGetSupportedArchs()
    except Exception:  # no NVRTC, or one without the query: each stage's build says it
        return
    if archs and cc not in archs:
        known = ", ".join(f"sm_{a}" for a in archs)
        raise RooflineError(
            f"bad --arch {arch}: NVRTC {compiler.nvrtc_version()} builds for {known}"
        )
