"""The reference a record is held to, decided here once: the reference record its
`compared_with` names, of the same precision and shape. Placing records (`add_ratios`, when a
run is written and when a document is placed under another roof set), the verdict, the report,
the generated pages and the benchmark summaries all look it up through `of`.

A record that names none is given one when it is placed: the first verified reference of its
precision and shape (`first`). Documents written before records named theirs get the same on
load (results.upgrade through `name_missing`), which is the reference their ratios were taken
against. Pure Python: no GPU, no output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# the fields that name an attention record's shape (rooflinecli.core.attention.SHAPE_FIELDS)
ATTENTION_SHAPE = ("batch", "heads", "kv_heads", "seq", "head_dim", "causal")


def shape_key(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a record's shape is: (M, N, K) for a GEMM, the attention fields for attention."""
    if rec.get("op") == "attention":
        return ("attention", *(rec.get(f) for f in ATTENTION_SHAPE))
    if rec.get("op") == "chain":  # a token's chain: its workload (preset:chain:bBATCH)
        return ("chain", rec.get("workload"))
    return (rec.get("m"), rec.get("n"), rec.get("k"))


def problem(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    """The precision and shape a record and its reference share."""
    return (rec.get("dtype"), *shape_key(rec))


def is_reference(rec: Mapping[str, Any]) -> bool:
    return rec.get("kind") == "reference"


def first(rec: Mapping[str, Any], records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The reference a record that names none is given: the first verified reference of its
    precision and shape (attention has one per PyTorch backend)."""
    key = problem(rec)
    return next(
        (
            r
            for r in records
            if is_reference(r) and r.get("verified") is not False and problem(r) == key
        ),
        None,
    )


def of(rec: Mapping[str, Any], records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The reference `rec` is held to: the record of its precision and shape that its
    `compared_with` names; a reference that names none is its own. None: it names none, or
    none of that name is among `records`."""
    name = rec.get("compared_with")
    if not name:
        return rec if is_reference(rec) else None  # type: ignore[return-value]
    key = problem(rec)
    return next(
        (r for r in records if is_reference(r) and r.get("stage") == name and problem(r) == key),
        None,
    )


def group_reference(records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The reference of a group of records of one precision and shape (a `run llm` weight
    GEMM's): its first reference record."""
    return next((r for r in records if is_reference(r)), None)


def timed_beside(names: Sequence[str], wanted: str | None = None) -> int:
    """Which of the references a stage was timed beside (by name, in timing order) its record
    is compared with, and names in `compared_with`: the one its problem pairs it with (FP8: the
    cuBLASLt mode whose accumulation matches the stage's) where that one was timed, else the
    first."""
    return names.index(wanted) if wanted is not None and wanted in names else 0


def name_missing(records: Sequence[dict[str, Any]]) -> None:
    """Records that carry a ratio to a reference but name none name the one it was taken
    against (in place): the first verified reference of their precision and shape. A reference
    that names none is held to itself."""
    for r in records:
        if r.get("compared_with") or r.get("pct_of_reference") is None or is_reference(r):
            continue
        ref = first(r, records)
        if ref is not None and ref is not r:
            r["compared_with"] = ref["stage"]


def add_ratios(records: list[dict[str, Any]]) -> None:
    """pct_of_reference for every record (in place), against the reference it is held to (`of`);
    a record that names none is given `first`.

    A record timed interleaved with its reference carries `reference_time_ms`, the reference's
    median over the same rounds: the ratio uses that (clock drift hits both). Others use the
    reference record's own median."""
    for r in records:
        if not r.get("compared_with"):
            given = first(r, records)
            if given is not None and given is not r and r.get("tflops"):
                r["compared_with"] = given["stage"]
        ref = of(r, records)
        mine = r.get("tflops")
        if ref is None or not mine or ref is r:
            r["pct_of_reference"] = 100.0 if ref is r and mine else None
            continue
        paired = r.get("reference_time_ms")
        if paired and r.get("time_ms"):
            r["pct_of_reference"] = 100.0 * paired / r["time_ms"]
        elif ref.get("tflops"):
            r["pct_of_reference"] = 100.0 * mine / ref["tflops"]
        else:
            r["pct_of_reference"] = None
