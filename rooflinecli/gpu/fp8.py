"""FP8 GEMM on the GPU: the problem (FP8 codes made on the GPU, per-tensor float32 scales, the
float64 product of the dequantised inputs), launches of the FP8 stages (rooflinecli/stages/fp8.py),
the check, and cuBLASLt's FP8 GEMM through PyTorch's torch._scaled_mm as the reference when
PyTorch is installed (without it the stages still run and verify; the record says which).

The timed comparison runs at beta = 0: torch._scaled_mm takes a bias, not beta.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rooflinecli.core import fp8
from rooflinecli.core.elements import NAN_BITS
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import loop
from rooflinecli.gpu.arrays import from_bf16_bits, store
from rooflinecli.stages import compiler
from rooflinecli.stages.fp8 import (
    ARCH,
    C_BOX,
    FAST_REFERENCE,
    PROMOTED_REFERENCE,
    Fp8Stage,
    accumulation_text,
    of_registry,
)

REFERENCE = "cuBLASLt FP8 via torch._scaled_mm (per-tensor scales, out_dtype bf16)"
B_LAYOUT = "nk: B given as N x K (K-major), the layout models store weights in"
_TORCH_DTYPES = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


class Problem:
    """Device buffers for one shape: A (M x K) and B (N x K) FP8 codes drawn fresh (uniform reals
    in [-2, 2] rounded to the format, on the GPU), float32 scales laid out as `scaling` says
    (core.fp8.SCALINGS: per tensor, per row and column, DeepGEMM's blocks), the float64
    reference alpha * (sa dec(A)) (sb dec(B))^T + beta * C0, and the outputs (16-bit bits as
    uint16)."""

    def __init__(  # type: ignore[no-untyped-def]
        self,
        cp,
        m: int,
        n: int,
        k: int,
        alpha: float = 1.0,
        beta: float = 0.0,
        seed: int = 0,
        fmt: str = "e4m3",
        out: str = "bf16",
        scaling: str = "tensor",
    ) -> None:
        self.cp, self.m, self.n, self.k = cp, m, n, k
        self.alpha, self.beta, self.fmt, self.out = alpha, beta, fmt, out
        self.scaling = scaling
        rng = cp.random.default_rng(seed)
        self.A = fp8.random_codes(rng, (m, k), fmt, xp=cp)
        self.B = fp8.random_codes(rng, (n, k), fmt, xp=cp)
        self.scale_a, self.scale_b = fp8.random_scales(rng, scaling, m, n, k, xp=cp)
        table = cp.asarray(fp8.decode_table(fmt))
        # float64: exact sums of exact products, under the scales
        self.ref = fp8.scaled_product(
            table[self.A], table[self.B], scaling, self.scale_a, self.scale_b, xp=cp
        )
        self.ref *= float(alpha)
        self.C0 = None
        if beta != 0.0:
            c0 = rng.random((m, n), dtype=cp.float32) * 2 - 1
            self.C0 = self._store(c0)
            self.ref += float(beta) * self.as_f64(self.C0)
        self.C = cp.empty((m, n), dtype=cp.uint16)
        # int16, not uint16: the bits PyTorch takes through DLPack and views as bf16 / fp16
        self.C_ref = cp.empty((m, n), dtype=cp.int16)
        self.ref_norm = float(cp.linalg.norm(self.ref))
        self.ref_max = float(cp.abs(self.ref).max())
        r = self.as_f64(self._store(self.ref.astype(cp.float32))) - self.ref
        self.rounding = (
            float(cp.linalg.norm(r)) / self.ref_norm if self.ref_norm else 0.0,
            float(cp.abs(r).max()) / self.ref_max if self.ref_max else 0.0,
        )

    def _store(self, x):  # type: ignore[no-untyped-def]
        return store(self.cp, x, self.out).view(self.cp.uint16)

    def as_f64(self, bits):  # type: ignore[no-untyped-def]
        cp = self.cp
        bits = bits.view(cp.uint16)
        if self.out == "bf16":
            return from_bf16_bits(cp, bits).astype(cp.float64)
        return bits.view(cp.float16).astype(cp.float64)

    def poison(self, out=None) -> None:  # type: ignore[no-untyped-def]
        """NaN in every element (beta == 0), or C's initial values back (beta != 0)."""
        c = self.C if out is None else out
        if self.C0 is None:
            c.view(self.cp.uint16).fill(NAN_BITS[self.out])
        else:
            c.view(self.cp.uint16)[...] = self.C0
        if hasattr(self.cp, "cuda"):
            self.cp.cuda.runtime.deviceSynchronize()

    def check(self, span: int | None, out=None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        """The output against the reference, under core.fp8.tolerance for this span of K."""
        cp = self.cp
        got = self.as_f64(self.C if out is None else out)
        rel_tol, max_tol = fp8.tolerance(self.k, span, self.rounding)
        if not bool(cp.isfinite(got).all()):
            return {"ok": False, "rel": math.inf, "max": math.inf, "rel_tol": rel_tol}
        diff = got - self.ref
        rel = float(cp.linalg.norm(diff)) / self.ref_norm if self.ref_norm else math.nan
        mx = float(cp.abs(diff).max()) / self.ref_max if self.ref_max else math.nan
        return {
            "ok": rel <= rel_tol and mx <= max_tol,
            "rel": rel,
            "max": mx,
            "rel_tol": rel_tol,
            "max_tol": max_tol,
            "tolerance_rule": fp8.tolerance_rule(span),
        }


def _source(stage: Fp8Stage) -> str:
    from rooflinecli.paths import data_dir

    return (data_dir("kernels") / stage.source).read_text()


def _job(stage: Fp8Stage, defines: dict[str, int | str]) -> compiler.Job:
    """The build of the stage's source (stage 32 or 34) with these defines."""
    name = stage.source.removesuffix(".cu")
    return compiler.source_job(_source(stage), name, stage.entry, ARCH, defines)


def build_job(stage: Fp8Stage, fp8_format: str, out: str, scaling: str = "tensor") -> compiler.Job:
    """The build a run launches for this format, output type and scaling (what `run gemm
    --dry-run` compiles, so that its registers and spills are the run's)."""
    return _job(stage, stage.defines(fp8_format, out, scaling))


def precompile(
    builds: list[tuple[Fp8Stage, str, str, dict[str, int]]], scaling: str = "tensor"
) -> list[compiler.Compiled | RooflineError]:
    """(stage, format, output type, extra defines) builds for the scales' layout, in parallel
    worker processes, into the cubin cache that `launcher` then reads."""
    jobs = [_job(s, {**s.defines(f, o, scaling), **extra}) for s, f, o, extra in builds]
    return compiler.compile_many(jobs)


def launcher(  # type: ignore[no-untyped-def]
    cp, stage: Fp8Stage, g: Problem, extra: dict[str, int] | None = None, out=None
) -> tuple[Callable[[], None], dict[str, Any]]:
    """(a call that launches the stage on g's problem into g.C, or `out`, the record fields it
    adds); `extra` adds compile-time defines (e.g. SKIP_KBLOCK for the wrong kernel)."""
    import numpy as np

    from rooflinecli.gpu import tma

    defines = {**stage.defines(g.fmt, g.out, g.scaling), **(extra or {})}
    name = stage.source.removesuffix(".cu")
    built = compiler.compile_source(_source(stage), name, stage.entry, ARCH, defines)
    fn = cp.RawModule(path=built.cubin_path).get_function(stage.entry)
    sm_count = int(cp.cuda.Device().attributes["MultiProcessorCount"])
    grid, block, smem = stage.launch(g.m, g.n, sm_count)  # the stage's one geometry
    fn.max_dynamic_shared_size_bytes = smem
    p = stage.params
    c = g.C if out is None else out
    maps = []
    if not stage.gemv:  # stage 58 reads A and B with plain loads: no maps
        tma_a = tma.encode_tiled(g.A, (g.k, g.m), (p["BK"], stage.a_box_rows), "fp8")
        # a block's share of B: all BN rows, or half of them in a pair (the other half multicast)
        tma_b = tma.encode_tiled(g.B, (g.k, g.n), (p["BK"], stage.b_box_rows), "fp8")
        maps = [tma_a, tma_b]
    # the TMA-store epilogue's map over the very output the launch writes (16-bit rows: N is a
    # multiple of 16 under the FP8 contract, so whole 16-byte units)
    if stage.tma_c:
        maps.append(tma.encode_tiled(c, (g.n, g.m), C_BOX, g.out))
    # stage 34's scratch: partials and flags, zeroed once (the kernel puts its flags back)
    ws = stage.workspace_bytes(grid[0])
    scratch = [cp.zeros(-(-ws // 4), dtype=cp.float32)] if ws else []
    args = (
        np.int32(g.m), np.int32(g.n), np.int32(g.k), np.float32(g.alpha), g.A, g.B,
        np.float32(g.beta), c, g.scale_a, g.scale_b, *maps, *scratch,
    )  # fmt: skip

    def launch() -> None:
        fn(grid, block, args, shared_mem=smem)

    meta = {
        "registers": int(fn.num_regs),
        "smem_bytes": int(fn.shared_size_bytes) + smem,
        "spill_bytes": built.resources.spill_bytes if built.resources else int(fn.local_size_bytes),
        "grid": list(grid),
        "block": list(block),
        # the output tiles and the SMs they ran on: the verdict's waves (core/waves.py)
        "tiles": -(-g.m // p["BM"]) * -(-g.n // p["BN"]),
        "sm_count": sm_count,
        "params": dict(defines),
        "b_layout": B_LAYOUT,
        "math": stage.math,
        "accumulation": stage.accumulation,
    }
    return launch, meta


def torch_reason() -> str | None:
    """Why torch._scaled_mm cannot be the reference here, or None."""
    try:
        import torch
    except ImportError as exc:
        return f"PyTorch is not installed ({exc})"
    if not hasattr(torch, "_scaled_mm"):
        return f"PyTorch {torch.__version__} has no torch._scaled_mm"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    return None


def reference_reason(g: Problem) -> str | None:
    """Why cuBLASLt cannot be the reference of g's problem, or None: PyTorch missing, or block
    scales, which torch._scaled_mm does not take here."""
    if g.scaling == "block":
        return "torch._scaled_mm takes no 128-wide block scales"
    return torch_reason()


def scaled_mm(g: Problem, fast_accum: bool = False, out: Any = None) -> Callable[[], None]:
    """torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype, use_fast_accum) on g's very
    buffers (DLPack, no copies), writing g.C_ref (or `out`, int16): a is M x K row-major, b
    N x K row-major, so b.t() is the column-major K x N operand _scaled_mm requires.
    use_fast_accum=False (PyTorch's default) has cuBLASLt promote its sums
    (CUBLASLT_MATMUL_DESC_FAST_ACCUM off); True keeps the Tensor Cores' reduced-precision
    accumulator over all of K, as an unpromoted stage does. Scales per tensor are scalars; per
    row and column, PyTorch's row-wise form (scale_a M x 1, scale_b 1 x N). Raises RooflineError
    without PyTorch, and for block scales, which _scaled_mm does not take here."""
    why = reference_reason(g)
    if why:
        raise RooflineError(f"no FP8 reference: {why}")
    import torch

    f8 = getattr(torch, _TORCH_DTYPES[g.fmt])
    a = torch.from_dlpack(g.A).view(f8)
    b = torch.from_dlpack(g.B).view(f8)
    # alpha folded into scale_a (computed once, outside the timed launches)
    rows = g.scaling == "row"
    sa = (torch.from_dlpack(g.scale_a) * float(g.alpha)).reshape((g.m, 1) if rows else ())
    sb = torch.from_dlpack(g.scale_b).reshape((1, g.n) if rows else ())
    out_dtype = torch.bfloat16 if g.out == "bf16" else torch.float16
    c = torch.from_dlpack(g.C_ref if out is None else out).view(out_dtype)

    def launch() -> None:  # into C_ref itself: no copy is charged to the reference
        torch._scaled_mm(
            a, b.t(), scale_a=sa, scale_b=sb, out_dtype=out_dtype, use_fast_accum=fast_accum, out=c
        )

    return launch


# --------------------------------------------------------------------------- the runner loop

FAST = FAST_REFERENCE  # the registry's use_fast_accum reference (rooflinecli/stages/gemm.py)
CHECK = (
    "float64 product of the dequantised FP8 inputs (decoded exactly), times the per-tensor "
    "scales; output poisoned first; the first launch and the last timed launch checked"
)
# what a record says of its scales (rooflinecli.core.fp8.SCALINGS)
SCALES_TEXT = {
    "tensor": "float32, per tensor (scale_a, scale_b)",
    "row": "float32, per row of A and per column of C (scale_a[M], scale_b[N])",
    "block": "float32, per row of A and 128 of K (scale_a[M][K/128]) and per 128 x 128 block of "
    "B (scale_b[N/128][K/128])",
}
CONTRACT = {
    "a_layout": "mk: A M x K row-major",
    "b_layout": B_LAYOUT,
    "scales": SCALES_TEXT["tensor"],
    "output": "bf16",
    "beta_in_timing": "beta = 0 in the timed comparison: torch._scaled_mm takes a bias, not beta",
}


def fp8_stage(stage: Any) -> Fp8Stage:
    """The FP8 geometry (rooflinecli/stages/fp8.py) of a registry stage of an FP8 source."""
    return of_registry(stage)


class Fp8GemmProblem:
    """One FP8 GEMM shape for the runner loop (rooflinecli.gpu.loop.Problem): Problem's buffers
    and float64 reference, the FP8 stages launched through `launcher`, and cuBLASLt's two
    accumulation modes (torch._scaled_mm default: promoted; use_fast_accum: not) as the
    references, each stage paired with the mode its own accumulation matches."""

    def __init__(  # type: ignore[no-untyped-def]
        self, cp, shape: tuple[int, int, int], references: list[Any], spec: Any,
        cc: int, alpha: float, seed: int, fmt: str = "e4m3", scaling: str = "tensor",
    ) -> None:  # fmt: skip
        m, n, k = shape
        try:
            self.g = Problem(cp, m, n, k, alpha, 0.0, seed, fmt, "bf16", scaling=scaling)
        except cp.cuda.memory.OutOfMemoryError:
            raise RooflineError(f"out of device memory at {m}x{n}x{k}") from None
        self.cp, self.shape, self.refs, self.spec, self.cc = cp, shape, references, spec, cc
        self.fmt = fmt
        self.label = f"{m}x{n}x{k}"
        self.sm_count = int(cp.cuda.Device().attributes["MultiProcessorCount"])
        self._span: int | None = None  # the stage being checked: its promotion span

    def _checked(self, span: int | None) -> dict[str, Any]:
        rel_tol, max_tol = fp8.tolerance(self.g.k, span, self.g.rounding)
        return {
            "tolerance_rel": rel_tol,
            "tolerance_max": max_tol,
            "rounding_error": self.g.rounding[0],
            "tolerance_rule": fp8.tolerance_rule(span),
        }

    def record(self, stage: Any) -> Any:
        from rooflinecli.core import roofs
        from rooflinecli.results import RunRecord

        g = self.g
        model = roofs.model_record(stage, g.m, g.n, g.k, self.spec, g.alpha, 0.0, "fp8")
        model.update(CONTRACT, fp8_format=self.fmt, scales=SCALES_TEXT[self.g.scaling])
        span = None if stage.reference else fp8_stage(stage).promote_span
        if stage.reference:
            model["accumulation"] = (
                accumulation_text(None)
                if stage.name == FAST
                else ("cuBLASLt's promoted FP32 accumulation (fast accumulation off)")
            )
        else:
            model["accumulation"] = fp8_stage(stage).accumulation
        return RunRecord(model, self._checked(span))

    def skip(self, stage: Any, refusal: str | None) -> str | None:
        if self.cc < stage.min_cc:
            return f"{stage.name} needs compute capability {stage.min_cc / 10:.1f}"
        return refusal

    def launch(self, stage: Any) -> Any:
        from rooflinecli.gpu.loop import Launched

        fs = fp8_stage(stage)
        self._span = fs.promote_span
        call, meta = launcher(self.cp, fs, self.g)
        meta["math"] = fs.math
        meta["paired_with"] = self.paired_name(stage)
        return Launched(call, meta)

    def paired_name(self, stage: Any) -> str:
        """The reference whose accumulation matches the stage's: promoted stages beside
        cuBLASLt's default, unpromoted ones beside use_fast_accum."""
        return fp8_stage(stage).paired_reference

    def reset(self) -> None:
        self.g.poison()

    def check(self) -> Any:
        return self._check(self._span)

    def _check(self, span: int | None, out: Any = None) -> Any:
        from rooflinecli.results import Check

        c = self.g.check(span, out)
        return Check(bool(c["ok"]), c["rel"], c["max"])

    def before_last(self) -> Callable[[], None] | None:
        return None  # beta = 0: every launch writes all of C

    def references(self) -> tuple[list[Any], list[Any]]:
        """cuBLASLt in both modes, each into its own output, launched and checked once; without
        PyTorch their records say why they did not run, and the stages still run and verify."""
        from rooflinecli.gpu.loop import ReferenceRun
        from rooflinecli.gpu.timer import Launch

        skipped: list[Any] = []
        runs: list[Any] = []
        why = reference_reason(self.g)
        for ref in self.refs:
            rec = self.record(ref)
            rec.about = {"library": REFERENCE, "use_fast_accum": ref.name == FAST}
            if why:
                rec.skip(f"no FP8 reference: {why}")
                skipped.append(rec)
                continue
            out = self.g.C_ref if not runs else self.cp.empty_like(self.g.C_ref)
            launch = scaled_mm(self.g, fast_accum=ref.name == FAST, out=out)
            span = None  # cuBLASLt's promotion interval is its own: the bound over all of K
            self.g.poison(out)
            launch()
            self.cp.cuda.runtime.deviceSynchronize()
            rec.launch = {"library": REFERENCE, "use_fast_accum": ref.name == FAST}
            rec.first = self._check(span, out)
            rec.verified = rec.first.ok

            def last(span: int | None = span, out: Any = out) -> Any:
                return self._check(span, out)

            runs.append(ReferenceRun(rec, Launch(ref.name, launch), last))
        return skipped, runs


FP8 = loop.Kind(
    "interleaved with both cuBLASLt FP8 modes, alternating order each round; compared with the "
    "mode whose accumulation matches the stage's (promoted: default; not promoted: "
    "use_fast_accum)",
    names_each_reference=True,
    reference_noise=True,
)


def run_gemm(  # type: ignore[no-untyped-def]
    shapes, stages, spec_arg, alpha, seed, timing, progress, work, fp8_format, scaling="tensor"
) -> tuple[dict[str, Any], Any, list[dict[str, Any]]]:
    """The FP8 problem kind through the one runner loop: the FP8 stages (launched and checked
    here) beside cuBLASLt's two accumulation modes, beta = 0 (torch._scaled_mm has no beta).
    The shapes were checked against the FP8 contract where the run was planned
    (rooflinecli.plan.gemm_kind)."""
    from rooflinecli.gpu.timer import Timer
    from rooflinecli.stages.gemm import BY_NAME

    cp, dev, spec, _arch, cc, limits = loop.setup(spec_arg)
    references = [BY_NAME[PROMOTED_REFERENCE], BY_NAME[FAST]]
    if work is None:
        ladder = [s for s in stages if not s.reference]
        work = [(shape, [(s, s.refuses(*shape)) for s in ladder]) for shape in shapes]
    work = loop.shaped(work, dev["sm_count"])
    builds: dict[tuple[str, tuple[tuple[str, int], ...]], tuple[Fp8Stage, str, str, dict]] = {
        s.build_key: (fp8_stage(s), fp8_format, "bf16", {})
        for _shape, items in work
        for s, why in items
        if why is None
    }
    for built in precompile(list(builds.values()), scaling):  # parallel: the cache fills once
        if isinstance(built, RooflineError):
            raise built

    def problem(shape: tuple[int, int, int], _items: object) -> Fp8GemmProblem:
        return Fp8GemmProblem(cp, shape, references, spec, cc, alpha, seed, fp8_format, scaling)

    return dev, spec, loop.run(cp, work, problem, FP8, Timer(timing), limits, progress)
