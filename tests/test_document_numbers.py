"""A document's numbers are validated where it is read, and the gate decides from the times.

- Times and speeds are finite and at least 0: NaN, Infinity and negative times are refused by
  `show`, `plot`, `baseline save`, `compare` and `gate`, in one line naming the record and the
  field (exit 2), never a verdict such as "TFLOP/s -408.2%" from a negative time.
- A record whose stored tflops its flops and time contradict, or whose time_ms is not the median
  of its samples, is refused beyond rounding: the gate never passes on a stored speed that its
  samples contradict. With fewer than 10 samples the gate decides from the samples' medians
  (rule "medians"), never from the stored tflops; over many random draws a 10% slowdown never
  passes.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from rooflinecli import paths, results
from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError
from rooflinecli.present import gate

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
SOURCE = "gemm-fp32-4096-ladder.json.gz"  # H200 run, every record with its repeats


def committed() -> dict[str, Any]:
    return paths.read_json((RESULTS / SOURCE), "results file")


def write(path: Path, doc: dict[str, Any]) -> str:
    path.write_text(json.dumps(doc))  # json writes NaN and Infinity, as a hand edit could
    return str(path)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env=ENV)


def commands(path: str, tmp_path: Path) -> list[list[str]]:
    ok = str(RESULTS / SOURCE)
    return [
        ["show", path],
        ["plot", path, "-o", str(tmp_path / "r.png")],
        ["baseline", "save", path, str(tmp_path / "b.json")],
        ["compare", ok, path],
        ["gate", path, "--baseline", ok],
        ["gate", ok, "--baseline", path],
    ]


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("time_ms", math.nan, "'time_ms' is NaN: a time, a speed or a count is a finite number"),
        ("time_ms", math.inf, "'time_ms' is Infinity: a time, a speed or a count is a finite"),
        ("tflops", -math.inf, "'tflops' is -Infinity: a time, a speed or a count is a finite"),
        ("time_ms", -25.5, "'time_ms' is -25.5: a time, a speed or a count is at least 0"),
        ("tflops", -5.39, "'tflops' is -5.39: a time, a speed or a count is at least 0"),
        ("pct_of_roof", math.nan, "'pct_of_roof' is NaN"),
        ("samples_ms", [25.5, -1.0], "samples_ms[1] is -1: each repeat is a positive finite"),
        ("samples_ms", [25.5, math.nan], "samples_ms[1] is NaN: each repeat is a positive"),
        ("samples_ms", [], "'samples_ms' must be a non-empty list of times in ms"),
    ],
)
def test_numbers_that_are_no_times_are_refused_in_one_line(
    field: str, value: Any, said: str, tmp_path: Path
) -> None:
    doc = committed()
    doc["records"][0][field] = value
    path = write(tmp_path / "bad.json", doc)
    for args in commands(path, tmp_path):
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.stdout)
        assert r.stdout == "" and len(r.stderr.splitlines()) == 1, (args, r.stderr)
        assert r.stderr.startswith(f"error: {path}: record 0 (naive_xcol): "), r.stderr
        assert said in r.stderr, r.stderr
        assert "TFLOP/s -" not in r.stderr  # the gate's old verdict on a negative time
    assert not (tmp_path / "b.json").exists() and not (tmp_path / "r.png").exists()


def test_1e999_reads_as_infinity_and_is_refused(tmp_path: Path) -> None:
    text = (
        gzip.decompress((RESULTS / SOURCE).read_bytes())
        .decode()
        .replace('"time_ms": 25.', '"time_ms": 1e999, "x": 25.', 1)
    )
    path = tmp_path / "big.json"
    path.write_text(text)
    r = invoke("show", str(path))
    assert r.exit_code == 2 and "'time_ms' is Infinity" in r.stderr


def test_signed_scalars_and_committed_documents_are_accepted() -> None:
    doc = committed()
    doc["records"][0]["alpha"], doc["records"][0]["beta"] = -1.0, -0.5  # C = -A B - 0.5 C
    results.validate(doc, "doc")
    for path in sorted(RESULTS.glob("*.json.gz")):  # every committed document reads as it is
        results.load(path)


def test_a_nested_number_is_finite_and_a_document_number_too(tmp_path: Path) -> None:
    doc = paths.read_json((RESULTS / "profile-app-torch.json.gz"), "results file")
    doc["records"][0]["roof_levels"][1]["gbs"] = math.nan
    r = invoke("show", write(tmp_path / "app.json", doc))
    assert r.exit_code == 2
    assert ": roof_levels[1].gbs is NaN: a number here is finite" in r.stderr
    doc = committed()
    doc["spec"]["memory_bandwidth_gbs"] = math.inf
    r = invoke("show", write(tmp_path / "spec.json", doc))
    assert r.exit_code == 2
    assert r.stderr.endswith(": spec.memory_bandwidth_gbs is Infinity: a number here is finite\n")


# -- a stored speed its times contradict ---------------------------------------------------


def test_a_speed_left_as_it_was_is_refused(tmp_path: Path) -> None:
    """The issue's case: repeats 10% slower, tflops (and time_ms) left as they were."""
    doc = committed()
    rec = doc["records"][0]
    rec["samples_ms"] = [t * 1.1 for t in rec["samples_ms"]]
    path = write(tmp_path / "edited.json", doc)
    r = invoke("gate", path, "--baseline", str(RESULTS / SOURCE))
    assert r.exit_code == 2
    assert r.stderr == (
        f"error: {path}: record 0 (naive_xcol): 'time_ms' 25.5017 is not the median of its "
        "samples_ms (28.0519): the samples contradict the stored time\n"
    )
    rec["time_ms"] = float(np.median(rec["samples_ms"]))  # the time follows, the speed not
    r = invoke("gate", write(tmp_path / "edited.json", doc), "--baseline", str(RESULTS / SOURCE))
    assert r.exit_code == 2
    assert "'tflops' 5.3894 is not its flops over its time_ms (4.89946 TFLOP/s)" in r.stderr
    rec["tflops"] = rec["flops"] / (rec["time_ms"] * 1e-3) / 1e12  # all of it: a slower run
    rec["pct_of_roof"] = 100 * rec["tflops"] / rec["attainable_tflops"]
    rec["pct_of_peak"] = 100 * rec["tflops"] / rec["peak_tflops"]
    rec["pct_of_reference"] = 100 * rec["reference_time_ms"] / rec["time_ms"]
    r = invoke("gate", write(tmp_path / "edited.json", doc), "--baseline", str(RESULTS / SOURCE))
    assert r.exit_code == 1, r.stderr
    assert "naive_xcol 4096x4096x4096 fp32 (TFLOP/s -9.1%, beyond -5% (bootstrap" in r.stderr


def test_rounding_is_no_contradiction() -> None:
    doc = committed()
    rec = doc["records"][0]
    rec["tflops"] = round(rec["tflops"], 2)  # 5.39 for 5.38944
    rec["time_ms"] = round(rec["time_ms"], 3)
    results.validate(doc, "doc")


# -- fewer than 10 samples: the times decide ------------------------------------------------

FLOPS = 2 * 4096**3


def record(stage: str, times: list[float], tflops: float | None = None) -> dict[str, Any]:
    t = float(np.median(times))
    return {
        "stage": stage,
        "kind": "stage",
        "dtype": "fp32",
        "m": 4096,
        "n": 4096,
        "k": 4096,
        "flops": FLOPS,
        "time_ms": t,
        "repeats": len(times),
        "tflops": FLOPS / (t * 1e-3) / 1e12 if tflops is None else tflops,
        "verified": True,
        "samples_ms": list(times),
    }


def run(records: list[dict[str, Any]]) -> dict[str, Any]:
    device = {"name": "NVIDIA H200", "driver": "1", "cuda_driver": "13", "cuda_runtime": "13"}
    return json.loads(results.dumps(results.new_document({"name": "h200-sxm"}, device, records)))


def test_few_samples_over_many_draws_a_slowdown_never_passes() -> None:
    """Over 200 draws of 5 repeats (1% noise): a 10% slower run whose stored tflops is left at
    the baseline's is refused where it is read (never judged by that speed), and evaluate()
    given it anyway fails it from its times; the honest document fails too, and an unchanged
    run passes, in every draw."""
    rng = np.random.default_rng(20261201)
    refused = failed_anyway = failed = passed = 0
    for _ in range(200):
        base_t = list(rng.normal(1.0, 0.01, 5))
        slow_t = list(rng.normal(1.1, 0.01, 5))
        same_t = list(rng.normal(1.0, 0.01, 5))
        base = run([record("k", base_t)])
        stale = run([record("k", slow_t, tflops=base["records"][0]["tflops"])])
        try:
            results.validate(stale, "stale.json")
        except RooflineError as exc:
            refused += "'tflops'" in exc.message
        verdict = gate.evaluate(stale, base).checks[0]  # not read from a file: still the times
        failed_anyway += verdict.verdict == gate.FAIL and verdict.rule == gate.MEDIANS
        honest = gate.evaluate(run([record("k", slow_t)]), base).checks[0]
        failed += honest.verdict == gate.FAIL and "fewer than 10 samples" in honest.reason
        passed += gate.evaluate(run([record("k", same_t)]), base).outcome == "pass"
    assert (refused, failed_anyway, failed, passed) == (200, 200, 200, 200)


def test_few_samples_decide_by_their_medians_in_the_cli(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", run([record("k", [1.0, 1.01, 0.99, 1.0, 1.02])]))
    cur = write(tmp_path / "cur.json", run([record("k", [1.1, 1.11, 1.09, 1.1, 1.12])]))
    r = invoke("gate", cur, "--baseline", base, "--format", "json")
    assert r.exit_code == 1
    check = json.loads(r.stdout)["checks"][0]
    assert check["rule"] == "medians"
    assert check["change_pct"] == pytest.approx(100 * (1.0 / 1.1 - 1))
    assert check["reason"] == "TFLOP/s -9.1%, beyond -5% (medians only: fewer than 10 samples)"
