"""Measure the user's own kernel from Python and place it on the roofline.

    from rooflinecli import measure, document

    rec = measure(lambda: torch.matmul(a, b, out=c), flops=2 * m * n * k,
                  bytes=2 * (m * k + k * n + m * n), name="torch.matmul", dtype="fp16",
                  shape=(m, n, k))
    doc = document([rec], spec="h100-sxm5")   # what `roofline show`, `plot` and `gate` read

`measure` times a callable that launches work on the current CUDA stream (CuPy's current stream,
which is the legacy default stream unless you change it; PyTorch launches there too by default)
exactly the way `roofline run` times a stage (rooflinecli.gpu.timer). CuPy is imported only
when `measure` runs, so importing this module costs nothing. See docs/measure.md.

measure(..., counters=True) also counts what one call does in hardware (FLOPs by instruction and
Tensor Core operation, bytes and intensity at DRAM, L2, L1 and shared memory): it re-runs the
whole script once more under Nsight Compute, where that run's measure() with the same name makes
one extra call inside an NVTX range (domain "roofline_counters") that ncu alone profiles. The
speed stays the one timed here, outside ncu.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rooflinecli import results
from rooflinecli.core import model, roofs
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return value


def measure(
    fn: Callable[[], Any],
    *,
    flops: float,
    bytes: float | None = None,  # shadows the builtin here: the name users expect by `flops`
    name: str,
    dtype: str = "fp32",
    shape: Sequence[int] | None = None,
    warmup_ms: float = 25.0,
    budget_ms: float = 400.0,
    flush_l2: bool = True,
    counters: bool = False,
    counters_timeout: float = 3600.0,
) -> dict[str, Any]:
    """Time `fn` on the GPU and return a results record.

    flops: the work of one call; bytes: the HBM traffic one call needs (ideal: every operand
    moved once), which places the record on the roofline; shape: (M, N, K) if it is a GEMM.
    The record holds the median time (time_ms), its min, max and stdev, the number of repeats,
    tflops, achieved GB/s (with bytes) and spread = (max - min) / median.

    counters=True: also the hardware counts of one call, from Nsight Compute (flops_hw,
    flops_hw_ratio against `flops`, bytes_dram/l2/l1/smem, ai_dram/l2/l1/smem with their notes,
    ncu_time_ms, ncu_kernels). The script runs once more, under ncu (`counters_timeout`
    seconds at most); RooflineError where that cannot be done (no ncu, no permission to read
    counters, a script that cannot be re-run: -c, stdin, a REPL or a notebook).
    """
    import statistics  # here: it loads fractions and its regexes, which `model` needs not

    from rooflinecli.gpu import timer

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    _positive("flops", flops)
    if bytes is not None:
        _positive("bytes", bytes)
    if dtype not in model.DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(model.DTYPE_BYTES)}, got {dtype!r}")
    m = n = k = None
    if shape is not None:
        dims = tuple(shape)
        if len(dims) != 3 or not all(isinstance(d, int) and d > 0 for d in dims):
            raise ValueError(f"shape must be three positive whole numbers (M, N, K), got {shape!r}")
        m, n, k = dims
    _positive("warmup_ms", warmup_ms)
    _positive("budget_ms", budget_ms)

    under_ncu = os.environ.get(COUNTERS_CHILD)
    if counters and under_ncu == range_name(name):
        _counted_call(fn, name)  # this run is the one under ncu: the call it profiles
    timing = timer.Timing(warmup_ms=warmup_ms, budget_ms=budget_ms, flush_l2=flush_l2)
    timed = timer.time_callable(fn, name, timing)
    times = timed.samples[0]
    clock = timed.clock  # the SM clock while the timed calls ran (NVML), if there is one
    gpu_name = _device_name()

    median = statistics.median(times)
    record: dict[str, Any] = {
        "stage": name,
        "kind": "user",
        "dtype": dtype,
        "m": m,
        "n": n,
        "k": k,
        "flops": flops,
        "bytes_ideal": bytes,
        "ai_ideal": model.intensity(flops, bytes) if bytes else None,
        "time_ms": median,
        "time_ms_min": min(times),
        "time_ms_max": max(times),
        "time_ms_stdev": statistics.stdev(times) if len(times) > 1 else 0.0,
        "repeats": len(times),
        "tflops": model.tflops(flops, median),
        "gbs": bytes / (median * 1e-3) / 1e9 if bytes else None,
        "spread": (max(times) - min(times)) / median,
        "flush_l2": flush_l2,
        "device_name": gpu_name,
        "samples_ms": [round(x, 6) for x in times],
        **clock,
    }
    if counters and not under_ncu:
        record.update(hardware_counts(name, flops, bytes, counters_timeout))
    elif counters:
        record["counters_reason"] = "this run is the script's run under ncu"
    return results.complete_record(record)


def _device_name() -> str:
    from rooflinecli.gpu import device

    return str(device.info()["name"])


# --------------------------------------------------------------------------- counters=True

# set (to the range name) in the script's second run, under ncu; its measure() makes the one
# counted call, and never starts another ncu
COUNTERS_CHILD = "ROOFLINE_COUNTERS_CHILD"
COUNTERS_DOMAIN = "roofline_counters"


def range_name(name: str) -> str:
    """The NVTX range of a measure() name: characters ncu's filter syntax gives a meaning to
    ('@', '/', spaces, ...) become '_'."""
    import re

    return re.sub(r"[^A-Za-z0-9_.:-]", "_", name)


@contextmanager
def _counted_range(name: str) -> Iterator[None]:
    try:
        import nvtx
    except ImportError:
        raise RooflineError(
            "measure(counters=True) needs the nvtx package (pip install nvtx)"
        ) from None
    nvtx.push_range(message=range_name(name), domain=COUNTERS_DOMAIN)
    try:
        yield
    finally:
        nvtx.pop_range(domain=COUNTERS_DOMAIN)


def _sync() -> None:
    from rooflinecli.gpu import device

    device.cupy().cuda.get_current_stream().synchronize()


def _counted_call(fn: Callable[[], Any], name: str) -> None:
    """One call ncu profiles: after a call that may set up library handles (outside the range)."""
    fn()
    _sync()
    with _counted_range(name):
        fn()
        _sync()


def script_argv() -> list[str]:
    """The command that runs this script again, the way it was started."""
    args = list(getattr(sys, "orig_argv", [])[1:])
    interactive = not args or args[0] in ("-c", "-") or sys.argv[0] in ("", "-c", "-")
    if interactive or "ipykernel" in sys.modules:
        raise RooflineError(
            "measure(counters=True) runs this script again under Nsight Compute: start it as "
            "`python script.py` or `python -m module`, not with -c, stdin, a REPL or a notebook "
            "(or profile it with `roofline profile app --nvtx ...`)"
        )
    return [sys.executable, *args]


def hardware_counts(
    name: str, flops: float, nbytes: float | None, timeout: float = 3600.0
) -> dict[str, Any]:
    """Run this script again under ncu and count the one call its measure(name) makes there:
    FLOPs, bytes and intensities per level (rooflinecli.gpu.ncu), kernel time, kernel names."""
    from rooflinecli.gpu import ncu, profile, profile_app

    rng = range_name(name)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **{COUNTERS_CHILD: rng})
    filters = profile_app.Filters(nvtx=f"{COUNTERS_DOMAIN}@{rng}/")
    run = profile_app.run_under_ncu(script_argv(), filters, timeout, None, env)
    total = profile.sum_metrics(run.rows)  # every kernel the call launched
    w = ncu.work(total, run.plan)
    nb = ncu.level_bytes(total, run.plan)
    wgmma = ncu.value(total, run.plan, "wgmma_inst")
    counted = w.total
    ai, notes = ncu.intensities(
        counted if counted else flops, nb, nbytes, wgmma, profile._why_missing(run.plan)
    )
    times = [ncu.value(r["metrics"], run.plan, "time") for r in run.rows]
    known = [t for t in times if t is not None]
    return {
        "flops_hw": counted,
        "flops_hw_by": {k: v for k, v in w.by.items() if v is None or v > 0},
        "flops_hw_ratio": counted / flops if counted is not None else None,
        "flops_note": "; ".join(w.notes) or None,
        "bytes_dram": nb["dram"],
        "bytes_l2": nb["l2"],
        "bytes_l1": nb["l1"],
        "bytes_smem": nb["smem"],
        "wgmma_instructions": wgmma,
        **{f"ai_{lvl}": ai[lvl] for lvl in ncu.LEVELS},
        **{f"ai_{lvl}_note": notes[lvl] for lvl in ncu.LEVELS},
        "ncu_time_ms": 1e3 * sum(known) if times and len(known) == len(times) else None,
        "ncu_kernels": [r["kernel"] for r in run.rows],
        "ncu_version": run.info.get("version"),
        "counters_reason": None,
    }


def _spec_for(spec: Spec | str | None, records: list[dict[str, Any]]) -> Spec:
    from rooflinecli.core import specs

    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, str):
        return specs.resolve(spec)
    names = sorted({str(r["device_name"]) for r in records if r.get("device_name")})
    if len(names) != 1:
        raise RooflineError(
            "document(): pass spec= (a name from `roofline specs`, a TOML path or a Spec): "
            + ("the records name no device" if not names else f"they name {', '.join(names)}")
        )
    return specs.for_device(names[0])


def _device(names: list[str]) -> dict[str, Any] | None:
    """The GPU here (driver, CUDA, clocks: what `gate` compares) if the records were measured on
    it, else only the name the records carry."""
    from rooflinecli.gpu import device

    try:
        info = device.info()
    except Exception:  # no CuPy, no GPU, no NVRTC: a document is still written
        info = None
    if info is not None and names == [info["name"]]:
        return info
    return {"name": names[0]} if len(names) == 1 else None


def document(
    records: list[dict[str, Any]], spec: Spec | str | None = None, **extra: Any
) -> dict[str, Any]:
    """A results document of measured records, each placed on the spec's roofline.

    spec: a Spec, a registry name or a TOML path; None: the spec of the GPU the records were
    measured on. Write it with `files.write_atomic(path, results.dumps(doc))`, then
    `roofline show/plot/gate path`.
    """
    if not isinstance(records, list | tuple) or not records:
        raise ValueError("records must be a non-empty list of measure() records")
    chosen = _spec_for(spec, list(records))
    placed: list[dict[str, Any]] = []
    for rec in records:
        if not isinstance(rec, dict) or "stage" not in rec:
            raise ValueError("each record must be a dict returned by measure()")
        r = results.complete_record(rec)
        roofs.put_under(
            r,
            roofs.datasheet_roof(chosen, r["dtype"]),
            "datasheet",
            chosen.peak_clock(r["dtype"]),
        )
        placed.append(r)
    names = sorted({str(r["device_name"]) for r in placed if r.get("device_name")})
    device = _device(names)
    extra.setdefault("command", "measure")
    return results.new_document(chosen.to_dict(), device, placed, **extra)


# --------------------------------------------------------------------------- runs and models
# What the commands call: each returns a results document; the commands only parse options and
# hand the document's rows to rooflinecli.present.


def default_spec(spec_arg: str | None) -> tuple[Spec, str]:
    """--spec, else the GPU nvidia-smi reports, else core.specs.DEFAULT (the H200 SXM), saying
    which and why (the commands put it in their title). Never imports CuPy."""
    from rooflinecli.core import specs
    from rooflinecli.gpu.device import smi_device_name

    if spec_arg:
        return specs.resolve(spec_arg), "given"
    name = smi_device_name()
    if name:
        try:
            return specs.for_device(name), f"detected {name}"
        except RooflineError:
            why = f"no spec matches {name}: the default, --spec chooses"
            return specs.resolve(specs.DEFAULT), why
    return specs.resolve(specs.DEFAULT), "no GPU: the default, --spec chooses"


DEFAULT_ARCH = "sm_90a"  # the target of core.specs.DEFAULT (a test holds them equal)


def target_arch(arch: str | None = None) -> tuple[str, str]:
    """(NVRTC target, why): --arch, else the compute capability nvidia-smi reports, else
    DEFAULT_ARCH. Never imports CuPy: this is what compiles before any GPU is looked for."""
    from rooflinecli.gpu.device import smi_compute_capability
    from rooflinecli.stages import compiler

    if arch:
        compiler.cc_of_arch(arch)  # a malformed one: one line
        return arch, "given"
    cc = smi_compute_capability()
    if cc:
        return compiler.arch_for_cc(cc), f"detected compute capability {cc}"
    return DEFAULT_ARCH, "no GPU: the default, --arch chooses"


def compile_user_stages(stages: Sequence[Any], arch: str, dtype: str) -> None:
    """Compile each user stage (--extra-stage) with NVRTC for `arch`, so a compile error is one
    line naming its stage file and the compiler's first error, before any GPU is looked for.
    Cached: the run that follows finds the cubin."""
    from rooflinecli.stages import compiler

    for stage in stages:
        toml = getattr(stage, "toml_path", "")
        if not toml:
            continue
        try:
            compiler.compile_stage(stage.for_arch(arch), arch, dtype)
        except RooflineError as exc:
            raise RooflineError(f"stage file {toml}: {exc.message}") from None


def dry_run_gemm(
    shapes: list[tuple[int, int, int]],
    stages: Sequence[Any],
    arch: str,
    dtype: str,
    spec: Spec,
    work: Sequence[tuple[tuple[int, int, int], Sequence[tuple[Any, str | None]]]] | None = None,
) -> list[dict[str, Any]]:
    """What `run gemm` would run, without a GPU: every stage compiled by NVRTC for `arch`
    (cached), each shape checked against the stage's refusals, the launch it would get (grid,
    block, shared memory) and the compiler's registers and spills. One row per stage and shape;
    a stage that does not compile is a RooflineError (one line; a user stage's names its file).
    Persistent stages size their grid by the spec's SM count. `work` (a rooflinecli.plan
    RunPlan's): the stages of each shape and their refusals, as decided there; a stage it
    leaves out of a shape has no row there (nor a build, when it is left out of every one)."""
    from rooflinecli.stages import compiler
    from rooflinecli.stages.gemm import cannot_run

    planned = None
    if work is not None:
        planned = {(id(s), j): why for j, (_shape, items) in enumerate(work) for s, why in items}
    built_here = {sid for sid, _ in planned} if planned is not None else None
    # every build at once, in parallel processes (the loop below finds the cubins)
    compiler.precompile(
        [s for s in stages if built_here is None or id(s) in built_here], arch, dtype
    )
    rows: list[dict[str, Any]] = []
    for stage in stages:
        built = None
        at = [j for j in range(len(shapes)) if planned is None or (id(stage), j) in planned]
        if not stage.reference and not at:
            continue
        refusals = {j: planned[(id(stage), j)] for j in at} if planned is not None else None
        if not stage.reference:
            stage = stage.for_arch(arch)
        why_not = cannot_run(stage, arch)
        too_old = f"skipped: {why_not}" if why_not else None
        if not stage.reference and too_old is None:
            if getattr(stage, "toml_path", ""):
                compile_user_stages([stage], arch, dtype)  # its error names the file
            built = compiler.compile_stage(stage, arch, dtype)
        res = built.resources if built is not None else None
        for j, (m, n, k) in enumerate(shapes):
            if stage.reference:
                why = None
            elif refusals is not None:
                if j not in refusals:
                    continue  # the plan left it out here
                why = too_old or refusals[j]
            else:
                why = too_old or stage.refuses(m, n, k)
            row: dict[str, Any] = {"stage": stage.name, "shape": f"{m}x{n}x{k}", "dtype": dtype}
            row.update(grid=None, block=None, smem_bytes=None, registers=None, spill_bytes=None)
            if stage.reference:
                row["status"] = "library call"
            elif why:
                row["status"] = why if why.startswith("skipped") else f"skipped: {why}"
            else:
                try:
                    grid, block, smem = stage.launch(m, n, spec.sm_count)
                except RooflineError as exc:
                    row["status"] = f"skipped: {exc.message}"
                else:
                    row.update(
                        grid="x".join(map(str, grid)),
                        block="x".join(map(str, block)),
                        smem_bytes=smem + (res.smem_static_bytes if res else 0),
                        registers=res.registers if res else None,
                        spill_bytes=res.spill_bytes if res else None,
                        status="would run",
                    )
            rows.append(row)
    return rows


def model_gemm(
    m: int,
    n: int,
    k: int,
    dtype: str,
    spec: Spec,
    alpha: float = 1.0,
    beta: float = 0.0,
    stages: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """The analytic model document of every stage built for the shape (or `stages`) of a dtype
    at one shape: the default ladder leaves out decode stages outside their rows (built_for)."""
    from rooflinecli.stages.gemm import built_for, select

    chosen = list(stages) if stages is not None else built_for(select(None, dtype), [m])
    records = [roofs.model_record(s, m, n, k, spec, alpha, beta, dtype) for s in chosen]
    return results.new_document(spec.to_dict(), None, records, command="model gemm")


def model_llm(
    preset: Any, contexts: list[int], dtype: str, spec: Spec | None = None,
    batches: list[int] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """`model llm`'s document (rooflinecli.core.llm): without `batches`, where the FLOPs of one
    decoded token go at each context; with them, each weight GEMM on `spec`'s roofline at each
    batch, and the time share the roofs allow each operation (`shares`)."""
    from rooflinecli.core import llm

    if batches is None:
        return results.new_document(
            {}, None, _flop_records(preset, contexts, dtype), command="model llm",
            preset=preset.to_dict(), contexts=contexts,
            flop_counts={
                "rmsnorm_per_element": llm.RMSNORM_FLOPS_PER_ELEMENT,
                "silu_mul_per_element": llm.SILU_MUL_FLOPS_PER_ELEMENT,
                "softmax_per_score": llm.SOFTMAX_FLOPS_PER_SCORE,
                "rope_per_element": llm.ROPE_FLOPS_PER_ELEMENT,
                "residual_per_element": llm.RESIDUAL_FLOPS_PER_ELEMENT,
            },
        )  # fmt: skip
    if spec is None:
        raise ValueError("model_llm: the GEMMs at a batch stand under a spec's roofs: give spec")
    gemms = llm.weight_gemms(preset)
    records = [llm.gemm_record(preset, g, b, spec, dtype) for b in batches for g in gemms]
    shares = [
        {"context": c, "batch": b, **r}
        for c in contexts
        for b in batches
        for r in llm.time_split(preset, c, b, spec, dtype)
    ]
    return results.new_document(
        spec.to_dict(), None, records, command="model llm", preset=preset.to_dict(),
        contexts=contexts, batches=batches, shares=shares,
    )  # fmt: skip


def _flop_records(p: Any, contexts: list[int], dtype: str) -> list[dict[str, Any]]:
    """One record per operation and context: its FLOPs, count and share of one token's."""
    from rooflinecli.core import llm

    out = []
    for c in contexts:
        parts = llm.flop_split(p, c)
        total = llm.group_totals(parts)["total"]
        for part in parts:
            m, n, k = part.shape if part.shape else (None, None, None)
            out.append(
                {
                    "stage": part.name,
                    "kind": "llm",
                    "dtype": dtype,
                    "m": m,
                    "n": n,
                    "k": k,
                    "flops": part.flops_each,
                    "workload": f"{p.name}:{part.name}:ctx{c}",
                    "preset": p.name,
                    "group": part.group,
                    "what": part.what,
                    "context": c,
                    "count": part.count,
                    "flops_per_token": part.flops,
                    "share_pct": 100.0 * part.flops / total,
                }
            )
    return out


def model_attention(shape: Any, dtype: str, spec: Spec) -> dict[str, Any]:
    """The analytic model document of attention at one shape (rooflinecli.core.attention.Shape):
    the fused version (Q, K, V, O once) and the unfused one (S and P through memory in fp32)."""
    from rooflinecli.core import attention

    records = attention.model_records(shape, spec, dtype)
    return results.new_document(spec.to_dict(), None, records, command="model attention")


def timing_settings(seed: int, timing: Any) -> dict[str, Any]:
    """The settings every run document records of its seed and its timing (a gpu.timer.Timing;
    the GPU layer is imported where a run starts, not here)."""
    return {
        "seed": seed,
        "budget_ms": timing.budget_ms,
        "repeats": timing.max_repeats if timing.min_repeats == timing.max_repeats else None,
        "max_noise_pct": timing.max_noise_pct,
        "flush_l2": timing.flush_l2,
        "l2_flush_kind": timing.flush_kind if timing.flush_l2 else None,
    }


def run_gemm(
    shapes: list[tuple[int, int, int]],
    stages: list[Any],
    spec_arg: str | None = None,
    *,
    dtype: str = "fp32",
    alpha: float = 1.0,
    beta: float = 0.0,
    seed: int = 0,
    timing: Any = None,
    progress: Callable[..., None] | None = None,
    command: str = "run gemm",
    picks: dict[tuple[int, int, int], Any] | None = None,
    work: list[tuple[tuple[int, int, int], list[tuple[Any, str | None]]]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Verify, time (interleaved with the reference) and place every stage at every shape on
    the GPU here: the results document (rooflinecli.gpu.runner does the work). `progress` is
    called as each stage and shape begins: progress(label, total=steps). With `picks` (from
    pick_best), each shape runs its own pick and the reference of `stages` only. `work` (a
    rooflinecli.plan.RunPlan's): per shape, the stages to run and the refusals decided."""
    from rooflinecli.gpu import runner
    from rooflinecli.gpu.timer import Timing, method_text

    timing = timing or Timing()
    if picks is not None:  # --stages best: each shape with its own pick, beside the reference
        stages = [s for s in stages if s.reference]
        if work is None:
            work = [(shape, [(picks[shape].stage, None)]) for shape in shapes]
        extra.setdefault("settings", {})["stages"] = "best: one stage per shape from the tune table"
    fp8_format = str(extra.pop("fp8_format", "e4m3"))
    fp8_args = {"fp8_format": fp8_format} if dtype == "fp8" else {}
    device, spec, records = runner.run_gemm(
        shapes, stages, spec_arg, alpha, beta, seed, timing, progress=progress, dtype=dtype,
        work=work, **fp8_args,
    )  # fmt: skip
    if picks is not None:
        for r in records:
            pick = picks.get((r["m"], r["n"], r["k"]))
            if pick is not None and r.get("kind") != "reference" and r["stage"] == pick.stage.name:
                r.update(pick.fields())
    settings = {
        **timing_settings(seed, timing),
        "timing": "each stage interleaved with the reference, round by round, alternating which "
        "goes first; every repeat kept (samples_ms); the median reported",
        "timing_method": method_text(timing),
        "check": "float64 product of the same inputs (cuBLAS DGEMM via cupy.matmul), output "
        "poisoned first; the first launch and the last timed launch checked",
        "tolerance_rule": runner.tolerance_rule(dtype),
        **extra.pop("settings", {}),
    }
    if dtype == "fp8":
        from rooflinecli.core.fp8 import tolerance_rule
        from rooflinecli.gpu.fp8 import CHECK, CONTRACT

        settings.update(
            timing="each stage interleaved with both cuBLASLt FP8 modes (torch._scaled_mm: "
            "default, promoted; use_fast_accum, not promoted), round by round, alternating which "
            "goes first; compared with the mode whose accumulation matches the stage's; every "
            "repeat kept (samples_ms); the median reported",
            check=CHECK,
            tolerance_rule=tolerance_rule(None) + " (unpromoted; promoted stages: their span)",
            fp8_format=fp8_format,
            **CONTRACT,
        )
    return results.new_document(
        spec.to_dict(),
        device,
        records,
        command=command,
        environment=results.environment(),
        settings=settings,
        **extra,
    )


def run_attention(
    shapes: list[Any],
    stages: list[Any],
    spec_arg: str | None = None,
    *,
    dtype: str = "fp16",
    seed: int = 0,
    timing: Any = None,
    progress: Callable[..., None] | None = None,
    references: bool = True,
    command: str = "run attention",
    work: list[tuple[Any, list[tuple[Any, str | None]]]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Verify, time (interleaved with PyTorch's SDPA flash and cuDNN backends, when PyTorch is
    importable) and place every attention stage at every shape (rooflinecli.core.attention.Shape)
    on the GPU here: the results document (rooflinecli.gpu.attention does the work). `work` (a
    rooflinecli.plan.RunPlan's): per shape, the stages to run and the refusals decided."""
    from rooflinecli.gpu import attention
    from rooflinecli.gpu.timer import Timing, method_text

    timing = timing or Timing()
    device, spec, records, torch_info = attention.run_attention(
        shapes, stages, spec_arg, dtype, seed, timing, progress, references, work=work
    )
    settings = {
        **timing_settings(seed, timing),
        "timing": "each stage interleaved with the PyTorch references, round by round, "
        "alternating which goes first; every repeat kept (samples_ms); the median reported",
        "check": "float32 attention of the same rounded inputs computed by CuPy on the GPU "
        "(every element of O), output poisoned with NaN first; the first launch and the last "
        "timed launch checked",
        "tolerance_rule": attention.tolerance_rule(dtype),
        "timing_method": method_text(timing),
        "references": "PyTorch scaled_dot_product_attention under sdpa_kernel(FLASH_ATTENTION) "
        "and sdpa_kernel(CUDNN_ATTENTION), on the same device buffers"
        if torch_info
        else "none (PyTorch not importable, fp32, or --no-references)",
        "torch": torch_info,
    }
    return results.new_document(
        spec.to_dict(),
        device,
        records,
        command=command,
        environment=results.environment(),
        settings=settings,
        **extra,
    )


def pick_best(
    shapes: Sequence[tuple[int, int, int]], dtype: str, device_name: str | None = None
) -> dict[tuple[int, int, int], Any]:
    """`--stages best`: per shape, the stage of the tune tables of the GPU here (or the device
    named), as rooflinecli.stages.dispatch resolves it (a Pick: stage, class, table)."""
    from rooflinecli import plan

    return plan.picks_for(shapes, dtype, device_name or _device_name())


def tune_dispatch(
    shapes: list[tuple[int, int, int]],
    dtype: str,
    spec_arg: str | None,
    budget_ms: float,
    stage_list: str | None = None,
    progress: Callable[..., None] | None = None,
) -> dict[str, Any]:
    """`roofline tune dispatch`: every stage of the dtype (or `stage_list`) at every shape; per
    class the stage with the best geomean against the reference (dispatch.winners) goes into
    the user's tune table of this GPU (what
    `--stages best` reads first). The document's `dispatch` says what was saved where."""
    from rooflinecli.gpu.timer import Timing
    from rooflinecli.stages import dispatch, gemm

    chosen = gemm.select(stage_list, dtype)
    doc = run_gemm(
        shapes, chosen, spec_arg, dtype=dtype, timing=Timing(budget_ms=budget_ms),
        progress=progress, command="tune dispatch",
    )  # fmt: skip
    created = str(doc.get("created", ""))[:10]
    entries = dispatch.winners((r, f"tune dispatch {created}") for r in doc["records"])
    saved = dispatch.save_user(doc["device"]["name"], entries) if entries else None
    doc["dispatch"] = {
        "saved_to": str(saved) if saved else None,
        "picks": [
            {"dtype": e.dtype, "class": e.shape_class, "stage": e.stage, "params": e.params,
             "from": e.source}
            for e in entries
        ],
    }  # fmt: skip
    return doc


def tune_gemm(
    stage_name: str,
    m: int,
    spec_arg: str | None,
    budget_ms: float,
    progress: Callable[..., None] | None = None,
    dtype: str | None = None,
    n: int | None = None,
    k: int | None = None,
) -> dict[str, Any]:
    """Every variant of a stage's tune_space that compiles without spills, verified and timed
    beside the reference at m x n x k (n, k default to m) in `dtype` (default: the stage's
    first); the fastest verified
    one is saved for `run gemm --tuned`. The document's `tune` says which won, which were
    dropped and where the winner went."""
    from rooflinecli.gpu import device, tune
    from rooflinecli.gpu.timer import Timing
    from rooflinecli.stages import gemm

    if stage_name not in gemm.BY_NAME:
        known = ", ".join(gemm.BY_NAME)
        raise RooflineError(f"unknown stage {stage_name!r}; known: {known}")
    stage = gemm.BY_NAME[stage_name]
    dtype = dtype or stage.dtype
    if dtype not in stage.all_dtypes:
        raise RooflineError(
            f"stage {stage_name} builds for {', '.join(stage.all_dtypes)}, not {dtype}"
        )
    dev = device.info()
    keep, dropped = tune.candidates(stage, dev["arch"])
    if not keep:
        raise RooflineError(f"no variant of {stage_name} compiles without spills")
    chosen = [*keep, gemm.reference_for(dtype)]
    doc = run_gemm(
        [(m, n or m, k or m)],
        chosen,
        spec_arg,
        dtype=dtype,
        timing=Timing(budget_ms=budget_ms),
        progress=progress,
        command="tune gemm",
    )
    win = tune.best(doc["records"])
    saved = tune.save_winner(dev["name"], stage_name, win["params"]) if win else None
    doc["tune"] = {
        "stage": stage_name,
        "dropped": dropped,
        "winner": win and win["stage"],
        "saved_to": str(saved) if saved else None,
    }
    return doc


def run_llm(
    preset: Any,
    gemms: list[Any],
    batches: list[int],
    stages: list[Any],
    spec_arg: str | None,
    dtype: str,
    seed: int = 0,
    timing: Any = None,
    progress: Callable[..., None] | None = None,
    settings: dict[str, Any] | None = None,
    picks: dict[tuple[int, int, int], Any] | None = None,
    work: list[tuple[tuple[int, int, int], list[tuple[Any, str | None]]]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Time the weight GEMMs of one decode step at each batch: one record per stage, GEMM and
    batch (keyed by its workload), and per stage the microseconds of a whole token. With
    `picks` (pick_best over the GEMMs' shapes) each shape runs its pick, and the per-token rows
    are `best` (the picks together), the reference and the roofs. `work` (a
    rooflinecli.plan.RunPlan's, over the GEMMs' shapes): the stages to run per shape."""
    from rooflinecli.core import llm
    from rooflinecli.core.specs import from_dict

    by_shape: dict[tuple[int, int, int], list[tuple[Any, int]]] = {}
    for b in batches:
        for g in gemms:
            by_shape.setdefault(g.shape(b), []).append((g, b))
    measured_doc = run_gemm(
        list(by_shape), stages, spec_arg, dtype=dtype, seed=seed, timing=timing,
        progress=progress, picks=picks, work=work, **extra,
    )  # fmt: skip
    spec = from_dict(measured_doc["spec"])
    records: list[dict[str, Any]] = []
    for b in batches:
        for g in gemms:
            model_rec = llm.gemm_record(preset, g, b, spec, dtype)
            for r in measured_doc["records"]:
                if (r["m"], r["n"], r["k"]) != g.shape(b):
                    continue
                ok = r.get("verified") is True and r.get("time_ms")
                records.append(
                    {
                        **r,
                        "workload": model_rec["workload"],
                        "gemm": g.name,
                        "preset": preset.name,
                        "batch": b,
                        "count": g.count,
                        "crossing_batch": model_rec["crossing_batch"],
                        "time_us_per_token": g.count * r["time_ms"] * 1e3 / b if ok else None,
                        "allowed_us_per_token": model_rec["time_us_per_token"],
                    }
                )
    return {
        **measured_doc,
        "command": "run llm",
        "preset": preset.to_dict(),
        "batches": batches,
        "gemms": [g.name for g in gemms],
        "per_token": llm.per_token(
            records,
            [llm.BEST, *(s.name for s in stages if s.reference)]
            if picks is not None
            else [s.name for s in stages],
            len(gemms),
            batches,
        ),
        "settings": {**measured_doc["settings"], **(settings or {})},
        "records": records,
    }


CHAIN_WAYS = ("best", "best+pdl", "token", "cublas", "torch")
CHAIN_DEFAULT_WAYS = ("best", "cublas", "torch")
# stages the chain does not run where the tune table picks them, with why, and what runs instead
CHAIN_EXCLUDED = {
    "gemv_streamk": (
        "its output failed the check after many graph replays in a 64-GEMV chain on the H200 "
        "(rel. error NaN) though it passed eagerly and from the first replays; its workspace "
        "and tile counters are suspect across back-to-back replays",
        "gemv_splitk",
    ),
}


def run_chain(
    preset: Any,
    batches: list[int],
    dtype: str,
    spec_arg: str | None = None,
    *,
    seed: int = 0,
    warmup: int = 5,
    repeats: int = 30,
    shape: tuple[int, int, int] | None = None,
    ways: Sequence[str] = CHAIN_DEFAULT_WAYS,
    layers: int | None = None,
    log: Callable[[str], None] | None = None,
    calibration: dict[str, Any] | None = None,
    exclude: dict[str, tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """One token's weight GEMMs of `preset` as a dependent chain (rooflinecli.core.chain) at
    each batch, or with `shape` (M, N, K) a chain of that one GEMM (M is the batch): our
    `--stages best` picks, cuBLAS and PyTorch's F.linear, each from a CUDA graph, timed as
    whole tokens interleaved, each verified. "best+pdl": the same picks, with stage 56
    (gemv_pdl, programmatic dependent launch) on every M = 1 GEMM. "token": stage 57
    (decode_token), the whole chain in one persistent launch, at batch 1 to 4. `layers`: at
    most this many (fewer where the GPU's memory does not hold them). `calibration`: a
    `roofline calibrate` document of this GPU (measured in the same run); its HBM read roof is
    recorded and every way's share of it. `exclude` (default CHAIN_EXCLUDED): stage -> (why,
    the stage run instead). The chain document, with the targets checked (`verdicts`)."""
    from rooflinecli import plan
    from rooflinecli.core import chain
    from rooflinecli.gpu import chain_runner
    from rooflinecli.gpu.loop import setup
    from rooflinecli.stages import compiler, gemm

    if dtype not in chain.CHAIN_DTYPES:
        raise RooflineError(f"a chain runs {' or '.join(chain.CHAIN_DTYPES)}, not {dtype}")
    bad = [w for w in ways if w not in CHAIN_WAYS]
    if bad or not ways:
        raise RooflineError(f"unknown chain way {', '.join(bad) or '(none)'}; known: "
                            f"{', '.join(CHAIN_WAYS)}")  # fmt: skip
    if not 1 <= repeats <= 10000 or not 0 <= warmup <= 1000:
        raise RooflineError("chain: repeats is 1..10000 and warm-up 0..1000")
    if shape is not None:
        batches = [shape[0]]
    fulls = [chain.single(*shape) if shape else chain.build(preset, b) for b in batches]
    cp, dev, spec, arch, _cc, _limits = setup(spec_arg)
    reference = gemm.reference_for(dtype)
    shapes = list(dict.fromkeys(s for f in fulls for s in f.shapes))
    picks = plan.picks_for(shapes, dtype, dev["name"])
    stages = {s: p.stage.for_arch(arch) for s, p in picks.items()}
    excluded: dict[str, str] = {}
    for s, st in list(stages.items()):
        why_instead = (CHAIN_EXCLUDED if exclude is None else exclude).get(st.name)
        if why_instead is not None:
            instead = gemm.BY_NAME[why_instead[1]].for_arch(arch)
            if instead.refuses(*s) is None:
                excluded[st.name] = f"{why_instead[0]}; {instead.name} runs instead"
                stages[s] = instead
    pdl_stage = gemm.BY_NAME["gemv_pdl"].for_arch(arch)
    pdl_stages = {s: (pdl_stage if s[0] == 1 and pdl_stage.refuses(*s) is None else st)
                  for s, st in stages.items()}  # fmt: skip
    wanted = [*(stages.values() if "best" in ways else ()),
              *(pdl_stages.values() if "best+pdl" in ways else ())]  # fmt: skip
    if wanted:
        compiler.precompile(list({st.name: st for st in wanted}.values()), arch, dtype)
    read_gbs = None
    if calibration is not None:
        read_gbs = (calibration.get("measurements") or {}).get("hbm_read_gbs")
    records: list[dict[str, Any]] = []
    for full in fulls:
        run = full
        if shape is None:
            copies = 1 + ("torch" in ways)
            fit = chain_runner.fit_layers(cp, preset, full.batch, dtype, copies)
            if fit < 1:
                raise RooflineError(
                    f"out of device memory: not one layer of {preset.name} fits at batch "
                    f"{full.batch} {dtype}"
                )
            want = min(fit, layers or preset.layers)
            if want < preset.layers:
                run = chain.build(preset, full.batch, want)
        # best+pdl only where it differs from best (gemv_pdl takes M = 1)
        differs = any(pdl_stages[x] is not stages[x] for x in full.shapes)
        here = tuple(w for w in ways if w != "best+pdl" or differs)
        recs, _clock = chain_runner.run_chain(
            run, full, dtype, stages, reference, spec, arch, dev["sm_count"], seed=seed,
            warmup=warmup, repeats=repeats, ways=here, log=log, pdl_picks=pdl_stages,
        )  # fmt: skip
        for r in recs:
            chain.roof_shares(r, read_gbs, spec.memory_bandwidth_gbs)
        by = {r["stage"]: r for r in recs}
        cub, tor = by.get("cublas"), by.get("torch")
        fair = chain.fairness(cub.get("time_ms") if cub else None,
                              tor.get("time_ms") if tor else None)  # fmt: skip
        if cub is not None:
            cub.update(fair)
        roofs.add_reference_ratios(recs)
        records += recs
        import gc

        gc.collect()  # the chain's buffers, before the next batch's
        cp.get_default_memory_pool().free_all_blocks()
        _free_torch_cache()
    settings = {
        "seed": seed,
        "warmup": warmup,
        "repeats": repeats,
        "ways": list(ways),
        "stages": "best: one stage per GEMM shape from the tune table",
        "timing": "whole tokens replayed from CUDA graphs, the ways interleaved round by round "
        "(forward on even rounds, backward on odd), CUDA events around each replay on one "
        "stream; every sample kept (samples_ms); the median reported; no L2 flush (the "
        "weights of a token exceed the L2)",
        "check": "float32 reference of the same chain (CuPy matmuls over the same weights), "
        "outputs poisoned first; the first layer's and the last output, of an eager run, a "
        "replayed graph and the last timed replay",
        "tolerance_rule": chain.TOLERANCE_RULE,
        "tracing": "one replayed token per way under CUPTI's activity records (the second of "
        "two: the first pays the tracer's set-up); the traced token is its kernels' span on "
        "the GPU's clock, per GEMM its kernel time and the gap before it; tracing_overhead is "
        "the traced token against the untraced median, tracing_event_overhead the traced "
        "replay's CUDA-event time (which also holds the tracer's delay before the first kernel "
        "starts, tracing_start_delay_us) against it",
        "picks": {"x".join(map(str, s)): p.stage.name for s, p in picks.items()},
        "chain_stages": {"x".join(map(str, s)): st.name for s, st in stages.items()},
        "excluded": excluded,
        "pdl_picks": {"x".join(map(str, s)): st.name for s, st in pdl_stages.items()},
        "ours": "best: the tune table's picks, launched plainly; best+pdl: the same with "
        "gemv_pdl (programmatic dependent launch) on every M = 1 GEMM; token: decode_token, "
        "every GEMM of the chain in one persistent launch (batch 1 to 4)",
        "read_roof": (
            {
                "hbm_read_gbs": read_gbs,
                "source": "roofline calibrate, the same run",
                "device": ((calibration or {}).get("device") or {}).get("name"),
            }
            if read_gbs
            else {"hbm_read_gbs": None, "why": "no calibration given (--calibration)"}
        ),
        "datasheet_gbs": spec.memory_bandwidth_gbs,
    }
    return results.new_document(
        spec.to_dict(), dev, records, command=chain.COMMAND,
        preset=preset.to_dict() if shape is None else None,
        batches=batches, chain_version=results.CHAIN_VERSION,
        environment=results.environment(), settings=settings,
        # the targets are the token's; a chain of one GEMM is a check of the timing instead
        verdicts=chain.verdicts(records, chain_runner.OUR_WAYS) if shape is None else [],
    )  # fmt: skip


def _free_torch_cache() -> None:
    if "torch" in sys.modules:
        try:
            sys.modules["torch"].cuda.empty_cache()
        except Exception:  # a PyTorch without its GPU: nothing cached
            pass
