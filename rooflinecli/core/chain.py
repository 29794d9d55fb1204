"""One decoded token's weight GEMMs as a dependent chain, as serving engines run it. Pure Python.

The chain is built from the one list of a preset's weight GEMMs (rooflinecli.core.llm
`weight_gemms`): per layer, in that list's order, each GEMM of a layer (count == layers), then
each GEMM of the token (the LM head). Each GEMM reads the output of an earlier one (INPUT_OF):

    x -> qkv -> o_proj -> ffn_gate, ffn_up -> ffn_down (on gate's output) -> the next layer's qkv
    ... -> lm_head

A GEMM whose K is less than its source's N (o_proj on qkv's fused output) reads the first M*K
elements of that output as its M x K input: at batch 1 the first K columns, beyond that the same
number of bytes, contiguous. Every way of running the chain reads the same elements, and the
float32 reference too, so the comparison and the dependency are the same everywhere.

Weights are distinct per GEMM and layer (nothing stays in L2 between layers), uniform in
[-1, 1) times sqrt(3 / K): variance 1/K, so each product keeps its input's RMS and the chain of
161 GEMMs stays finite and far from zero (it is linear: no norm or activation function).

Also here: how many layers fit the GPU's memory, the per-token scaling of a shortened chain, the
verification bound, and the mapping of a replayed token's kernel spans (a timeline) onto GEMMs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rooflinecli.core import llm, model
from rooflinecli.core.elements import element
from rooflinecli.errors import RooflineError

# Which GEMM's output each GEMM reads: the latest earlier GEMM of that name; "x" is the token's
# input (the embedding) when there is none yet.
INPUT_OF: dict[str, str] = {
    "qkv": "ffn_down",
    "o_proj": "qkv",
    "ffn_gate": "o_proj",
    "ffn_up": "o_proj",
    "ffn_down": "ffn_gate",
    "lm_head": "ffn_down",
}
COMMAND = "run llm --chain"  # a chain document's command
CHAIN_DTYPES = ("fp16", "bf16")
MAX_BATCH = 64
# What the buffers besides the weights may take (activations, the float32 reference's upcast
# weight, CuPy's and PyTorch's pools, cuBLAS workspaces): kept free when choosing the layers.
HEADROOM_BYTES = 3 << 30
# The weights' scale: uniform [-1, 1) has variance 1/3; times sqrt(3 / K) it is 1/K.
WEIGHT_RANGE = 1.0


def weight_scale(k: int) -> float:
    """Each weight is uniform in [-s, s): variance s^2 / 3 = 1 / K, so y = x W keeps x's RMS."""
    return math.sqrt(3.0 / k)


@dataclass(frozen=True)
class Link:
    """One GEMM of the chain: C (M x N) = A (M x K) W (K x N), A the output of `source`."""

    index: int
    name: str  # the weight GEMM's name (llm.WeightGemm.name)
    layer: int | None  # None: once per token (the LM head)
    m: int
    n: int
    k: int
    source: int  # the index of the GEMM whose output it reads; -1: the token's input

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    @property
    def label(self) -> str:
        return self.name if self.layer is None else f"L{self.layer}.{self.name}"

    def weight_bytes(self, dtype: str) -> int:
        return self.k * self.n * model.DTYPE_BYTES[dtype]

    def bytes_ideal(self, dtype: str) -> int:
        """Weights, input and output, each moved once."""
        return (self.k * self.n + self.m * self.k + self.m * self.n) * model.DTYPE_BYTES[dtype]

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


@dataclass(frozen=True)
class Chain:
    """The GEMMs of one token in launch order, with what the whole token would be."""

    what: str  # the preset's name, or "MxNxK" for a chain of one GEMM
    batch: int
    d_in: int  # the token input's width (K of the first GEMM)
    links: tuple[Link, ...]
    layers: int  # of the model (0: a chain of one GEMM)
    layers_run: int
    per_layer: tuple[str, ...] = ()  # the GEMM names of one layer

    @property
    def early(self) -> int:
        """The GEMM whose output is checked early: the first layer's last, else the first."""
        if self.layers_run and self.per_layer:
            return len(self.per_layer) - 1
        return 0

    @property
    def last(self) -> int:
        return len(self.links) - 1

    def flops(self) -> int:
        return sum(x.flops for x in self.links)

    def bytes_ideal(self, dtype: str) -> int:
        return sum(x.bytes_ideal(dtype) for x in self.links)

    def weight_bytes(self, dtype: str) -> int:
        return sum(x.weight_bytes(dtype) for x in self.links)

    @property
    def shapes(self) -> list[tuple[int, int, int]]:
        return list(dict.fromkeys(x.shape for x in self.links))


def _check_batch(batch: int) -> None:
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise RooflineError(f"chain batch {batch!r} is outside 1..{MAX_BATCH}")


def build(preset: llm.Preset, batch: int, layers: int | None = None) -> Chain:
    """The chain of one token of `preset` at `batch`, over `layers` of its layers (default
    all), from llm.weight_gemms: the one list of the preset's weight GEMMs."""
    _check_batch(batch)
    run = preset.layers if layers is None else layers
    if not 1 <= run <= preset.layers:
        raise RooflineError(f"chain layers {run} is outside 1..{preset.layers}")
    gemms = llm.weight_gemms(preset)
    unknown = [g.name for g in gemms if g.name not in INPUT_OF]
    if unknown:
        raise RooflineError(f"no chain input is known for {', '.join(unknown)}")
    per_layer = [g for g in gemms if g.count == preset.layers]
    once = [g for g in gemms if g.count != preset.layers]
    links: list[Link] = []
    latest: dict[str, int] = {}
    d_in = per_layer[0].k if per_layer else once[0].k

    def add(g: llm.WeightGemm, layer: int | None) -> None:
        src = latest.get(INPUT_OF[g.name], -1)
        width = d_in if src < 0 else links[src].n
        if width < g.k:
            raise RooflineError(
                f"chain: {g.name} reads {g.k} inputs but its source gives {width} "
                f"({INPUT_OF[g.name] if src >= 0 else 'the token input'})"
            )
        links.append(Link(len(links), g.name, layer, batch, g.n, g.k, src))
        latest[g.name] = len(links) - 1

    for layer in range(run):
        for g in per_layer:
            add(g, layer)
    for g in once:
        add(g, None)
    return Chain(preset.name, batch, d_in, tuple(links), preset.layers, run,
                 tuple(g.name for g in per_layer))  # fmt: skip


def single(m: int, n: int, k: int) -> Chain:
    """A chain of one GEMM (M x N x K) on the token input: to set beside `run gemm --no-flush`."""
    _check_batch(m)
    for v in (n, k):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise RooflineError(f"chain shape: {v!r} is not a positive whole number")
    return Chain(f"{m}x{n}x{k}", m, k, (Link(0, "gemm", None, m, n, k, -1),), 0, 0)


def parse_shape(text: str) -> tuple[int, int, int]:
    """'MxNxK' -> (M, N, K)."""
    parts = text.lower().split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        dims = ()
    if len(dims) != 3 or min(dims) < 1:
        raise RooflineError(f"--chain-shape: {text!r} is not MxNxK (three positive numbers)")
    return dims[0], dims[1], dims[2]


# --- memory and scale -----------------------------------------------------------------------


def layers_that_fit(preset: llm.Preset, batch: int, dtype: str, free_bytes: int,
                    copies: int) -> int:  # fmt: skip
    """The most layers whose weights (`copies` of them: one per layout that a way reads) and
    activations fit in `free_bytes` with HEADROOM_BYTES left; 0 where not even one does."""
    full = build(preset, batch, 1)
    e = model.DTYPE_BYTES[dtype]
    layer = [x for x in full.links if x.layer is not None]
    once = [x for x in full.links if x.layer is None]

    def need(links: Sequence[Link]) -> int:
        return sum(copies * x.weight_bytes(dtype) + x.m * x.n * (e + 2 * 4) for x in links)

    budget = free_bytes - HEADROOM_BYTES - need(once)
    per = need(layer)
    if budget < per:
        return 0
    return min(preset.layers, budget // per)


def token_scale(run: Chain, full: Chain, dtype: str) -> float:
    """What a shortened chain's time is multiplied by to stand for the whole token: the token's
    bytes over the bytes run (a decode token streams its weights: time follows bytes)."""
    return full.bytes_ideal(dtype) / run.bytes_ideal(dtype)


SCALE_RULE = "measured time x (token bytes / bytes of the layers run)"


# --- verification ---------------------------------------------------------------------------

BOUND_FACTOR = 2.0


def tolerance(dtype: str, gemms: int, k_max: int) -> float:
    """The relative Frobenius bound on a chain's output after `gemms` GEMMs against the float32
    reference of the same chain over the same (rounded) weights and input.

    Each GEMM rounds its output to `dtype` once: round to nearest leaves a relative error of at
    most the unit roundoff u per element (2^-8 bf16, 2^-11 fp16), at most u / sqrt(3) RMS,
    independent from GEMM to GEMM. A product with weights of variance 1/K maps an error vector
    with the gain it gives the signal (both are generic vectors to a random matrix), so
    relative errors pass through the later GEMMs unchanged in size and add in quadrature: after
    G GEMMs at most sqrt(G) u / sqrt(3), 2.9% for bf16 over 161 GEMMs, 0.36% for fp16. A bound
    per element cannot be used: after 161 GEMMs every output mixes every earlier rounding, and
    a few elements near zero carry large relative errors. The bound is BOUND_FACTOR sqrt(G) u
    (3.5x that figure: 10% for bf16 over 161, 1.2% for fp16; after the first layer's 5 GEMMs
    1.7% and 0.2%), plus float32 accumulation, 8 sqrt(K) 2^-24 per GEMM, added the same way.
    A wrong chain (a GEMM skipped, a wrong input, another layer's weights) gives an unrelated
    output, at a relative error of about 1.4: far outside."""
    u = element(dtype).unit_roundoff
    acc = 8 * math.sqrt(k_max) * 2.0**-24
    return math.sqrt(gemms) * (BOUND_FACTOR * u + acc)


TOLERANCE_RULE = (
    "relative Frobenius <= sqrt(G) x (2 u + 8 sqrt(K) 2^-24), G the GEMMs up to the output, "
    "u the dtype's unit roundoff (2^-8 bf16, 2^-11 fp16), K the largest; RMS within 0.1..10x "
    "the float32 reference's"
)
RMS_RANGE = (0.1, 10.0)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    rel_error: float
    tolerance: float
    rms: float
    reason: str | None = None


def judge(rel: float, rms: float, ref_rms: float, finite: bool, bound: float) -> Verdict:
    """A checked output: finite, within `bound` of the reference, and not trivially small
    (its RMS within RMS_RANGE of the reference's, which the weights' scale keeps near the
    input's)."""
    if not finite:
        return Verdict(False, math.inf, bound, rms, "not finite (NaN: an element never written)")
    if not ref_rms > 0:
        return Verdict(False, rel, bound, rms, "the reference is zero")
    lo, hi = RMS_RANGE
    if not lo * ref_rms <= rms <= hi * ref_rms:
        return Verdict(
            False, rel, bound, rms, f"RMS {rms:.3g} against the reference's {ref_rms:.3g}"
        )
    if not rel <= bound:
        return Verdict(False, rel, bound, rms, f"relative error {rel:.3g} above {bound:.3g}")
    return Verdict(True, rel, bound, rms)


# --- the timeline of one replayed token ----------------------------------------------------


class Span(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def end_ns(self) -> int: ...


# Kernels that finish the GEMM before them rather than start a new one: cuBLAS's split-K
# reductions (and any stage's own reduce kernel).
AUXILIARY = re.compile(r"splitKreduce|reduce|Reduce")


def gemm_spans(spans: Sequence[Span], gemms: int) -> list[list[Span]] | str:
    """The kernels of one replayed token grouped per GEMM (in start order): a kernel whose name
    is AUXILIARY joins the GEMM before it, every other one starts the next GEMM. A string (the
    reason) where they do not map onto `gemms` GEMMs."""
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.end_ns))
    groups: list[list[Span]] = []
    for s in ordered:
        if groups and AUXILIARY.search(s.name):
            groups[-1].append(s)
        else:
            groups.append([s])
    if len(groups) != gemms:
        return f"{len(ordered)} kernels form {len(groups)} GEMMs, not the chain's {gemms}"
    return groups


def timeline(spans: Sequence[Span], gemms: int) -> dict[str, Any]:
    """Per GEMM its kernel time (the sum of its kernels' end - start) and the gap before it (its
    first kernel's start minus the previous GEMM's last kernel end; 0 for the first), and the
    traced token (last end - first start). Gaps are measured, never the token minus kernels."""
    groups = gemm_spans(spans, gemms)
    if isinstance(groups, str):
        return {"timeline_reason": groups}
    kernel_us = [sum(s.end_ns - s.start_ns for s in g) / 1e3 for g in groups]
    gaps = [0.0] + [
        (groups[i][0].start_ns - max(s.end_ns for s in groups[i - 1])) / 1e3
        for i in range(1, len(groups))
    ]
    first = groups[0][0].start_ns
    last = max(s.end_ns for g in groups for s in g)
    token = (last - first) / 1e3
    return {
        "kernel_us": kernel_us,
        "gap_before_us": [max(g, 0.0) for g in gaps],
        "overlap_us": [max(-g, 0.0) for g in gaps],  # a kernel that began before the last ended
        "kernels": [len(g) for g in groups],
        "traced_token_us": token,
        "gap_share": sum(max(g, 0.0) for g in gaps) / token if token > 0 else None,
    }


def stamp_timeline(stamps: Sequence[Sequence[Sequence[int]]], untraced_ms: float) -> dict[str, Any]:
    """The timeline of a one-launch token from its blocks' own stamps (kernels/57_decode_token.cu
    with STAMPS=1): stamps[g][b] = (begin, input in, end) of block b's run of GEMM g, in
    nanoseconds of %globaltimer, (0, 0, 0) where the block has no run there.

    Per GEMM, means over the blocks that run it: `kernel_us` (begin to end), `wait_us` (begin to
    input in: the hand-over from the GEMM it reads) and `gap_before_us` (from the block's
    previous run's end, or for the first GEMM from the earliest begin: what lies between its
    runs). `traced_token_us` is the earliest begin to the latest end; `tail_us` the latest end
    after the blocks' mean end (what the sums leave out). `kernel_gap_sum_us` (kernels + gaps
    + tail) against the untraced token is `timeline_error`; `stamp_resolution_ns` the smallest
    step between two distinct stamps (the clock's tick, or less often seen)."""
    g_count = len(stamps)
    runs = [[tuple(int(v) for v in b) for b in g if b[2]] for g in stamps]
    if not g_count or not all(runs):
        missing = sum(1 for r in runs if not r)
        return {"timeline_reason": f"no stamps for {missing} of {g_count} GEMMs"}
    first = min(b[0] for b in runs[0])
    blocks = len(stamps[0])
    last_end: list[int | None] = [None] * blocks
    kernel_us, wait_us, gap_us = [], [], []
    for g in stamps:
        k = w = gap = 0.0
        n = 0
        for i, (begin, ready, end) in enumerate(tuple(int(v) for v in b) for b in g):
            if not end:
                continue
            k += end - begin
            w += ready - begin
            before = last_end[i]
            gap += begin - (first if before is None else before)
            last_end[i] = end
            n += 1
        kernel_us.append(k / n / 1e3)
        wait_us.append(w / n / 1e3)
        gap_us.append(gap / n / 1e3)
    ends = [e for e in last_end if e is not None]
    token = (max(ends) - first) / 1e3
    tail = (max(ends) - sum(ends) / len(ends)) / 1e3
    values = sorted({v for r in runs for b in r for v in b})
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    summed = sum(kernel_us) + sum(gap_us) + tail
    out: dict[str, Any] = {
        "kernel_us": kernel_us,
        "gap_before_us": gap_us,
        "wait_us": wait_us,
        "traced_token_us": token,
        "tail_us": tail,
        "gap_share": sum(gap_us) / token if token > 0 else None,
        "wait_share": sum(wait_us) / token if token > 0 else None,
        "kernel_gap_sum_us": summed,
        "stamp_resolution_ns": min(steps) if steps else None,
        "stamped_blocks": blocks,
    }
    if untraced_ms:
        out["timeline_error"] = summed / (untraced_ms * 1e3) - 1.0
    return out


# --- fairness of the library baseline -------------------------------------------------------

FAIR_WITHIN = 0.03  # the cuBLAS chain within 3% of PyTorch's graph chain


def fairness(cublas_ms: float | None, torch_ms: float | None) -> dict[str, Any]:
    """Whether the cuBLAS chain is a fair baseline: within FAIR_WITHIN of PyTorch's graph chain
    of the same run (both medians over the same rounds)."""
    if not cublas_ms or not torch_ms:
        return {"cublas_over_torch": None, "fair_baseline": None,
                "fairness": "not checked: no PyTorch chain to compare with"}  # fmt: skip
    ratio = cublas_ms / torch_ms
    fair = abs(ratio - 1.0) <= FAIR_WITHIN
    words = (
        f"fair: the cuBLAS chain is {ratio:.3f}x PyTorch's graph chain (within {FAIR_WITHIN:.0%})"
        if fair
        else f"NOT a fair baseline: the cuBLAS chain is {ratio:.3f}x PyTorch's graph chain "
        f"(more than {FAIR_WITHIN:.0%} apart)"
    )
    return {"cublas_over_torch": ratio, "fair_baseline": fair, "fairness": words}


# --- the read roof and the targets ----------------------------------------------------------

# (batch, cuBLAS chain over ours at least, ours at least this share of the measured read roof)
TARGETS: dict[int, tuple[float, float | None]] = {1: (1.10, 0.85), 16: (1.00, 0.80)}
# a model's own, where its chain is held to others (a GQA model's narrower K/V GEMMs)
MODEL_TARGETS: dict[str, dict[int, tuple[float, float | None]]] = {"llama-3-8b": {1: (1.05, None)}}
TIMELINE_WITHIN = 0.03  # kernel times plus gaps against the event-timed token


def roof_shares(rec: dict[str, Any], read_gbs: float | None, datasheet_gbs: float | None) -> None:
    """Add to a chain record the token's bytes over its time as GB/s, and that as a share of the
    measured HBM read roof (`roofline calibrate`'s read kernel) and of the datasheet bandwidth;
    the time the token would take at the read roof."""
    t_ms = rec.get("time_ms")
    nbytes = rec.get("token_bytes") or rec.get("bytes_ideal")
    if not t_ms or not nbytes:
        return
    gbs = nbytes / (t_ms * 1e-3) / 1e9
    rec["token_gbs"] = gbs
    if read_gbs:
        rec["read_roof_gbs"] = read_gbs
        rec["read_roof_share"] = gbs / read_gbs
        rec["read_roof_token_us"] = nbytes / (read_gbs * 1e9) * 1e6
    if datasheet_gbs:
        rec["datasheet_gbs"] = datasheet_gbs
        rec["datasheet_share"] = gbs / datasheet_gbs


def verdicts(records: Sequence[dict[str, Any]], ours: Sequence[str],
             model: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The targets checked, one line each, whatever they turn out to be: per batch of the
    targets (`model`'s own in MODEL_TARGETS, else TARGETS) and each of our ways, cuBLAS's chain
    time over ours and our share of the measured read roof; per way with a timeline, kernel
    times plus gaps against the event-timed token (within 3%), and how much tracing lengthened
    the traced token (under 3%)."""
    targets = MODEL_TARGETS.get(model or "", TARGETS)
    out: list[dict[str, Any]] = []
    by = {(r.get("batch"), r.get("stage")): r for r in records}
    for r in records:
        batch, way = r.get("batch"), r.get("stage")
        if way in ours and batch in targets:
            ratio_min, share_min = targets[batch]
            cub = by.get((batch, "cublas"))
            ratio = None
            if cub and cub.get("time_ms") and r.get("time_ms"):
                ratio = cub["time_ms"] / r["time_ms"]
            share = r.get("read_roof_share")
            over = f"cuBLAS chain / {way} >= {ratio_min:.2f}"
            out.append(_verdict(batch, way, "cublas_over_ours", ratio, ratio_min, over))
            if share_min is not None:
                roof = f"{way} >= {share_min:.0%} of the measured HBM read roof"
                out.append(_verdict(batch, way, "read_roof_share", share, share_min, roof))
        if r.get("tracing_overhead") is not None:
            cost = r["tracing_overhead"]
            out.append({"batch": batch, "way": way, "what": "tracing_cost", "value": cost,
                        "target": TIMELINE_WITHIN, "ok": abs(cost) <= TIMELINE_WITHIN,
                        "line": f"{way}: tracing changes the traced token (its kernels' span) "
                                "by under 3%"})  # fmt: skip
        if r.get("timeline_error") is not None:
            err = r["timeline_error"]
            out.append({"batch": batch, "way": way, "what": "timeline_sum", "value": err,
                        "target": TIMELINE_WITHIN, "ok": abs(err) <= TIMELINE_WITHIN,
                        "line": f"{way}: kernel times + gaps within 3% of the token"})  # fmt: skip
    return out


def _verdict(batch: Any, way: Any, what: str, value: float | None, target: float,
             line: str) -> dict[str, Any]:  # fmt: skip
    return {"batch": batch, "way": way, "what": what, "value": value, "target": target,
            "ok": None if value is None else value >= target, "line": line}  # fmt: skip
