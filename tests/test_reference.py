"""The reference a record is held to: the one its `compared_with` names, of its precision and
shape (core.reference); a record that names none is given the first verified reference when it
is placed, and older documents get the same name on load."""

from __future__ import annotations

from pathlib import Path

from rooflinecli import paths, results
from rooflinecli.core import reference

ROOT = Path(__file__).resolve().parent.parent


def _rec(stage, kind="stage", tflops=None, **extra):
    return {"stage": stage, "kind": kind, "dtype": "fp8", "m": 64, "n": 64, "k": 64,
            "tflops": tflops, "time_ms": 1.0, **extra}  # fmt: skip


def test_a_record_is_held_to_the_reference_it_names():
    plain, fast = _rec("lt", "reference", 400.0), _rec("lt_fast", "reference", 500.0)
    pick = _rec("ours", tflops=450.0, compared_with="lt_fast")
    recs = [plain, fast, pick]
    assert reference.of(pick, recs) is fast
    assert reference.of(plain, recs) is plain  # a reference that names none: its own
    other = {**fast, "m": 128}  # another shape: not this record's reference
    assert reference.of(pick, [plain, other, pick]) is None
    reference.add_ratios(recs)
    assert pick["pct_of_reference"] == 90.0  # 450 / 500, not 450 / 400 (the shape's first)
    assert plain["pct_of_reference"] == 100.0
    assert fast["compared_with"] == "lt" and fast["pct_of_reference"] == 125.0


def test_a_record_that_names_none_is_given_the_first_verified_reference():
    bad = _rec("lt", "reference", 400.0, verified=False)
    good = _rec("lt_fast", "reference", 500.0, verified=True)
    pick = _rec("ours", tflops=250.0)
    reference.add_ratios([bad, good, pick])
    assert pick["compared_with"] == "lt_fast" and pick["pct_of_reference"] == 50.0


def test_upgrade_names_the_reference_an_older_ratio_was_taken_against():
    ref = _rec("cublas", "reference", 400.0)
    old = _rec("ours", tflops=100.0, pct_of_reference=25.0)
    doc = results.upgrade({"records": [ref, old]})
    assert old["compared_with"] == "cublas"
    assert "compared_with" not in ref  # a reference that names none is held to itself
    assert reference.of(old, doc["records"]) is ref


def test_committed_ratios_are_the_ones_against_the_named_reference():
    """Every committed record with a ratio and no pairing: its ratio is its speed over the speed
    of the reference it names (after upgrade), to the last digit kept."""
    checked = 0
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json.gz")):
        raw = paths.read_json(path, "results file")
        doc = results.load(path)
        for before, r in zip(raw["records"], doc["records"], strict=True):
            pct = r.get("pct_of_reference")
            if pct is None or r.get("reference_time_ms") or r.get("kind") == "reference":
                continue
            assert before.get("pct_of_reference") == pct  # upgrade moves no ratio
            ref = reference.of(r, doc["records"])
            assert ref is not None, (path.name, r["stage"])
            want = 100.0 * r["tflops"] / ref["tflops"]
            assert abs(pct - want) <= 1e-9 * want, (path.name, r["stage"], pct, want)
            checked += 1
    assert checked > 200


def test_a_timed_record_is_compared_with_the_reference_its_problem_pairs_it_with():
    names = ["cublaslt_fp8", "cublaslt_fp8_fast"]
    assert reference.timed_beside(names, "cublaslt_fp8_fast") == 1
    assert reference.timed_beside(names, None) == 0  # no pairing: the first timed
    assert reference.timed_beside(names[:1], "cublaslt_fp8_fast") == 0  # not timed: the first
