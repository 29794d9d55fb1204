"""The verdict under a table, in words: for each stage, which roof binds, how far below it the
stage sits, and what the next rung of the ladder changes.

    Compute-bound: AI 683 >> ridge 14 FLOP/byte, so the FP32 roof (67 TFLOP/s) binds every stage.
    double_buffer: at 67% of the roof and 88% of cublas. Next, multistage (1.04x): warp ...

Everything comes from the records (their `roof`, `ai_ideal`, `ridge_point`, `pct_of_roof`,
`pct_of_reference`, `what`, `slower_because`), never from today's stage registry, so an old
document reads as it was made; a record without `what` (documents made before records carried
it) names the next rung without describing it. `run llm` records get one line per weight GEMM
(the best stage and the reference) instead of one per stage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeGuard

from rooflinecli.core import reference, waves
from rooflinecli.core.reference import shape_key

KINDS = ("stage", "reference", "user")


def _num(v: float) -> str:
    """An intensity or a ridge as prose: 683, 14, 2.7, 0.25."""
    if v >= 10:
        return f"{v:,.0f}"
    return f"{v:.2g}"


def _pct(v: float) -> str:
    return f"{v:.0f}%" if v >= 10 else f"{v:.1f}%"


def _given(v: Any) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def covers(r: dict[str, Any]) -> bool:
    """A record the verdict speaks for: a stage or reference placed on a roofline."""
    return (
        r.get("kind") in KINDS
        and r.get("roof") in ("compute", "memory")
        and (_given(r.get("ai_ideal")) and _given(r.get("ridge_point")))
    )


def explains(r: dict[str, Any]) -> bool:
    """A record whose failure or skip its verdict line states (`run llm` lines are per GEMM)."""
    return covers(r) and not r.get("workload")


def roof_name(r: dict[str, Any]) -> str:
    """The compute roof in words: FP32, FP16 Tensor Core, FP16 mma.sync (from roof_key)."""
    key = str(r.get("roof_key") or r.get("peak_key") or "")
    if not key:
        return "compute"
    name = key.split("_")[0].upper()
    if "mma_sync" in key:
        return f"{name} mma.sync"
    return f"{name} Tensor Core" if "tensor" in key else name


def _relation(ai: float, ridge: float) -> str:
    """How an intensity stands to the ridge: >> (10x or more), >=, <, << (a tenth or less)."""
    q = ai / ridge if ridge else math.inf
    return ">>" if q >= 10 else ">=" if q >= 1 else "<" if q > 0.1 else "<<"


def bound(r: dict[str, Any]) -> str:
    """'compute-bound (AI 683 >> ridge 14)': which roof binds at the ideal intensity."""
    ai, ridge = float(r["ai_ideal"]), float(r["ridge_point"])
    return f"{r['roof']}-bound (AI {_num(ai)} {_relation(ai, ridge)} ridge {_num(ridge)})"


def bandwidth(r: dict[str, Any]) -> float | None:
    """The memory roof in GB/s: the record's, or its peak over its ridge (documents made before
    records carried bandwidth_gbs)."""
    bw, peak, ridge = r.get("bandwidth_gbs"), r.get("peak_tflops"), r.get("ridge_point")
    if _given(bw):
        return float(bw)
    return 1e3 * peak / ridge if _given(peak) and _given(ridge) and ridge > 0 else None


def roof_words(r: dict[str, Any]) -> str:
    """'the FP32 roof (67 TFLOP/s)' or 'the memory roof (4,800 GB/s)'."""
    if r["roof"] == "memory":
        bw = bandwidth(r)
        return f"the memory roof ({bw:,.0f} GB/s)" if bw else "the memory roof"
    peak = r.get("peak_tflops")
    tail = f" ({peak:,.4g} TFLOP/s)" if _given(peak) else ""
    return f"the {roof_name(r)} roof{tail}"


def _short_roof(r: dict[str, Any]) -> str:
    return "the memory roof" if r["roof"] == "memory" else f"the {roof_name(r)} roof"


def _same_roof(recs: Sequence[dict[str, Any]]) -> bool:
    keys = {
        (r["roof"], round(float(r["ai_ideal"]), 6), round(float(r["ridge_point"]), 6),
         roof_name(r), r.get("peak_tflops"), r.get("bandwidth_gbs"))
        for r in recs
    }  # fmt: skip
    return len(keys) == 1


def lead(r: dict[str, Any], model: bool) -> str:
    """The one line that says which roof binds, when it is the same for every row."""
    ai, ridge = float(r["ai_ideal"]), float(r["ridge_point"])
    kind = "Compute" if r["roof"] == "compute" else "Memory"
    said = f"{kind}-bound: AI {_num(ai)} {_relation(ai, ridge)} ridge {_num(ridge)} FLOP/byte"
    if model:
        return f"{said}: every stage can reach {roof_words(r)}."
    return f"{said}, so {roof_words(r)} binds every stage."


def _achieved_gbs(r: dict[str, Any]) -> float | None:
    t, b = r.get("time_ms"), r.get("bytes_ideal")
    return b / (t * 1e-3) / 1e9 if _given(t) and _given(b) and t > 0 else None


def speed(r: dict[str, Any]) -> float | None:
    """TFLOP/s: under Nsight Compute (`profile`), ncu's own kernel time (older profile
    documents timed the replayed launch with events, 11-353x too slow)."""
    for key in ("tflops_ncu", "tflops"):
        if _given(r.get(key)) and r[key] > 0:
            return float(r[key])
    return None


def _pct_of_roof(r: dict[str, Any]) -> float | None:
    mine, attain = speed(r), r.get("attainable_tflops")
    if _given(r.get("tflops_ncu")) and mine is not None and _given(attain) and attain > 0:
        return 100.0 * mine / attain
    return float(r["pct_of_roof"]) if _given(r.get("pct_of_roof")) else None


def _pct_of_ref(r: dict[str, Any], ref: dict[str, Any] | None) -> float | None:
    if ref is not None and _given(r.get("tflops_ncu")) and _given(ref.get("tflops_ncu")):
        return 100.0 * r["tflops_ncu"] / ref["tflops_ncu"]
    return float(r["pct_of_reference"]) if _given(r.get("pct_of_reference")) else None


def _position(r: dict[str, Any], ref: dict[str, Any] | None, named: bool = True) -> str:
    """'at 69% of the FP32 roof and 91% of cublas' (memory roof: with the GB/s); 'the roof'
    when the lead line has named it."""
    where = f"at {_pct(_pct_of_roof(r) or 0.0)} of {_short_roof(r) if named else 'the roof'}"
    gbs, bw = _achieved_gbs(r), bandwidth(r)
    if r["roof"] == "memory" and gbs is not None and bw and not r.get("tflops_ncu"):
        where += f" ({gbs:,.0f} of {bw:,.0f} GB/s)"
    pct = _pct_of_ref(r, ref)
    name = r.get("compared_with") or (ref or {}).get("stage")
    if r.get("kind") == "reference":
        where += " (the reference)"
    elif pct is not None and name:
        where += f" and {_pct(pct)} of {name}"
    return where


def _failure(r: dict[str, Any]) -> str | None:
    if r.get("error"):
        return str(r["error"])
    if r.get("verified") is False:
        rel = r.get("rel_error")
        err = f" (relative error {rel:.3g})" if _given(rel) else ""
        return f"FAILED verification{err}: its speed is not reported"
    return None


def _base(name: Any) -> str:
    return str(name).split("@")[0]


def _next(r: dict[str, Any], nxt: dict[str, Any] | None) -> str:
    """'Next, multistage (1.04x): what it changes' (none between variants of one stage)."""
    if nxt is None or _base(nxt["stage"]) == _base(r["stage"]):
        return ""
    mine, theirs = speed(r), speed(nxt)
    ratio = f" ({theirs / mine:.2f}x)" if mine and theirs else ""
    what = nxt.get("what")
    return f" Next, {nxt['stage']}{ratio}" + (f": {what}." if what else ".")


def stage_line(
    r: dict[str, Any],
    before: dict[str, Any] | None,
    nxt: dict[str, Any] | None,
    ref: dict[str, Any] | None,
    with_bound: bool,
) -> str:
    """One stage's verdict (see the module docstring)."""
    head = f"{r['stage']}: " + (f"{bound(r)}; " if with_bound else "")
    failed = _failure(r)
    if failed:
        return f"{r['stage']}: {failed}."
    mine = speed(r)
    if mine is not None and _pct_of_roof(r) is not None:
        text = head + _position(r, ref, named=with_bound) + "."
        theirs = speed(before) if before is not None else None
        if (
            before is not None
            and theirs is not None
            and mine < theirs
            and r.get("kind") != "reference"
            and _base(before["stage"]) != _base(r["stage"])
        ):
            why = r.get("slower_because")
            text += f" Slower than {before['stage']}" + (f": {why}." if why else ".")
        launched = waves.sentence(r)  # what it launched, for records that say so
        if launched and r.get("kind") != "reference":
            text += f" {launched[0].upper()}{launched[1:]}."
    else:  # a model: where its load instructions alone would leave it
        text = head + _by_instruction(r)
    return text + (_next(r, nxt) if r.get("kind") != "reference" else "")


def _by_instruction(r: dict[str, Any]) -> str:
    """A model's row: how much of the roof its load instructions alone would allow."""
    if r.get("kind") == "reference":
        return "the reference (a library call)."
    ai, ridge = r.get("ai_instruction"), float(r["ridge_point"])
    if not _given(ai):
        return f"up to {r['attainable_tflops']:,.4g} TFLOP/s."
    if ai >= ridge:
        return f"AI instr {_num(ai)} >= ridge: its loads alone keep it compute-bound."
    at, peak = r.get("attainable_instruction_tflops"), r.get("attainable_tflops")
    if _given(at) and _given(peak) and at >= peak:
        return f"AI instr {_num(ai)}: its loads alone would not hold it below the roof."
    share = f"{_pct(100 * at / peak)} of the roof" if _given(at) and _given(peak) else "less"
    return f"AI instr {_num(ai)}: {share} if no load hit a cache."


def _workload_line(recs: list[dict[str, Any]]) -> str:
    """`run llm`: one line per weight GEMM at a batch: the roof, the best stage, the reference."""
    r0 = recs[0]
    name = r0.get("gemm") or r0.get("workload")
    shape = f"{r0['m']}x{r0['n']}x{r0['k']}"
    ref = reference.group_reference(recs)
    timed = [
        r for r in recs if r.get("kind") != "reference" and speed(r) and _pct_of_roof(r) is not None
    ]
    text = f"{name} ({shape}): {bound(r0)}"
    if timed:
        best = max(timed, key=lambda r: speed(r) or 0.0)
        text += f"; best stage {best['stage']} " + _position(best, reference.of(best, recs))
    if ref and _pct_of_roof(ref) is not None:
        text += f"; {ref['stage']} at {_pct(_pct_of_roof(ref) or 0.0)}"
    return text + "."


def lines(records: Sequence[dict[str, Any]]) -> list[str]:
    """The verdict of a table's records, one line each (empty when none is on a roofline)."""
    mine = [r for r in records if covers(r)]
    if not mine:
        return []
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in mine:
        key = (r.get("dtype"), *shape_key(r), r.get("workload"))
        groups.setdefault(key, []).append(r)
    if any(r.get("workload") for r in mine):  # run llm: per weight GEMM
        return [_workload_line(g) for g in groups.values()]
    out: list[str] = []
    model = not any(speed(r) for r in mine)
    placed = [r for r in mine if not _failure(r)]
    common = bool(placed) and _same_roof(placed)
    if common:
        out.append(lead(placed[0], model))
    for recs in groups.values():
        stages = [r for r in recs if r.get("kind") != "reference"]
        after = {id(a): b for a, b in zip(stages, stages[1:], strict=False)}
        before: dict[str, Any] | None = None
        for r in recs:
            ref = reference.of(r, recs)
            out.append(stage_line(r, before, after.get(id(r)), ref, with_bound=not common))
            if r.get("kind") != "reference" and speed(r):
                before = r
    return out
