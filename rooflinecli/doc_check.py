"""What a results document's numbers must be before any command computes with them: the checks
results.load makes after the shape of the document (types, names, finite numbers), for every
reader alike (show, compare, plot, report, gate, fleet, merge, baseline).

- `numbers`: every whole number of the document fits in 64 bits (no real count, size or time
  is larger; Python reads `10**400` from JSON, and float() of it fails), every other number is
  0 or of a size within TINY..HUGE (a denormal time, a bandwidth of 1e300), and a record's
  shape (m, n, k) is one a kernel can index (at most MAX_DIM).
- `spec`: the spec a document carries holds its peaks, clocks and bandwidth within the ranges a
  spec file must (rooflinecli.core.specs): a bandwidth of 0 is no GPU's.
- `records`: a document holds at least one record, and each record agrees with itself: its
  FLOPs are its shape's (2*m*n*k for a GEMM), its intensity its FLOPs over its bytes, its roof
  at most its peak and above 0, and the speed its samples give (FLOPs over their median) lies
  within SPEED_FACTOR of its roof: a record whose repeats claim more is no measurement (an
  edit by hand, a unit mixed up), and no command shows or gates it. (A stored time and speed
  agree with the samples: results._check_consistent. The gate takes its percentages from the
  samples too: rooflinecli.present.gate.)

Each refusal is one RooflineError line naming the file, the record and the field.
"""

from __future__ import annotations

import math
from typing import Any

from rooflinecli.core import specs
from rooflinecli.errors import RooflineError

MAX_INT = 2**63 - 1  # every whole number of a document: a count, a size, a clock
MAX_DIM = 2**31 - 1  # a GEMM's m, n or k: what a kernel's 32-bit index reaches
# The sizes of a document's other numbers: 0, or within these (a time of 1e-300 ms, a bandwidth
# of 1e300 GB/s are no measurement, and products and logarithms of them leave the floats)
TINY, HUGE = 1e-30, 1e30
# How far above its roof a record's speed (from its samples, or as stored) may lie: a roof is a
# model (the datasheet's peak at a stated clock, DRAM's bandwidth where the data may sit in L2
# when the flush is off), so a speed may pass it a little, but three times a roof is no
# measurement. docs/gate.md states it for CI users.
SPEED_FACTOR = 3.0
# How far a derived figure (FLOPs of a shape, an intensity, a percentage) may lie from what it
# is derived from: rounding only (a figure rounded by hand to 3 digits included, as
# results.CONSISTENT_RTOL allows for a speed)
RTOL = 0.005
# Record kinds whose FLOPs are their GEMM's 2*m*n*k (op absent: a GEMM, batched or not)
GEMM_KINDS = ("stage", "reference")


def _digits(v: int) -> str:
    """A whole number as a message quotes it: itself, or its count of digits when long."""
    text = str(abs(v))
    sign = "-" if v < 0 else ""
    return f"{sign}{text}" if len(text) <= 24 else f"a whole number of {len(text)} digits"


def _path(at: str, key: Any, quote: bool = False) -> str:
    """'FILE: record 0 (naive): ' + 'flops' -> "FILE: record 0 (naive): 'flops'"; then
    "...'params'.tile" and "...'grid'[0]" below it."""
    if type(key) is int:
        return f"{at}[{key}]"
    if at.endswith(": "):  # a record's field quoted, as results names it
        return f"{at}{key!r}" if quote else f"{at}{key}"
    return f"{at}.{key}"


def _walk(value: Any, at: str, quote: bool = False) -> None:
    """Every whole number under `value` within +-MAX_INT, every other number 0 or of a size
    within TINY..HUGE (NaN and infinity are left to results, which names them); `at` names the
    value's path."""
    if isinstance(value, list):  # most are numbers (repeats, by the thousand): a pass in C
        try:
            sizes = list(map(abs, value))
            if not sizes or (TINY <= min(sizes) and max(sizes) <= MAX_INT):
                return
        except TypeError:  # not all numbers: one by one
            pass
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for k, x in items:
        kind = type(x)
        if kind is int:
            if not -MAX_INT <= x <= MAX_INT:
                raise RooflineError(
                    f"{_path(at, k, quote)} is {_digits(x)}: more than 64 bits hold "
                    "(no real count, size or time is that large)"
                )
        elif kind is float:
            size = abs(x)
            if 0 < size < TINY or HUGE < size < math.inf:
                raise RooflineError(
                    f"{_path(at, k, quote)} is {x:g}: a number here is 0 or of a size between "
                    f"{TINY:g} and {HUGE:g} (no time, speed, count or ratio the tool measures "
                    "lies outside)"
                )
        elif kind is dict or kind is list:
            _walk(x, _path(at, k, quote))


def numbers(doc: dict[str, Any], where: str) -> None:
    """Every whole number of the document fits in 64 bits; a record's m, n and k in MAX_DIM.
    Run before anything converts a number to float."""
    _walk({k: v for k, v in doc.items() if k != "records"}, f"{where}: ")
    records = doc.get("records")
    if not isinstance(records, list):
        return
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            continue
        label = f"{where}: record {i}"
        stage = rec.get("stage")
        if isinstance(stage, str):
            label += f" ({stage[:57] + '...' if len(stage) > 60 else stage})"
        for key in ("m", "n", "k"):
            v = rec.get(key)
            if type(v) is int and v > MAX_DIM:
                raise RooflineError(
                    f"{label}: {key!r} is {_digits(v)}: a GEMM's dimension is at most {MAX_DIM:,}"
                )
        _walk(rec, f"{label}: ", quote=True)


def _bounds_text(lo: float, hi: float) -> str:
    return f"{lo:,g} and {hi:,g}"


def spec(doc: dict[str, Any], where: str) -> None:
    """The document's spec: each number the tool reads (peaks, their clocks, the bandwidth, the
    SM count and clock, sizes) within the range a spec file must hold it in."""
    raw = doc.get("spec")
    if not isinstance(raw, dict):
        return
    for key, (_type, _required, bounds) in specs._FIELDS.items():
        v = raw.get(key)
        if bounds is None or v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise RooflineError(f"{where}: spec.{key} must be a number, got {str(v)[:40]!r}")
        if not bounds[0] <= v <= bounds[1]:
            raise RooflineError(
                f"{where}: spec.{key} is {v:g}: a GPU's lies between {_bounds_text(*bounds)}"
            )
    for group, (lo, hi), what in (
        ("tflops", (0.01, 100_000), "a peak in TFLOP/s"),
        ("peak_clock_mhz", (100, 5000), "a clock in MHz"),
    ):
        held = raw.get(group)
        if held is None:
            continue
        if not isinstance(held, dict):
            raise RooflineError(f"{where}: spec.{group} must be an object")
        for k, v in held.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:
                got = (
                    f"{v:g}" if isinstance(v, int | float) and not isinstance(v, bool) else repr(v)
                )
                raise RooflineError(
                    f"{where}: spec.{group}.{k} is {got[:40]}: {what} lies between "
                    f"{_bounds_text(lo, hi)}"
                )


def _num(v: Any) -> float | None:
    """A number the record holds (int or float, never bool), as float; None otherwise."""
    return float(v) if (type(v) is int or type(v) is float) else None


def _off(stored: float, derived: float) -> bool:
    """A stored figure differs from what it derives from by more than rounding (a derived one
    that overflows, as FLOPs over a byte count of 5e-324, is no figure a record holds)."""
    return not math.isfinite(derived) or abs(stored - derived) > RTOL * abs(derived) + 1e-12


def record(rec: dict[str, Any], where: str) -> None:
    """One record agrees with itself (module docstring). Its numbers are finite, at least 0
    where unsigned, and within 64 bits (checked before)."""
    stage = rec.get("stage")
    if isinstance(stage, str):
        where = f"{where} ({stage[:57] + '...' if len(stage) > 60 else stage})"
    flops = _num(rec.get("flops"))
    m, n, k = rec.get("m"), rec.get("n"), rec.get("k")
    if (
        flops is not None
        and rec.get("op") is None
        and rec.get("kind") in GEMM_KINDS
        and all(type(d) is int for d in (m, n, k))
    ):
        want = 2 * m * n * k  # type: ignore[operator]
        if rec["flops"] != want and _off(flops, float(want)):
            raise RooflineError(
                f"{where}: 'flops' is {flops:.6g} but its shape m={_digits(m)}, n={_digits(n)}, "  # type: ignore[arg-type]
                f"k={_digits(k)} gives 2*m*n*k = {float(want):.6g}: "  # type: ignore[arg-type]
                "the shape contradicts the FLOPs"
            )
    for key in ("peak_tflops", "attainable_tflops", "bandwidth_gbs"):
        v = _num(rec.get(key))
        if v is not None and v <= 0:
            unit = "GB/s" if key == "bandwidth_gbs" else "TFLOP/s"
            raise RooflineError(f"{where}: {key!r} is {v:g}: a roof of 0 {unit} is no GPU's")
    peak, roof = _num(rec.get("peak_tflops")), _num(rec.get("attainable_tflops"))
    if peak is not None and roof is not None and roof > peak * (1 + RTOL):
        raise RooflineError(
            f"{where}: 'attainable_tflops' {roof:.6g} is above its 'peak_tflops' {peak:.6g}: "
            "a roof is at most the peak"
        )
    roof = roof if roof is not None else peak
    bytes_ideal, ai = _num(rec.get("bytes_ideal")), _num(rec.get("ai_ideal"))
    if flops is not None and bytes_ideal and ai is not None and _off(ai, flops / bytes_ideal):
        raise RooflineError(
            f"{where}: 'ai_ideal' {ai:.6g} is not its flops over its bytes_ideal "
            f"({flops / bytes_ideal:.6g} FLOP/byte): the bytes contradict the intensity"
        )
    samples = rec.get("samples_ms")
    t, field = _num(rec.get("time_ms")), "time_ms"
    if isinstance(samples, list) and samples:
        import statistics  # here: `model` never reads a document, and starts without it

        t, field = float(statistics.median(samples)), "samples_ms"
    # a kernel that failed its check may be that fast (it skipped the work): measured, shown
    if rec.get("verified") is False:
        return
    if flops is not None and flops > 0 and t is not None and t > 0 and roof is not None:
        speed = flops / t / 1e9  # TFLOP/s; inf where the time underflows it
        if not speed <= SPEED_FACTOR * roof:
            shown = f"{speed:.4g} TFLOP/s" if math.isfinite(speed) else "a speed beyond any float"
            raise RooflineError(
                f"{where}: {field!r} give {shown} ({flops:.6g} FLOPs in {t:.4g} ms), more "
                f"than {SPEED_FACTOR:g} times its roof of {roof:.6g} TFLOP/s: no measurement is "
                "that fast"
            )
    tf = _num(rec.get("tflops"))
    if tf is not None and roof is not None and tf > SPEED_FACTOR * roof:
        raise RooflineError(
            f"{where}: 'tflops' is {tf:.6g}, more than {SPEED_FACTOR:g} times its roof of "
            f"{roof:.6g} TFLOP/s: no measurement is that fast"
        )


def records(doc: dict[str, Any], where: str) -> None:
    """At least one record, each agreeing with itself (`record`)."""
    if not doc["records"]:
        raise RooflineError(f"{where} holds no records")
    for i, rec in enumerate(doc["records"]):
        record(rec, f"{where}: record {i}")


def document(doc: dict[str, Any], where: str) -> None:
    """The checks after the document's shape: spec ranges, then each record (`numbers` ran
    before the shape checks, which convert numbers)."""
    spec(doc, where)
    records(doc, where)
