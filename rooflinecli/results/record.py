"""A run's record, typed (`RunRecord`, `Check`, `Repeats`, `Pairing`) until `written()` makes it
the document's dict, and the identity of a record (what pairs records across documents)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

from rooflinecli.core import reference, roofs
from rooflinecli.errors import RooflineError

# --------------------------------------------------------------------------- a run's record
# The runner (rooflinecli.gpu.loop) builds each record of a run as a RunRecord, part by part as
# the stage is launched, checked and timed, and writes it as the document's dict once, with
# written(): here, where the schema is.


class Check(NamedTuple):
    """What comparing one output with the reference found."""

    ok: bool
    rel_error: float  # relative Frobenius error
    max_rel_error: float  # largest element's error / the reference's largest element


class Repeats(NamedTuple):
    """Timed repeats of one launch: every sample, the SM clock over them, how they were queued,
    and with a noise target (--max-noise) the noise reached."""

    samples_ms: list[float]
    clock: dict[str, Any]  # rooflinecli.gpu.nvml's summary: {} without NVML
    method: str | None  # timing_method
    noise_pct: float | None = None
    noise_target_met: bool | None = None


class Pairing(NamedTuple):
    """The references a stage was timed beside: the first one's samples of the same rounds and,
    where the kind names each reference (attention), every verified one's median."""

    compared_with: str
    reference_time_ms: float | None  # None when that reference failed its check
    reference_samples_ms: list[float]
    timing: str
    medians: tuple[tuple[str, float], ...] = ()  # (reference, median ms)


class RunRecord:
    """One stage, or one library reference, at one shape of a run. `model` is the record before
    anything ran (work, bytes, the roof: rooflinecli.core); the rest is what the run found, set
    part by part by the runner loop. to_dict() writes it with the fields in the order the
    documents have always had them. (A plain class: a dataclass would cost every command about
    1 ms of start-up to create, as rooflinecli.present.View says.)"""

    __slots__ = (
        "model", "checked", "about", "launch", "occupancy_pct", "blocks_per_sm", "verified",
        "error", "first", "conversion_ms", "repeats", "last", "time_ms", "paired", "timing",
    )  # fmt: skip

    def __init__(
        self, model: dict[str, Any], checked: dict[str, Any], about: dict[str, Any] | None = None
    ) -> None:
        self.model = model
        self.checked = checked  # how its output is checked: tolerances (attention: what, scale)
        self.about = about or {}  # a library reference: what it is
        self.launch: dict[str, Any] | None = None  # registers, shared memory, grid, block, ...
        self.occupancy_pct: float | None = None
        self.blocks_per_sm: int | None = None
        self.verified: bool | None = None  # None: skipped
        self.error: str | None = None
        self.first: Check | None = None  # the first launch's output
        self.conversion_ms: float | None = None  # a B layout conversion alone (charged)
        self.repeats: Repeats | None = None  # a reference's: every repeat of the shape, pooled
        self.last: Check | None = None  # the last timed launch's output
        self.time_ms: float | None = None  # the median placed on the roofline; None: no speed
        self.paired: Pairing | None = None
        self.timing: str | None = None  # a reference's note on its pooled repeats

    @property
    def reference(self) -> bool:
        return self.model.get("kind") == "reference"

    def skip(self, why: str) -> None:
        """Skipped: it cannot run here (no speed, not verified either way)."""
        self.verified, self.error = None, f"skipped: {why}"

    def fail(self, why: str) -> None:
        """Failed: a wrong result, an error or a launch failure is never reported as fast."""
        self.verified, self.error, self.time_ms = False, why, None

    def to_dict(self) -> dict[str, Any]:
        """The record as the document holds it (before complete_record and the reference
        ratios): a stage's timing fields as they were found, a reference's after its pooled
        samples."""
        from rooflinecli.core import roofs

        out = dict(self.model)
        out.update(self.checked)
        out.update(self.about)
        if self.launch is not None:
            out.update(self.launch)
        if self.occupancy_pct is not None:
            out.update(occupancy_pct=self.occupancy_pct, blocks_per_sm=self.blocks_per_sm)
        out["verified"] = self.verified
        if self.first is not None:
            out.update(rel_error=self.first.rel_error, max_rel_error=self.first.max_rel_error)
        if self.conversion_ms is not None:
            out["conversion_ms"] = self.conversion_ms
        rep = self.repeats
        if self.reference:
            if rep is not None:
                out.update(rep.clock)
            self._last_into(out)
            if rep is not None and self.time_ms is not None:
                out.update(_summary(rep.samples_ms))
                out.update(timing=self.timing, timing_method=rep.method)
                if rep.noise_target_met is not None:
                    out.update(noise_pct=rep.noise_pct, noise_target_met=rep.noise_target_met)
        else:
            if rep is not None:
                out.update(rep.clock, timing_method=rep.method)
                if rep.noise_target_met is not None:
                    out.update(noise_pct=rep.noise_pct, noise_target_met=rep.noise_target_met)
            self._last_into(out)
            if rep is not None and self.time_ms is not None:
                out.update(_summary(rep.samples_ms))
        roofs.place(out, self.time_ms)
        if self.paired is not None and self.time_ms is not None:
            p = self.paired
            for name, median in p.medians:
                out[f"pct_of_{name}"] = 100.0 * median / self.time_ms
                out[f"{name}_time_ms"] = median
            out.update(
                compared_with=p.compared_with,
                reference_time_ms=p.reference_time_ms,
                reference_samples_ms=[round(x, 6) for x in p.reference_samples_ms],
                timing=p.timing,
            )
        if not self.verified:  # a wrong result is never reported as fast
            out.update(tflops=None, pct_of_roof=None, pct_of_peak=None)
        return out

    def _last_into(self, out: dict[str, Any]) -> None:
        """The last timed launch's check, and what went wrong up to there (in that order)."""
        if self.last is not None:
            out.update(
                rel_error_last=self.last.rel_error, max_rel_error_last=self.last.max_rel_error
            )
        if self.error is not None:
            out["error"] = self.error


def _summary(samples: list[float]) -> dict[str, Any]:
    """A launch's samples as record fields besides the median (time_ms, which placing sets):
    the spread and every sample (`samples_ms`, in launch order, what the gate decides from)."""
    import statistics

    return {
        "time_ms_min": min(samples),
        "time_ms_max": max(samples),
        "time_ms_stdev": statistics.stdev(samples) if len(samples) > 1 else 0.0,
        "repeats": len(samples),
        "samples_ms": [round(x, 6) for x in samples],
    }


def written(records: Iterable[RunRecord]) -> list[dict[str, Any]]:
    """The records of one shape as the document holds them: each one's fields, and each one's
    ratio to the reference it is held to (rooflinecli.core.reference.add_ratios)."""
    out = [r.to_dict() for r in records]
    reference.add_ratios(out)
    return out


class Identity(NamedTuple):
    """What a record measures: the key that pairs records across documents (gate, compare,
    baseline). Two records of one document must not share it. (A NamedTuple, as
    rooflinecli.present.View says why.)"""

    stage: str  # the stage, or the name given to measure()
    dtype: str
    # (M, N, K); attention: ("attention", B, H, H_kv, N, D, causal); None for a measure()
    # record without one
    shape: tuple[Any, ...] | None
    workload: str | None = None  # `run llm`: preset:gemm:bBATCH (two weight GEMMs share shapes)
    gpu: str | None = None  # a fleet document's record: the GPU it ran on (its gpu_label)

    @property
    def shape_text(self) -> str:
        if self.shape and self.shape[0] == "attention":
            from rooflinecli.core import attention

            return attention.label(dict(zip(attention.SHAPE_FIELDS, self.shape[1:], strict=True)))
        return "x".join(str(d) for d in self.shape) if self.shape else "-"

    @property
    def label(self) -> str:
        """stage MxNxK dtype [workload]: how messages name the record."""
        parts = [self.stage] + ([self.shape_text] if self.shape else []) + [self.dtype]
        parts += [self.workload] if self.workload else []
        return " ".join(parts + ([f"on {self.gpu}"] if self.gpu else []))


def _dim(value: Any) -> int | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
    ):
        raise RooflineError(f"m, n and k must be whole numbers or null, got {value!r}")
    return int(value)


def identity(record: dict[str, Any]) -> Identity:
    """The record's identity: GEMM stages by (stage, dtype, M, N, K); `run llm` records also by
    their workload (preset, weight GEMM, batch); measure() records by name and dtype (and shape
    when given). RooflineError for m, n, k that are not whole numbers."""
    workload = record.get("workload")
    if record.get("op") == "attention":
        key = roofs.shape_key(record)
        for f, v in zip(roofs.ATTENTION_SHAPE[:-1], key[1:-1], strict=True):
            if _dim(v) is None:
                raise RooflineError(f"record {record.get('stage')!r}: attention without {f}")
        return Identity(str(record["stage"]), str(record.get("dtype")), key, None, _gpu(record))
    m, n, k = (_dim(record.get(d)) for d in ("m", "n", "k"))
    shape: tuple[Any, ...] | None = None
    if m is not None and n is not None and k is not None:
        shape = (m, n, k)
    elif (m, n, k) != (None, None, None):
        raise RooflineError(f"record {record.get('stage')!r}: give all of m, n and k, or none")
    if not isinstance(workload, str) or not workload:
        parts = [record.get(f) for f in ("preset", "gemm", "batch")]
        workload = f"{parts[0]}:{parts[1]}:b{parts[2]}" if None not in parts else None
    return Identity(str(record["stage"]), str(record.get("dtype")), shape, workload, _gpu(record))


def _gpu(record: dict[str, Any]) -> str | None:
    label = record.get("gpu_label")
    return str(label) if label is not None else None
