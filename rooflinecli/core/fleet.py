"""The GPU that falls behind: each GPU's speed against its fleet's, as a robust z-score.

Pure arithmetic over records that name their GPU (`gpu`, as rooflinecli.results.merge writes
it). GPUs are compared only with GPUs of their own model. The rule, per model:

1. per row (stage, shape, dtype), each GPU's time: the median of its repeats;
2. each GPU's log-ratio to the row's median over the GPUs (above 0: slower);
3. each GPU's score: the median of its log-ratios over the rows it ran, so a card slow on every
   stage stands out while one noisy row does not;
4. the scores' robust z: (score - median) / max(1.4826 x MAD, SPREAD). SPREAD is the
   card-to-card spread cards of one model are taken to show (docs/fleet.md): a fleet tighter
   than that is not made to look noisier than it is, and MAD of a handful of cards is never
   taken as nearly zero;
5. a GPU is flagged when its z is above THRESHOLD and it is at least MIN_SLOWDOWN_PCT slower
   than the median: clear against the fleet's noise and large enough to matter (slower only:
   a faster card is reported, never flagged).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any, NamedTuple

from rooflinecli.core import roofs

SPREAD = 0.005  # card-to-card spread (a log-ratio, about 0.5%), the floor of the scale
THRESHOLD = 3.0  # robust z above which a GPU is flagged
MIN_SLOWDOWN_PCT = 2.0  # ... when at least this much slower than the median
MAD_SCALE = 1.4826  # MAD x this estimates a normal's standard deviation
MIN_GPUS = 3  # fewer GPUs of a model: no median to compare with


def gpu_key(record: dict[str, Any]) -> str:
    """How a record's GPU is told apart: its label (host and index), else its UUID."""
    gpu = record.get("gpu") or {}
    return str(gpu.get("label") or gpu.get("uuid") or "?")


def gpu_model(record: dict[str, Any]) -> str:
    gpu = record.get("gpu") or {}
    return str(gpu.get("name") or record.get("device_name") or "?")


def row_key(record: dict[str, Any]) -> tuple[Any, ...]:
    return (
        str(record.get("stage")),
        str(record.get("dtype")),
        roofs.shape_key(record),
        record.get("workload"),
    )


def row_time(record: dict[str, Any]) -> float | None:
    """A record's time: the median of its repeats, else its time_ms; None for a failed or
    untimed one (a failed check is never fast)."""
    if record.get("verified") is False or record.get("error"):
        return None
    samples = record.get("samples_ms")
    if samples:
        return float(statistics.median(samples))
    t = record.get("time_ms")
    return float(t) if isinstance(t, int | float) and t > 0 else None


def robust_z(values: list[float], floor: float) -> tuple[float, float, list[float]]:
    """(median, scale, z of each value): scale = max(MAD_SCALE x MAD, floor)."""
    center = statistics.median(values)
    mad = statistics.median(abs(v - center) for v in values)
    scale = max(MAD_SCALE * mad, floor)
    return center, scale, [(v - center) / scale for v in values]


class Row(NamedTuple):
    """One GPU on one row: its time, its log-ratio to the row's median and the row's z."""

    gpu: str
    stage: str
    dtype: str
    shape: tuple[Any, ...]
    workload: Any
    time_ms: float
    ratio: float  # time / the row's median time
    z: float


class Card(NamedTuple):
    """One GPU's verdict: its score over its rows and the score's robust z."""

    gpu: str
    model: str
    rows: int
    slowdown_pct: float  # exp(score - the fleet's median score) - 1, in percent
    z: float
    flagged: bool


class Group(NamedTuple):
    """One model's GPUs: the cards, their rows, the scale used, and whether it could say."""

    model: str
    cards: list[Card]
    rows: list[Row]
    scale: float
    conclusive: bool


def analyse(
    records: Iterable[dict[str, Any]], threshold: float = THRESHOLD, spread: float = SPREAD
) -> list[Group]:
    """Every model's GPUs, ranked by how far behind they fall (the rule of this module)."""
    by_model: dict[str, dict[tuple[Any, ...], dict[str, float]]] = {}
    gpus: dict[str, list[str]] = {}
    for rec in records:
        t = row_time(rec)
        model, key = gpu_model(rec), gpu_key(rec)
        gpus.setdefault(model, [])
        if key not in gpus[model]:
            gpus[model].append(key)
        if t is not None:
            by_model.setdefault(model, {}).setdefault(row_key(rec), {})[key] = t
    groups = []
    for model, cards in gpus.items():
        groups.append(_group(model, cards, by_model.get(model, {}), threshold, spread))
    return groups


def _group(
    model: str,
    cards: list[str],
    table: dict[tuple[Any, ...], dict[str, float]],
    threshold: float,
    spread: float,
) -> Group:
    rows: list[Row] = []
    logs: dict[str, list[float]] = {c: [] for c in cards}
    for (stage, dtype, shape, workload), times in table.items():
        if len(times) < MIN_GPUS:
            continue
        mid = statistics.median(times.values())
        ratios = {g: math.log(t / mid) for g, t in times.items()}
        _, _, zs = robust_z(list(ratios.values()), spread)
        for (g, r), z in zip(ratios.items(), zs, strict=True):
            logs[g].append(r)
            rows.append(Row(g, stage, dtype, shape, workload, times[g], math.exp(r), z))
    scored = [c for c in cards if logs[c]]
    if len(scored) < MIN_GPUS:
        out = [Card(c, model, len(logs[c]), math.nan, math.nan, False) for c in cards]
        return Group(model, out, rows, spread, False)
    scores = [statistics.median(logs[c]) for c in scored]
    center, scale, zs = robust_z(scores, spread)
    out = []
    for c, s, z in zip(scored, scores, zs, strict=True):
        slow = 100.0 * math.expm1(s - center)
        out.append(
            Card(c, model, len(logs[c]), slow, z, z > threshold and slow >= MIN_SLOWDOWN_PCT)
        )
    out += [Card(c, model, 0, math.nan, math.nan, False) for c in cards if not logs[c]]
    out.sort(key=lambda c: -c.z if not math.isnan(c.z) else math.inf)
    return Group(model, out, rows, scale, True)


def verdict(groups: list[Group], threshold: float = THRESHOLD) -> str:
    """The verdict in words."""
    flagged = [c for g in groups for c in g.cards if c.flagged]
    told = [g for g in groups if g.conclusive]
    if not told:
        return (
            f"inconclusive: no model has {MIN_GPUS} or more GPUs with rows in common "
            "(a GPU is compared only with GPUs of its own model)"
        )
    n = sum(len(g.cards) for g in told)
    if not flagged:
        return (
            f"no GPU falls behind: {n} GPU(s) of {len(told)} model(s) within z {threshold:g} "
            "of their fleet's median"
        )
    parts = [f"{c.gpu} ({c.model}) {c.slowdown_pct:+.1f}%, z {c.z:.1f}" for c in flagged]
    return f"{len(flagged)} GPU(s) fall behind (z above {threshold:g}): " + "; ".join(parts)
