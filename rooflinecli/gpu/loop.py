"""The one runner loop: every problem kind (GEMM, attention, and what later kinds add) is verified
and timed through `run`, over the small interface a kind implements (`Problem`).

Per shape: the kind's buffers and its reference output (Problem), then its library references,
each launched and checked once. Then each stage in turn: skipped with its reason when it cannot
run here; else launched once on a poisoned output and checked, timed interleaved with the
references through the one timer (rooflinecli.gpu.timer: each round runs all of them,
alternating which goes first, every sample kept, the SM clock sampled), and the output of its
last timed launch checked too. Then each reference is summarised over every repeat it ran beside
the stages (timed alone when no stage ran) and its last timed output checked. Records are
RunRecords until the shape is done, then written (rooflinecli.results.written).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rooflinecli.core import occupancy, reference
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import device
from rooflinecli.gpu.timer import Launch, Timed, Timer
from rooflinecli.results import Check, Pairing, Repeats, RunRecord, written


@dataclass
class Launched:
    """A stage ready to launch on a problem's buffers: the call, the record fields it adds
    (registers, shared memory, grid, ...), a conversion queued inside the call that the record
    times alone (GEMM's B transpose), and what must live as long as the call (a workspace)."""

    call: Callable[[], None]
    meta: dict[str, Any]
    convert: Callable[[], None] | None = None
    keep: Any = None


@dataclass
class ReferenceRun:
    """A library reference launched and checked once, then timed beside every stage."""

    record: RunRecord
    launch: Launch
    check_last: Callable[[], Check]  # its output after the last timed launch
    release: Callable[[], None] | None = None  # drops what it holds once the shape is done
    samples: list[float] = field(default_factory=list)
    clocks: list[dict[str, Any]] = field(default_factory=list)
    method: str = ""


class Problem(Protocol):
    """One shape of one problem kind on the device: inputs, the reference output, the output a
    stage writes, how a stage is launched and checked, and the library references."""

    label: str  # the shape as progress and messages name it

    def record(self, stage: Any) -> RunRecord:
        """The stage's record before it runs: its FLOPs/bytes model here and how it is checked."""
        ...

    def skip(self, stage: Any, refusal: str | None) -> str | None:
        """Why the stage cannot run here (`refusal`: the shape's, decided by the caller; the
        device's compute capability is the problem's to judge), or None."""
        ...

    def launch(self, stage: Any) -> Launched: ...

    def reset(self) -> None:
        """Queue the poisoning (or restoring, with beta != 0) of the stage's output."""
        ...

    def check(self) -> Check:
        """The stage's output against the reference."""
        ...

    def before_last(self) -> Callable[[], None] | None:
        """What is queued (untimed) before a stage's last timed launch, so that it is checked."""
        ...

    def references(self) -> tuple[list[RunRecord], list[ReferenceRun]]:
        """The library references set up: (records of those that cannot run here, the runs)."""
        ...


@dataclass(frozen=True)
class Kind:
    """How a problem kind's records speak of their references."""

    pairing: str  # a stage record's `timing`: what it was interleaved with
    names_each_reference: bool = False  # pct_of_<reference> and <reference>_time_ms per record
    reference_noise: bool = False  # references' noise, with a noise target


LAST_FAILED = "the last timed launch's output failed its check"
# the reference's `timing`: its samples are every repeat it ran beside this shape's stages
POOLED = "every repeat it ran beside the stages of this shape"


def shaped(
    work: Sequence[tuple[Any, Sequence[tuple[Any, str | None]]]], sms: int, arch: str | None = None
) -> list[tuple[Any, list[tuple[Any, str | None]]]]:
    """`work` with each stage as it runs its shape: its arch's params (where `arch` is given)
    and its tile width where the shape picks it (Stage.for_shape over `sms` SMs)."""
    return [
        (shape, [((s.for_arch(arch) if arch else s).for_shape(shape[0], shape[1], sms), why)
                 for s, why in items])
        for shape, items in work
    ]  # fmt: skip


def run(
    cp: Any,
    work: Sequence[tuple[Any, Sequence[tuple[Any, str | None]]]],
    problem: Callable[[Any, Sequence[tuple[Any, str | None]]], Problem],
    kind: Kind,
    timer: Timer,
    limits: occupancy.SmLimits,
    progress: Callable[..., None] | None = None,
) -> list[dict[str, Any]]:
    """Verify and time the stages of each shape: `work` is [(shape, [(stage, refusal), ...])],
    the refusal a reason the stage cannot run the shape (or None), decided by the caller once.
    `problem(shape, items)` allocates the shape's buffers. Returns the written records, shape
    by shape. `progress(label, total=steps)` is called as each stage and shape begins."""
    steps = sum(len(items) for _shape, items in work)
    records: list[dict[str, Any]] = []
    for shape, items in work:
        g = problem(shape, items)
        records += _one_shape(cp, g, items, kind, timer, limits, progress, steps)
        del g  # its buffers go back to the pool, and the pool to the device
        cp.get_default_memory_pool().free_all_blocks()
    return records


def _one_shape(
    cp: Any,
    g: Problem,
    items: Sequence[tuple[Any, str | None]],
    kind: Kind,
    timer: Timer,
    limits: occupancy.SmLimits,
    progress: Callable[..., None] | None,
    steps: int,
) -> list[dict[str, Any]]:
    """One shape's records: its references launched and checked once; each stage skipped, or
    run beside them (_run_stage) and paired with one (_pair_with_references); then each
    reference summarised over every repeat it ran (_summarise_reference)."""
    sync = cp.cuda.runtime.deviceSynchronize
    skipped, refs = g.references()  # launched and checked once, then timed beside every stage
    shape_records = list(skipped)
    for stage, refusal in items:
        if progress:
            progress(f"{stage.name} {g.label}", total=steps)
        rec = g.record(stage)
        shape_records.append(rec)
        why = g.skip(stage, refusal)
        if why:
            rec.skip(why)
            continue
        timed = _run_stage(cp, g, stage, rec, refs, timer, limits)
        if timed is None:
            continue
        _pair_with_references(g, stage, rec, refs, timed, kind)
    for r in refs:
        _summarise_reference(r, kind, timer, sync)
        shape_records.append(r.record)
        if r.release is not None:
            r.release()
    return written(shape_records)


def _run_stage(
    cp: Any,
    g: Problem,
    stage: Any,
    rec: RunRecord,
    refs: list[ReferenceRun],
    timer: Timer,
    limits: occupancy.SmLimits,
) -> Timed | None:
    """The stage launched once on a poisoned output and checked, timed interleaved with the
    references, and the output of its last timed launch checked: what was timed, or None where
    it failed (the record says why). A launch that crashed the CUDA context, or ran out of
    device memory, stops the run."""
    sync = cp.cuda.runtime.deviceSynchronize
    try:
        launched = g.launch(stage)
        _note_launch(rec, launched.meta, limits)
        g.reset()
        sync()
        launched.call()
        sync()
        rec.first = g.check()
        rec.verified = rec.first.ok
        if launched.convert is not None:  # what the conversion alone costs, for the record
            rec.conversion_ms = statistics.median(timer.once(launched.convert) for _ in range(5))
        group = [Launch(stage.name, launched.call, g.before_last())]
        group += [r.launch for r in refs]
        timed = timer.time(group)
        rec.repeats = Repeats(
            timed.samples[0], timed.clock, timed.method, timed.noise_pct,
            timed.noise_target_met,
        )  # fmt: skip
        sync()
        rec.last = g.check()  # the output of the last timed launch
        if rec.first.ok and not rec.last.ok:
            rec.verified, rec.error = False, LAST_FAILED
    except RooflineError as exc:
        rec.fail(exc.message)
        return None
    except cp.cuda.memory.OutOfMemoryError:
        raise RooflineError(f"out of device memory running {stage.name}") from None
    except Exception as exc:  # a launch failure: record it, do not report a speed
        rec.fail(device.first_line(exc))
        text = str(exc).lower()
        if "illegal" in text or "launch failure" in text:
            raise RooflineError(
                f"stage {stage.name} crashed the CUDA context: {device.first_line(exc)}"
            ) from None
        return None
    return timed


def _note_launch(rec: RunRecord, meta: dict[str, Any], limits: occupancy.SmLimits) -> None:
    """The launch's record fields, and its theoretical occupancy where its registers are known."""
    rec.launch = meta
    if meta.get("registers"):
        occ = occupancy.theoretical(
            limits, meta["block"][0] * meta["block"][1], meta["registers"], meta["smem_bytes"],
        )  # fmt: skip
        rec.occupancy_pct, rec.blocks_per_sm = 100.0 * occ.occupancy, occ.blocks_per_sm


def _pair_with_references(
    g: Problem, stage: Any, rec: RunRecord, refs: list[ReferenceRun], timed: Timed, kind: Kind
) -> None:
    """The stage's time (its median), each reference's repeats beside it kept for the
    reference's own record, and the stage compared with one of them (core.reference's
    timed_beside picks which)."""
    rec.time_ms = statistics.median(timed.samples[0])
    for r, paired in zip(refs, timed.samples[1:], strict=True):
        r.samples += paired
        r.clocks.append(timed.clock)
        r.method = timed.method
    if refs:
        # the reference the record is compared with (core.reference.timed_beside)
        pair = getattr(g, "paired_name", None)
        wanted = pair(stage) if pair is not None else None
        at = reference.timed_beside([r.launch.name for r in refs], wanted)
        first = refs[at]
        rec.paired = Pairing(
            compared_with=first.launch.name,
            reference_time_ms=statistics.median(timed.samples[1 + at])
            if first.record.verified
            else None,
            reference_samples_ms=timed.samples[1 + at],
            timing=kind.pairing,
            medians=tuple(
                (r.launch.name, statistics.median(paired))
                for r, paired in zip(refs, timed.samples[1:], strict=True)
                if r.record.verified and kind.names_each_reference
            ),
        )


def _summarise_reference(
    r: ReferenceRun, kind: Kind, timer: Timer, sync: Callable[[], None]
) -> None:
    """The reference's record over every repeat it ran beside this shape's stages (timed alone
    where no stage ran), with the output of its last timed launch checked."""
    rec = r.record
    if not r.samples:  # nothing to pair with: the reference is timed on its own
        timed = timer.time([r.launch])
        r.samples, r.clocks, r.method = timed.samples[0], [timed.clock], timed.method
    sync()
    rec.last = r.check_last()
    noise = None
    if kind.reference_noise and timer.timing.max_noise_pct is not None:
        from rooflinecli.core.stats import noise_pct

        noise = noise_pct(r.samples)
    rec.repeats = Repeats(
        r.samples, merge_clock(r.clocks), r.method, noise,
        None if noise is None else noise <= timer.timing.max_noise_pct,  # type: ignore[operator]
    )  # fmt: skip
    if rec.verified and not rec.last.ok:
        rec.verified, rec.error = False, LAST_FAILED
    rec.time_ms = statistics.median(r.samples)
    rec.timing = POOLED


def setup(spec_arg: str | None) -> tuple[Any, dict[str, Any], Spec, str, int, occupancy.SmLimits]:
    """What every run starts from: CuPy, the device, its spec (named, else the device's), the
    NVRTC target, the compute capability as an int (90) and the SM limits for occupancy."""
    from rooflinecli.core import specs

    cp = device.cupy()
    dev = device.info()
    spec = specs.choose(spec_arg, dev["name"], default=None).spec
    cc = int(dev["compute_capability"].replace(".", ""))
    return cp, dev, spec, dev["arch"], cc, occupancy.SmLimits.from_spec(spec)


def merge_clock(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One clock summary from several timed groups (the reference's, over every pairing)."""
    parts = [p for p in parts if p.get("clock_samples")]
    if not parts:
        return {}
    n = sum(p["clock_samples"] for p in parts)
    reasons = sorted(
        {
            x.strip()
            for p in parts
            for x in str(p.get("clock_limited_by") or "").split(",")
            if x.strip()
        }
    )
    out: dict[str, Any] = {
        "sm_clock_mhz": round(sum(p["sm_clock_mhz"] * p["clock_samples"] for p in parts) / n),
        "sm_clock_mhz_min": min(p["sm_clock_mhz_min"] for p in parts),
        "sm_clock_mhz_max": max(p["sm_clock_mhz_max"] for p in parts),
        "clock_samples": n,
        "clock_limited_by": ", ".join(reasons) or None,
    }
    power = [p for p in parts if p.get("power_w") is not None]
    if power:
        out["power_w"] = round(
            sum(p["power_w"] * p["clock_samples"] for p in power)
            / sum(p["clock_samples"] for p in power),
            1,
        )
    return out
