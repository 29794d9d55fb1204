"""The performance gate: compare a run against a baseline run and against floors. No click here.

Rules (docs/gate.md explains them for CI users):

- Records pair up by their identity (results.identity: stage, dtype and shape; `run llm` records
  also by workload; measure() records by name). Every pair, and every record on one side only,
  is one check.
- Regression: TFLOP/s fell by more than `tolerance_pct` percent of the baseline. Which rule
  decides is stated in each check (`rule`, and the end of its reason):
  - "bootstrap": both records hold their repeats (samples_ms, at least stats.MIN_SAMPLES each).
    The TFLOP/s change is median(baseline)/median(current) time - 1 (times a flops ratio for
    measure() records), with the LEVEL bootstrap interval of stats.compare. FAIL when all of
    the interval lies below -tolerance, pass when none of it does, "inconclusive" when it
    straddles -tolerance (too noisy to tell either way);
  - "medians": otherwise (fewer samples, or none, as older documents hold): the median times
    alone, no noise allowance: FAIL when TFLOP/s fell by more than the tolerance. The times
    decide, never the stored tflops: the median of the samples where a record holds them, else
    its time_ms (results.load refuses a record whose time_ms is not its samples' median, or whose
    tflops is not its flops over that time, beyond rounding). Only a record without a time is
    judged by its stored speed.
- A record missing from either side fails; so does a record with verified false on either side,
  or a current record without a speed. A stage skipped on both sides (verified null, e.g. the GPU
  is too old for it) is a skip.
- Floors (pct_of_roof, pct_of_reference per stage, "*" for every stage) need no baseline. A
  floor naming a stage the current run has no record of is a usage error (exit 2).
- A baseline from another GPU (device name), driver, CUDA driver or CUDA runtime is refused
  (RooflineError, exit 2) unless mismatches are allowed; a document without a device (a model)
  is refused always; so is a baseline whose records are of other dtypes than the run's (an fp32
  run against a bf16 baseline), mismatches allowed or not.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rooflinecli import lazy, names
from rooflinecli.core import stats
from rooflinecli.errors import RooflineError
from rooflinecli.results import Identity, identity

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy.Module("numpy")  # imported on first use: the CLI starts without it

# device fields that must agree between baseline and current run
ENV_FIELDS: tuple[tuple[str, str], ...] = (
    ("name", "GPU"),
    ("driver", "driver"),
    ("cuda_driver", "CUDA driver"),
    ("cuda_runtime", "CUDA runtime"),
)
LEVEL = f"{100 * stats.LEVEL:g}%"
BOOTSTRAP, MEDIANS = "bootstrap", "medians"
RULES: dict[str, str] = {
    BOOTSTRAP: (
        f"both runs recorded samples_ms (at least {stats.MIN_SAMPLES} each): the {LEVEL} "
        "bootstrap interval of the TFLOP/s change, from median(current)/median(baseline) time, "
        "decides: FAIL when all of it lies below -tolerance, pass when none of it does, "
        "inconclusive when it straddles -tolerance"
    ),
    MEDIANS: (
        f"a run without samples_ms, or with fewer than {stats.MIN_SAMPLES}: the median times "
        "alone decide (of the samples, where recorded), with no noise allowance: FAIL when "
        "TFLOP/s fell by more than the tolerance"
    ),
}
RULES_SHORT = (
    f"with samples, the {LEVEL} bootstrap interval of the change must clear the tolerance "
    f"(else inconclusive); with fewer than {stats.MIN_SAMPLES}, or none, the median times "
    "alone decide"
)
PASS, FAIL, SKIP, INCONCLUSIVE = "pass", "FAIL", "skip", "inconclusive"
EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 3}


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def index(doc: dict[str, Any], where: str) -> dict[Identity, dict[str, Any]]:
    """Records by identity, in document order; an identity seen twice is an error (which one to
    trust?)."""
    out: dict[Identity, dict[str, Any]] = {}
    for i, rec in enumerate(doc["records"]):
        try:
            k = identity(rec)
        except RooflineError as exc:
            raise RooflineError(f"{where}: record {i}: {exc.message}") from None
        if k in out:
            raise RooflineError(f"{where}: {k.label} appears twice")
        out[k] = rec
    return out


def require_run(doc: dict[str, Any], where: str) -> dict[str, Any]:
    device = doc.get("device")
    if not isinstance(device, dict):
        raise RooflineError(f"{where} is a model document (no device): the gate needs a GPU run")
    return device


def mismatches(current: dict[str, Any], baseline: dict[str, Any]) -> list[str]:
    """Environment differences between two run documents, one phrase each."""
    cur, base = current.get("device") or {}, baseline.get("device") or {}
    return [
        f"{label} {base.get(f)!r} in the baseline, {cur.get(f)!r} now"
        for f, label in ENV_FIELDS
        if cur.get(f) != base.get(f)
    ]


def dtypes(doc: dict[str, Any]) -> list[str]:
    """The dtypes of a document's records, sorted."""
    return sorted({str(r.get("dtype")) for r in doc["records"]})


def _same_dtypes(current: dict[str, Any], baseline: dict[str, Any], where: tuple[str, str]) -> None:
    cur, base = dtypes(current), dtypes(baseline)
    if cur != base:
        raise RooflineError(
            f"{where[0]} is {'+'.join(cur) or 'empty'} but {where[1]} is "
            f"{'+'.join(base) or 'empty'}: gate a run against a baseline of the same dtype"
        )


def _floored_stages_exist(
    cur: dict[Identity, dict[str, Any]], floors: dict[str, float], option: str, where: str
) -> None:
    have = list(dict.fromkeys(k.stage for k in cur))
    for stage in floors:
        if stage != "*" and stage not in have:
            known = ", ".join(have[:12]) + (", ..." if len(have) > 12 else "")
            raise RooflineError(
                f"{option} names stage {stage}, which {where} has no record of "
                f"(its stages: {known or 'none'})"
            )


def parse_floor(text: str) -> tuple[str, float]:
    """STAGE=PCT (STAGE may be * for every stage); ValueError with the reason otherwise."""
    stage, sep, value = text.partition("=")
    stage = stage.strip()
    if not sep or not stage:
        raise ValueError(f"{text!r}: write STAGE=PERCENT, e.g. vectorized=80")
    try:
        pct = float(value)
    except ValueError:
        raise ValueError(f"{text!r}: {value.strip()!r} is not a number") from None
    if not math.isfinite(pct) or pct < 0:
        raise ValueError(f"{text!r}: the floor must be a percentage of at least 0")
    return stage, pct


@dataclass
class Check:
    key: Identity
    baseline_tflops: float | None = None
    tflops: float | None = None
    change_pct: float | None = None  # TFLOP/s change, percent (negative: slower)
    ci_low_pct: float | None = None  # its bootstrap interval (rule "bootstrap" only)
    ci_high_pct: float | None = None
    noise_pct: float | None = None  # stats.noise_pct of the current run's samples
    baseline_noise_pct: float | None = None  # the same of the baseline's
    rule: str | None = None  # BOOTSTRAP | MEDIANS: which rule judged the speed
    time_s: float | None = None  # the current run's median time, seconds (JUnit's time)
    verdict: str = PASS
    reasons: list[str] = field(default_factory=list)
    failure_type: str | None = None  # regression | missing | unverified | floor
    failed: list[str] = field(default_factory=list)  # the reasons that failed it

    def fail(self, why: str, kind: str) -> None:
        self.verdict = FAIL
        self.failure_type = self.failure_type or kind
        self.reasons.append(why)
        self.failed.append(why)

    def undecided(self, why: str) -> None:
        if self.verdict != FAIL:
            self.verdict = INCONCLUSIVE
        self.reasons.append(why)

    @property
    def name(self) -> str:
        return self.key.label

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    @property
    def why(self) -> str:
        """The reason behind the verdict: the first failure, else the first reason."""
        return (self.failed or self.reasons or [""])[0]

    def row(self) -> dict[str, Any]:
        return {
            "stage": self.key.stage,
            **({"workload": self.key.workload} if self.key.workload else {}),
            "shape": self.key.shape_text,
            "dtype": self.key.dtype,
            "baseline_tflops": self.baseline_tflops,
            "tflops": self.tflops,
            "change_pct": self.change_pct,
            "ci_low_pct": self.ci_low_pct,
            "ci_high_pct": self.ci_high_pct,
            "noise_pct": self.noise_pct,
            "baseline_noise_pct": self.baseline_noise_pct,
            "rule": self.rule,
            "verdict": self.verdict,
            "reason": self.reason,
        }


@dataclass
class GateResult:
    checks: list[Check]
    tolerance_pct: float
    has_baseline: bool
    mismatches: list[str] = field(default_factory=list)
    timestamp: str | None = None  # when the current run was made (its `created`), for JUnit
    hostname: str | None = None  # where (its environment's host), for JUnit

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == FAIL]

    @property
    def inconclusive(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == INCONCLUSIVE]

    @property
    def outcome(self) -> str:
        """fail (any check failed) > inconclusive (any too noisy to tell) > pass."""
        return "fail" if self.failures else "inconclusive" if self.inconclusive else "pass"

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    def rules_used(self) -> str:
        """How many checks each rule judged, e.g. '6 by bootstrap, 2 by medians only'."""
        n = {r: sum(c.rule == r for c in self.checks) for r in (BOOTSTRAP, MEDIANS)}
        parts = [f"{n[BOOTSTRAP]} by bootstrap"] if n[BOOTSTRAP] else []
        parts += [f"{n[MEDIANS]} by medians only"] if n[MEDIANS] else []
        return ", ".join(parts)

    def summary(self, limit: int = 4) -> str:
        """One line: the outcome, and the checks behind it with their reasons."""
        n, bad, unsure = len(self.checks), self.failures, self.inconclusive
        if not bad and not unsure:
            used = self.rules_used()
            return f"gate passed: {n} check{'s' if n != 1 else ''}" + (f" ({used})" if used else "")
        shown = bad or unsure
        parts = [f"{c.name} ({c.why})" for c in shown[:limit]]
        more = f"; and {len(shown) - limit} more" if len(shown) > limit else ""
        if bad:
            tail = f"; {len(unsure)} more inconclusive" if unsure else ""
            return f"gate failed, {len(bad)} of {n} checks: {'; '.join(parts)}{more}{tail}"
        return (
            f"gate inconclusive, {len(unsure)} of {n} checks too noisy to tell: "
            f"{'; '.join(parts)}{more}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "outcome": self.outcome,
            "summary": self.summary(),
            "tolerance_pct": self.tolerance_pct,
            "level": stats.LEVEL,
            "rules": RULES,
            "mismatches": self.mismatches,
            "checks": [c.row() for c in self.checks],
        }


def _samples(rec: dict[str, Any], where: str, k: Identity) -> np.ndarray | None:
    """The record's repeats (samples_ms), sorted; None when it has none."""
    raw = rec.get("samples_ms")
    if raw is None:
        return None
    arr = stats.as_samples(raw)
    if arr is None:
        raise RooflineError(f"{where}: {k.label}: samples_ms must be a list of positive times (ms)")
    return arr


def _work(base: dict[str, Any], cur: dict[str, Any]) -> float:
    """current flops / baseline flops: 1 for one shape; measure() names may change their work."""
    b, c = _num(base.get("flops")), _num(cur.get("flops"))
    return c / b if b and c else 1.0


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _noise(x: np.ndarray | None) -> float | None:
    return _finite(stats.noise_pct(x)) if x is not None else None


def _compare(
    check: Check, base: dict[str, Any], cur: dict[str, Any], tol: float, where: tuple[str, str]
) -> None:
    if base.get("verified") is None and cur.get("verified") is None and cur.get("tflops") is None:
        check.verdict = SKIP
        check.reasons.append(f"not run on either side ({cur.get('error') or 'skipped'})")
        return
    if base.get("verified") is False:
        check.fail("not verified in the baseline", "unverified")
    if cur.get("verified") is False:
        check.fail("not verified", "unverified")
    b_tf, c_tf = check.baseline_tflops, check.tflops
    if check.verdict == FAIL:
        return
    if b_tf is None or b_tf <= 0:
        check.fail("the baseline has no speed for it", "missing")
        return
    if c_tf is None:
        check.fail(f"no speed measured ({cur.get('error') or 'not timed'})", "missing")
        return
    b_s, c_s = _samples(base, where[1], check.key), _samples(cur, where[0], check.key)
    if b_s is not None and c_s is not None:
        both = stats.compare(b_s, c_s)  # the interval and each run's noise, from one set of draws
        check.noise_pct = _finite(both.current_noise_pct)
        check.baseline_noise_pct = _finite(both.baseline_noise_pct)
        if min(b_s.size, c_s.size) >= stats.MIN_SAMPLES:
            _by_bootstrap(check, both.ratio, _work(base, cur), tol)
            return
        why = f"fewer than {stats.MIN_SAMPLES} samples"
    else:
        check.noise_pct, check.baseline_noise_pct = _noise(c_s), _noise(b_s)
        if b_s is None and c_s is None:
            why = "no samples"
        else:
            why = f"no samples in the {'baseline' if b_s is None else 'current run'}"
    _by_medians(check, b_tf, c_tf, tol, why, _median_times(base, b_s, cur, c_s), _work(base, cur))


def _median_times(
    base: dict[str, Any], b_s: np.ndarray | None, cur: dict[str, Any], c_s: np.ndarray | None
) -> tuple[float, float] | None:
    """The two times the medians rule compares: each record's samples' median, else its
    time_ms; None when either has no positive time."""

    def one(rec: dict[str, Any], s: np.ndarray | None) -> float | None:
        t = float(np.median(s)) if s is not None else _num(rec.get("time_ms"))
        return t if t is not None and t > 0 else None

    b, c = one(base, b_s), one(cur, c_s)
    return (b, c) if b is not None and c is not None else None


def _by_bootstrap(check: Check, iv: stats.Interval, work: float, tol: float) -> None:
    """Rule "bootstrap": the interval of the TFLOP/s change against -tolerance. iv: the interval
    of median(current) / median(baseline) time."""

    def change_of(ratio: float) -> float:
        return 100.0 * (work / ratio - 1.0)

    change, low, high = change_of(iv.estimate), change_of(iv.high), change_of(iv.low)
    check.rule, check.change_pct, check.ci_low_pct, check.ci_high_pct = BOOTSTRAP, change, low, high
    ci = f"bootstrap {LEVEL} CI {low:+.1f}% to {high:+.1f}%"
    if high < -tol:
        check.fail(f"TFLOP/s {change:.1f}%, beyond -{tol:g}% ({ci})", "regression")
    elif low < -tol:
        check.undecided(f"TFLOP/s {change:+.1f}%, too noisy to tell ({ci} straddles -{tol:g}%)")
    elif low > tol:
        check.reasons.append(f"faster by {change:.1f}%: consider a new baseline ({ci})")
    else:
        check.reasons.append(f"TFLOP/s {change:+.1f}%, within {tol:g}% ({ci})")


def _by_medians(
    check: Check,
    b_tf: float,
    c_tf: float,
    tol: float,
    why: str,
    times: tuple[float, float] | None,
    work: float,
) -> None:
    """Rule "medians": the median times alone (baseline, current), no noise allowance; the
    stored speeds only where a record has no time."""
    if times is not None:
        change = 100.0 * (work * times[0] / times[1] - 1.0)
    else:
        change = 100.0 * (c_tf - b_tf) / b_tf
    check.rule, check.change_pct = MEDIANS, change
    tag = f"(medians only: {why})"
    if change < -tol:
        check.fail(f"TFLOP/s {change:.1f}%, beyond -{tol:g}% {tag}", "regression")
    elif change > tol:
        check.reasons.append(f"faster by {change:.1f}%: consider a new baseline {tag}")
    else:
        check.reasons.append(f"within {tol:g}% {tag}")


def _median(rec: dict[str, Any], samples: str, time: str) -> float | None:
    """A record's time: its repeats' median where it holds them, else the stored one."""
    held = rec.get(samples)
    t = float(np.median(held)) if isinstance(held, list) and held else _num(rec.get(time))
    return t if t is not None and t > 0 else None


def _derived_pct(rec: dict[str, Any], field_: str) -> float | None:
    """What a floor compares, from the record's times as the regression rules take them (its
    samples' median, else time_ms): pct_of_roof is flops over that time over
    attainable_tflops, pct_of_reference the reference's time over it. The stored percentage
    only where the record lacks what it is made of."""
    t = _median(rec, "samples_ms", "time_ms")
    if field_ == "pct_of_roof":
        flops, roof = _num(rec.get("flops")), _num(rec.get("attainable_tflops"))
        if t is not None and flops is not None and roof:
            return 100 * flops / t / 1e9 / roof
    elif field_ == "pct_of_reference":
        ref = _median(rec, "reference_samples_ms", "reference_time_ms")
        if t is not None and ref is not None and rec.get("pct_of_reference") is not None:
            return 100 * ref / t
    return _num(rec.get(field_))


def _floors(
    check: Check, cur: dict[str, Any] | None, floors: dict[str, float], field_: str, label: str
) -> None:
    floor = floors.get(check.key.stage, floors.get("*"))
    if floor is None or cur is None:
        return
    value = _derived_pct(cur, field_)
    if value is None:
        check.fail(f"no {label} (floor {floor:g}%)", "floor")
    elif value < floor:
        check.fail(f"{label} {value:.1f}% below the floor {floor:g}%", "floor")
    else:
        check.reasons.append(f"{label} {value:.1f}% >= {floor:g}%")


def evaluate(
    current: dict[str, Any],
    baseline: dict[str, Any] | None = None,
    tolerance_pct: float = 5.0,
    min_pct_of_roof: dict[str, float] | None = None,
    min_pct_of_reference: dict[str, float] | None = None,
    allow_mismatch: bool = False,
    where: tuple[str, str] = ("current", "baseline"),
) -> GateResult:
    """Every check of the gate. RooflineError for documents the gate cannot judge."""
    roof_floors = dict(min_pct_of_roof or {})
    ref_floors = dict(min_pct_of_reference or {})
    if baseline is None and not roof_floors and not ref_floors:
        raise RooflineError(
            "nothing to check: give --baseline, "
            "or floors (--min-pct-of-roof/--min-pct-of-reference)"
        )
    if not math.isfinite(tolerance_pct) or tolerance_pct < 0:
        raise RooflineError(f"tolerance {tolerance_pct:g}% must be at least 0")
    require_run(current, where[0])
    cur = index(current, where[0])
    _floored_stages_exist(cur, roof_floors, "--min-pct-of-roof", where[0])
    _floored_stages_exist(cur, ref_floors, "--min-pct-of-reference", where[0])
    diffs: list[str] = []
    checks: dict[Identity, Check] = {}
    if baseline is not None:
        require_run(baseline, where[1])
        _same_dtypes(current, baseline, where)
        diffs = mismatches(current, baseline)
        if diffs and not allow_mismatch:
            raise RooflineError(
                f"{where[1]} comes from another environment ({'; '.join(diffs)}): "
                "record a new baseline, or pass --allow-mismatch"
            )
        base = index(baseline, where[1])
        for k in [*cur, *(k for k in base if k not in cur)]:
            check = Check(k)
            b, c = base.get(k), cur.get(k)
            check.baseline_tflops = _num(b.get("tflops")) if b else None
            check.tflops = _num(c.get("tflops")) if c else None
            if b is None:
                check.fail("missing from the baseline", "missing")
            elif c is None:
                check.fail("missing from the current run", "missing")
            else:
                _compare(check, b, c, tolerance_pct, where)
            checks[k] = check
    else:
        floored = set(roof_floors) | set(ref_floors)
        for k, c in cur.items():
            if k.stage in floored or "*" in floored:
                checks[k] = Check(k, tflops=_num(c.get("tflops")))
    for k, check in checks.items():
        c = cur.get(k)
        c_t = _num(c.get("time_ms")) if c is not None else None
        check.time_s = c_t / 1e3 if c_t is not None else None
        if baseline is None and c is not None and c.get("verified") is False:
            check.fail("not verified", "unverified")
        _floors(check, c, roof_floors, "pct_of_roof", "% of roof")
        _floors(check, c, ref_floors, "pct_of_reference", "% of reference")
    host = (current.get("environment") or {}).get("host")
    return GateResult(
        list(checks.values()),
        tolerance_pct,
        baseline is not None,
        diffs,
        timestamp=current.get("created") if isinstance(current.get("created"), str) else None,
        hostname=host if isinstance(host, str) and host.strip() else None,
    )


def _decimal(seconds: float | None) -> str:
    """xs:decimal (no exponent): the time of a JUnit testcase or suite, in seconds."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "0"
    return f"{seconds:.9f}".rstrip("0").rstrip(".") or "0"


def _junit_timestamp(created: str | None) -> str:
    """ISO 8601 without a zone or fractions (YYYY-MM-DDTHH:MM:SS, in UTC), as JUnit.xsd wants."""
    from datetime import UTC, datetime

    when = datetime.now(UTC)
    if created:
        try:
            parsed = datetime.fromisoformat(created)
            when = parsed.astimezone(UTC) if parsed.tzinfo else parsed
        except ValueError:
            pass
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def junit_xml(result: GateResult, suite: str = "roofline gate") -> str:
    """JUnit XML that strict consumers accept (the Windy Road JUnit.xsd).

    A <testsuites> root holds one <testsuite> with name, package, id, timestamp, hostname,
    tests, failures, errors, skipped and time; its <properties>; one <testcase> per check (name,
    classname, time: the current run's median time in seconds) holding at most one of <failure>
    (a failed check), <error type="inconclusive"> (too noisy to tell) or <skipped>; then
    <system-out> (the summary and every check's reason) and <system-err>, at suite level.

    Every name and reason goes through names.xml: the file parses whatever a document named
    (ElementTree escapes markup; names.xml replaces what XML 1.0 cannot hold).
    """
    import xml.etree.ElementTree as ET

    x = names.xml

    checks = result.checks
    root = ET.Element("testsuites")
    ts = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        package="roofline",
        id="0",
        timestamp=_junit_timestamp(result.timestamp),
        hostname=x(result.hostname or "localhost"),
        tests=str(len(checks)),
        failures=str(sum(c.verdict == FAIL for c in checks)),
        errors=str(sum(c.verdict == INCONCLUSIVE for c in checks)),
        skipped=str(sum(c.verdict == SKIP for c in checks)),
        time=_decimal(sum(c.time_s or 0.0 for c in checks)),
    )
    props = ET.SubElement(ts, "properties")
    ET.SubElement(props, "property", name="tolerance_pct", value=f"{result.tolerance_pct:g}")
    ET.SubElement(props, "property", name="level", value=f"{stats.LEVEL:g}")
    for rule, text in RULES.items():
        ET.SubElement(props, "property", name=f"rule_{rule}", value=text)
    for m in result.mismatches:
        ET.SubElement(props, "property", name="mismatch", value=x(m))
    for c in checks:
        tc = ET.SubElement(
            ts,
            "testcase",
            name=x(c.name),
            classname=x(f"roofline.gate.{c.key.dtype}"),
            time=_decimal(c.time_s),
        )
        # the row as JSON: ASCII (json.dumps escapes the rest), which XML holds as it is
        if c.verdict == FAIL:
            kind = c.failure_type or "failure"
            fail = ET.SubElement(tc, "failure", message=x(c.reason), type=kind)
            fail.text = json.dumps(c.row(), indent=2)
        elif c.verdict == INCONCLUSIVE:
            err = ET.SubElement(tc, "error", message=x(c.reason), type="inconclusive")
            err.text = json.dumps(c.row(), indent=2)
        elif c.verdict == SKIP:
            ET.SubElement(tc, "skipped", message=x(c.reason))
    out = ET.SubElement(ts, "system-out")
    out.text = x(
        "\n".join([result.summary(), *(f"{c.name}: {c.verdict}: {c.reason}" for c in checks)])
    )
    ET.SubElement(ts, "system-err").text = ""
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def benchmark_json(current: dict[str, Any]) -> str:
    """github-action-benchmark "customBiggerIsBetter": every measured record's TFLOP/s."""
    entries = []
    for rec in current["records"]:
        tf = _num(rec.get("tflops"))
        if tf is None:
            continue
        entries.append({"name": identity(rec).label, "unit": "TFLOP/s", "value": tf})
    return json.dumps(entries, indent=2) + "\n"


def describe(doc: dict[str, Any]) -> str:
    """GPU, driver, CUDA and commit of a run document, for headings."""
    d = doc.get("device") or {}
    commit = (doc.get("environment") or {}).get("commit")
    parts = [str(d.get("name", "?")), f"driver {d.get('driver')}", f"CUDA {d.get('cuda_runtime')}"]
    if commit:
        parts.append(f"commit {commit}")
    return ", ".join(parts)


def compare_rows(
    a: dict[str, Any], b: dict[str, Any], where: tuple[str, str] = ("A", "B")
) -> list[dict[str, Any]]:
    """Two documents side by side per record identity, with B/A ratios."""
    ia, ib = index(a, where[0]), index(b, where[1])
    rows = []
    for k in [*ia, *(k for k in ib if k not in ia)]:
        ra, rb = ia.get(k) or {}, ib.get(k) or {}
        a_tf, b_tf = _num(ra.get("tflops")), _num(rb.get("tflops"))
        a_t, b_t = _num(ra.get("time_ms")), _num(rb.get("time_ms"))
        rows.append(
            {
                "stage": k.stage,
                **({"workload": k.workload} if k.workload else {}),
                "shape": k.shape_text,
                "dtype": k.dtype,
                "a_tflops": a_tf,
                "b_tflops": b_tf,
                "tflops_ratio": b_tf / a_tf if a_tf and b_tf is not None else None,
                "a_time_ms": a_t,
                "b_time_ms": b_t,
                "time_ratio": b_t / a_t if a_t and b_t is not None else None,
            }
        )
    return rows
