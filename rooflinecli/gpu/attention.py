"""The attention runner: buffers, the float32 reference, the PyTorch references, launches and
checks of the attention problem kind, which the one runner loop (rooflinecli.gpu.loop) verifies
and times. CuPy (and PyTorch) imported lazily.

Per shape: fresh random Q, K, V (uniform in [-1, 1), rounded to the dtype), the float32
reference O computed by CuPy on the GPU from the same rounded inputs, (batch, head) by
(batch, head) in chunks that bound the score matrix to CHUNK_BYTES. Each stage's output is
poisoned with NaN, launched, checked against the whole reference; then timed interleaved with
PyTorch's scaled_dot_product_attention (flash and cuDNN backends) when PyTorch is importable,
each round running all of them (alternating order); then the output of its last timed launch
is checked too. Without PyTorch the stages are still verified and timed, alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from rooflinecli.core.attention import Shape, record
from rooflinecli.core.elements import element
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import device, loop
from rooflinecli.gpu.arrays import as_f32, poison, store
from rooflinecli.gpu.loop import Kind, Launched, ReferenceRun, setup
from rooflinecli.gpu.runner import ROUNDING_FACTOR, accumulation_error
from rooflinecli.gpu.timer import Launch, Timer, Timing
from rooflinecli.results import Check, RunRecord
from rooflinecli.stages.attention import (
    REFERENCES,
    AttentionStage,
    Reference,
    compile_stage,
    workspace_bytes,
)
from rooflinecli.stages.gemm import cannot_run

CHUNK_BYTES = 1 << 30  # the reference's score matrix, at most this many bytes at a time

_FP32_TOL = (1e-4, 1e-3)


def tolerance(dtype: str, seq: int, head_dim: int, rounding: tuple[float, float] | None):
    """(relative Frobenius, largest element / largest reference element) bounds. fp32: a fixed
    floor plus fp32 accumulation over N + D terms (8*sqrt(N + D)*2^-24). fp16/bf16: twice what
    rounding the reference O to the type leaves on these inputs, plus one unit roundoff of the
    type (Tensor Core stages round P to it before P V), plus the accumulation term."""
    acc = accumulation_error(seq + head_dim)
    if dtype == "fp32" or rounding is None:
        return _FP32_TOL[0] + acc, _FP32_TOL[1] + 4 * acc
    u = element(dtype).unit_roundoff
    return (
        ROUNDING_FACTOR * rounding[0] + u + acc,
        ROUNDING_FACTOR * rounding[1] + 4 * u + 4 * acc,
    )


def tolerance_rule(dtype: str) -> str:
    if dtype == "fp32":
        return f"relative Frobenius <= {_FP32_TOL[0]:g} + 8*sqrt(N+D)*2^-24"
    return (
        f"relative Frobenius <= {ROUNDING_FACTOR:g} x the error of the float32 reference O "
        f"rounded to {dtype} + one {dtype} unit roundoff (P rounded before PV) + "
        "8*sqrt(N+D)*2^-24; largest element: the same with 4 units"
    )


class Problem:
    """Device buffers for one shape and dtype: inputs, the reference, outputs, the check."""

    def __init__(self, cp, shape: Shape, dtype: str, seed: int, scale: float):  # type: ignore[no-untyped-def]
        self.cp, self.shape, self.dtype, self.scale = cp, shape, dtype, scale
        s = shape
        rng = cp.random.default_rng(seed)
        qo = (s.batch, s.heads, s.seq, s.head_dim)
        kv = (s.batch, s.kv_heads, s.seq, s.head_dim)
        self.Q = self._store(rng.random(qo, dtype=cp.float32) * 2 - 1)
        self.K = self._store(rng.random(kv, dtype=cp.float32) * 2 - 1)
        self.V = self._store(rng.random(kv, dtype=cp.float32) * 2 - 1)
        self.O = cp.empty(qo, dtype=self.Q.dtype)
        self.ref = self._reference()
        self.ref_norm = float(cp.linalg.norm(self.ref))
        self.ref_max = float(cp.abs(self.ref).max())
        rounding = None
        if dtype != "fp32":
            gap = self.as_f32(self._store(self.ref)) - self.ref
            rounding = (
                float(cp.linalg.norm(gap)) / self.ref_norm if self.ref_norm else 0.0,
                float(cp.abs(gap).max()) / self.ref_max if self.ref_max else 0.0,
            )
            del gap
        self.rounding = rounding
        self.rel_tol, self.max_tol = tolerance(dtype, s.seq, s.head_dim, rounding)

    def _store(self, x):  # type: ignore[no-untyped-def]
        return store(self.cp, x, self.dtype)

    def as_f32(self, x):  # type: ignore[no-untyped-def]
        return as_f32(self.cp, x, self.dtype)

    def _reference(self):  # type: ignore[no-untyped-def]
        """float32 O from the rounded inputs, a few (batch, head) pairs at a time."""
        cp, s = self.cp, self.shape
        group = s.heads // s.kv_heads
        out = cp.empty((s.batch, s.heads, s.seq, s.head_dim), dtype=cp.float32)
        per_head = 4 * s.seq * s.seq
        step = max(1, min(s.heads, CHUNK_BYTES // per_head))
        bias = None  # causal: -inf above the diagonal, added to each head's scores
        if s.causal:
            above = cp.triu(cp.ones((s.seq, s.seq), dtype=cp.bool_), k=1)
            bias = cp.where(above, cp.float32(-cp.inf), cp.float32(0)).astype(cp.float32)
            del above
        for b in range(s.batch):
            for h0 in range(0, s.heads, step):
                hs = list(range(h0, min(s.heads, h0 + step)))
                kvs = [h // group for h in hs]
                q = self.as_f32(self.Q[b, h0 : h0 + len(hs)])
                k = self.as_f32(self.K[b, kvs])
                v = self.as_f32(self.V[b, kvs])
                sc = cp.matmul(q, k.transpose(0, 2, 1))
                sc *= cp.float32(self.scale)
                if bias is not None:
                    sc += bias
                sc -= sc.max(axis=2, keepdims=True)
                cp.exp(sc, out=sc)
                sc /= sc.sum(axis=2, keepdims=True)
                out[b, h0 : h0 + len(hs)] = cp.matmul(sc, v)
                del sc, q, k, v
        return out

    def poison(self, out=None) -> None:  # type: ignore[no-untyped-def]
        """NaN in every element (any element a kernel misses stays NaN); queued on the stream."""
        o = self.O if out is None else out
        poison(o, self.dtype)

    def check(self, out=None) -> tuple[bool, float, float]:  # type: ignore[no-untyped-def]
        cp = self.cp
        got = self.as_f32(self.O if out is None else out)
        if not bool(cp.isfinite(got).all()):
            return False, math.inf, math.inf
        diff = got - self.ref
        rel = float(cp.linalg.norm(diff)) / self.ref_norm if self.ref_norm else math.nan
        mx = float(cp.abs(diff).max()) / self.ref_max if self.ref_max else math.nan
        return rel <= self.rel_tol and mx <= self.max_tol, rel, mx


def memory_needed(shape: Shape, dtype: str, stages: list[AttentionStage]) -> int:
    """Inputs, outputs (ours and one per reference), the float32 reference and its check, the
    reference's score chunk, the largest stage workspace."""
    s = shape
    qo, kv = s.batch * s.heads * s.seq * s.head_dim, s.batch * s.kv_heads * s.seq * s.head_dim
    elem = element(dtype).nbytes
    chunk = min(CHUNK_BYTES, 4 * s.heads * s.seq * s.seq) * 2 + (4 * s.seq**2 if s.causal else 0)
    ws = max((workspace_bytes(st, s) for st in stages), default=0)
    return elem * (4 * qo + 2 * kv) + 4 * 3 * qo + chunk + ws


def launcher(
    cp, stage: AttentionStage, g: Problem, arch: str
) -> tuple[Callable[[], None], dict[str, Any]]:  # type: ignore[no-untyped-def]  # noqa: E501
    """(a call that runs one forward pass of the stage into g.O, the record fields it adds)."""
    import numpy as np

    s = g.shape
    built = compile_stage(stage, arch, g.dtype, s.head_dim)
    module = cp.RawModule(path=built.cubin_path)
    args: tuple[Any, ...] = (
        np.int32(s.batch), np.int32(s.heads), np.int32(s.kv_heads), np.int32(s.seq),
        np.float32(g.scale), np.int32(1 if s.causal else 0), g.Q, g.K, g.V, g.O,
    )  # fmt: skip
    workspace = None
    if stage.materializes_scores:
        workspace = cp.empty(workspace_bytes(stage, s) // 4, dtype=cp.float32)
        args = (*args, workspace)
    if stage.tma:  # tensor maps after the contract's ten arguments
        from rooflinecli.gpu import tma

        cfg = stage.configs[s.head_dim]
        args = (*args, *tma.attention_extra_args(
            cfg.params, g.Q, g.K, g.V, g.O, s.batch, s.heads, s.kv_heads, s.seq, s.head_dim,
            g.dtype,
        ))  # fmt: skip
    calls = []
    for ln in stage.launches(s):
        fn = module.get_function(ln.entry)
        if ln.smem_bytes > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = ln.smem_bytes
        calls.append((fn, ln))

    def launch() -> None:
        for fn, ln in calls:
            fn(ln.grid, ln.block, args, shared_mem=ln.smem_bytes)

    fn0, ln0 = calls[0]  # the first kernel's resources (each kernel's registers: `kernels`)
    res = built.resources
    local = int(fn0.local_size_bytes)
    meta = {
        "registers": int(fn0.num_regs),
        "smem_bytes": int(fn0.shared_size_bytes) + ln0.smem_bytes,
        "spill_bytes": res.spill_bytes if res is not None else local,
        "local_bytes": local,
        "grid": list(calls[0][1].grid),
        "block": list(calls[0][1].block),
        "params": dict(stage.configs[s.head_dim].params),
        "kernels": [
            {
                "entry": ln.entry,
                "grid": list(ln.grid),
                "block": list(ln.block),
                "registers": int(fn.num_regs),
            }
            for fn, ln in calls
        ],  # fmt: skip
        "workspace_bytes": workspace_bytes(stage, s) or None,
    }
    meta["_keep"] = workspace  # alive as long as the launch
    return launch, meta


# --------------------------------------------------------------------------- PyTorch references


def torch_info() -> dict[str, Any] | None:
    """PyTorch's version and cuDNN's, or None without PyTorch (an optional extra)."""
    try:
        import torch
    except ImportError:
        return None
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"torch": torch.__version__, "cudnn": cudnn}


def _implementation(ref: Reference, info: dict[str, Any]) -> str:
    if ref.backend == "FLASH_ATTENTION":
        return f"FlashAttention-2 (PyTorch {info['torch']} flash backend)"
    return f"cuDNN {info['cudnn']} fused attention (PyTorch {info['torch']} cuDNN backend)"


def torch_launcher(ref: Reference, g: Problem) -> tuple[Callable[[], None], Any, str | None]:
    """(a call running SDPA under the reference's backend on g's buffers, the output holder,
    how GQA was given). The output is a fresh tensor per call (SDPA has no out=); holder[0]
    keeps the last. RooflineError when the backend cannot take the shape."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    cp = g.cp
    tdtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[g.dtype]

    def view(x):  # type: ignore[no-untyped-def]
        if g.dtype == "bf16":  # bf16 bits: through int16, which both sides know
            return torch.as_tensor(x.view(cp.int16), device="cuda").view(torch.bfloat16)
        return torch.as_tensor(x, device="cuda")

    q, k, v = view(g.Q), view(g.K), view(g.V)
    assert q.dtype == tdtype
    backend = getattr(SDPBackend, ref.backend)
    s = g.shape
    holder: list[Any] = [None]
    gqa = s.kv_heads != s.heads

    def call_native() -> None:
        with sdpa_kernel(backend):
            holder[0] = sdpa(q, k, v, is_causal=s.causal, scale=g.scale, enable_gqa=gqa)

    group = s.heads // s.kv_heads

    def call_expanded() -> None:  # K and V repeated per query head inside the call: charged
        ke, ve = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        with sdpa_kernel(backend):
            holder[0] = sdpa(q, ke, ve, is_causal=s.causal, scale=g.scale)

    how = None
    try:
        call_native()
        torch.cuda.synchronize()
        call = call_native
        how = "enable_gqa=True" if gqa else None
    except RuntimeError as exc:
        if not gqa:
            raise RooflineError(f"{ref.name}: {device.first_line(exc)}") from None
        try:
            call_expanded()
            torch.cuda.synchronize()
        except RuntimeError as exc2:
            raise RooflineError(f"{ref.name}: {device.first_line(exc2)}") from None
        call = call_expanded
        how = "K and V expanded to every query head inside each timed call (charged)"
    return call, holder, how


def _as_ours(g: Problem, t: Any):  # type: ignore[no-untyped-def]
    """A torch output as a CuPy array of our element type (bf16: its bits)."""
    import torch

    cp = g.cp
    if g.dtype == "bf16":
        return cp.asarray(t.contiguous().view(torch.int16)).view(cp.uint16)
    return cp.asarray(t.contiguous())


# --------------------------------------------------------------------------- the run


class AttentionProblem:
    """One attention shape for the runner loop (rooflinecli.gpu.loop.Problem): the buffers and
    the float32 reference (Problem), PyTorch's SDPA backends as the library references."""

    def __init__(  # type: ignore[no-untyped-def]
        self, cp, s: Shape, runnable: list[AttentionStage], refs: list[Reference],
        info: dict[str, Any] | None, spec: Spec, arch: str, cc: int, seed: int, dtype: str,
    ) -> None:  # fmt: skip
        scale = 1.0 / math.sqrt(s.head_dim)
        free, _ = cp.cuda.runtime.memGetInfo()
        need = memory_needed(s, dtype, runnable)
        if need > free:
            raise RooflineError(
                f"out of device memory: {s.label} needs {need / 2**30:.1f} GiB, "
                f"{free / 2**30:.1f} GiB free"
            )
        self.g = g = Problem(cp, s, dtype, seed, scale)
        self.cp, self.shape, self.refs, self.info, self.spec = cp, s, refs, info, spec
        self.arch, self.cc, self.dtype = arch, cc, dtype
        self.label = s.label
        self.checked = {
            "tolerance_rel": g.rel_tol,
            "tolerance_max": g.max_tol,
            "rounding_error": g.rounding[0] if g.rounding else None,
            "checked": f"every element of O ({s.batch * s.heads} heads x {s.seq} rows), "
            "against float32 computed by CuPy",
            "scale": scale,
        }

    def record(self, stage: AttentionStage) -> RunRecord:
        model = record(
            stage.name, "stage", self.shape, self.spec, self.dtype,
            materializes_scores=stage.materializes_scores,
            what=stage.what, slower_because=stage.slower_because or None,
            math_instruction=stage.math,
        )  # fmt: skip
        return RunRecord(model, dict(self.checked))

    def skip(self, stage: AttentionStage, refusal: str | None) -> str | None:
        if refusal is None and self.cc < stage.min_cc:
            return f"{stage.name} needs compute capability {stage.min_cc / 10:.1f}"
        why_not = cannot_run(stage, self.arch) if refusal is None else None
        return f"{stage.name} {why_not}" if why_not else refusal

    def launch(self, stage: AttentionStage) -> Launched:
        call, meta = launcher(self.cp, stage, self.g, self.arch)
        return Launched(call, meta, keep=meta.pop("_keep"))

    def reset(self) -> None:
        self.g.poison()

    def check(self) -> Check:
        return Check(*self.g.check())

    def before_last(self) -> Callable[[], None]:
        return self.g.poison  # the last timed launch starts from a poisoned output too

    def references(self) -> tuple[list[RunRecord], list[ReferenceRun]]:
        """Each SDPA backend launched and checked once on the same buffers; a backend that
        cannot take the shape (or an old PyTorch) is a skipped record."""
        g, info = self.g, self.info or {}
        skipped: list[RunRecord] = []
        runs: list[ReferenceRun] = []
        for ref in self.refs:
            model = record(ref.name, "reference", self.shape, self.spec, self.dtype, what=ref.what)
            about = {
                "math_instruction": "library",
                "implementation": _implementation(ref, info),
                "torch_version": info.get("torch"),
            }
            if ref.backend == "CUDNN_ATTENTION":
                about["cudnn_version"] = info.get("cudnn")
            rec = RunRecord(model, dict(self.checked), about)
            try:
                call, holder, how = torch_launcher(ref, g)
                rec.first = Check(*g.check(_as_ours(g, holder[0])))
            except Exception as exc:  # a backend that cannot take the shape, an old PyTorch
                why = exc.message if isinstance(exc, RooflineError) else device.first_line(exc)
                rec.skip(why)
                skipped.append(rec)
                continue
            rec.verified, rec.launch = rec.first.ok, {"gqa": how}
            runs.append(
                ReferenceRun(
                    rec,
                    Launch(ref.name, call),
                    partial(_check_holder, g, holder),
                    release=partial(holder.__setitem__, 0, None),
                )
            )
        return skipped, runs


def _check_holder(g: Problem, holder: list[Any]) -> Check:
    return Check(*g.check(_as_ours(g, holder[0])))


ATTENTION = Kind(
    "interleaved with the references, alternating order each round", names_each_reference=True
)


def run_attention(
    shapes: list[Shape],
    stages: list[AttentionStage],
    spec_arg: str | None,
    dtype: str,
    seed: int = 0,
    timing: Timing | None = None,
    progress: Callable[..., None] | None = None,
    references: bool = True,
    work: Sequence[tuple[Shape, Sequence[tuple[AttentionStage, str | None]]]] | None = None,
) -> tuple[dict[str, Any], Spec, list[dict[str, Any]], dict[str, Any] | None]:
    """Verify and time every stage at every shape, each interleaved with the PyTorch references
    (when importable, and `references`). Returns (device, spec, records, torch versions).
    `work`: per shape, the stages to run or record as skipped with the refusal decided for each
    (rooflinecli.plan); without it, every stage at every shape with its own refusal."""
    timing = timing or Timing()
    cp, dev, spec, arch, cc, limits = setup(spec_arg)
    info = torch_info() if references and dtype != "fp32" else None
    refs = list(REFERENCES) if info else []
    timer = Timer(timing)
    if work is None:
        work = [(s, [(st, st.refuses(s, dtype)) for st in stages]) for s in shapes]

    def problem(s: Shape, items: Sequence[tuple[AttentionStage, str | None]]) -> AttentionProblem:
        runnable = [st for st, refusal in items if refusal is None]  # their workspaces count
        return AttentionProblem(cp, s, runnable, refs, info, spec, arch, cc, seed, dtype)

    records = loop.run(cp, work, problem, ATTENTION, timer, limits, progress)
    return dev, spec, records, info
