"""`roofline gate` and `roofline baseline save`: verdicts, exit codes and the files CI reads."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from rooflinecli import paths, results
from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError

ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
SPEC = {
    "name": "testgpu",
    "display_name": "Test GPU",
    "memory_bandwidth_gbs": 1000.0,
    "tflops": {"fp32": 100.0},
}
DEVICE = {
    "name": "Test GPU",
    "compute_capability": "9.0",
    "driver": "570.1",
    "cuda_driver": "12.8",
    "cuda_runtime": "12.8",
    "cupy": "13.4.0",
}
FLOPS = 2 * 1024**3  # 2.147e9: 1 ms is 2.147483648 TFLOP/s


def rec(stage: str, time_ms: float, stdev: float = 0.0, **kw: Any) -> dict[str, Any]:
    r = {
        "stage": stage,
        "kind": "stage",
        "dtype": "fp32",
        "m": 1024,
        "n": 1024,
        "k": 1024,
        "flops": FLOPS,
        "ai_ideal": 170.67,
        "time_ms": time_ms,
        "time_ms_min": time_ms - stdev,
        "time_ms_max": time_ms + stdev,
        "time_ms_stdev": stdev,
        "repeats": 20,
        "tflops": FLOPS / (time_ms * 1e-3) / 1e12,
        "peak_tflops": 100.0,
        "verified": True,
    }
    r.update(kw)
    return r


def write(path: Path, records: list[dict[str, Any]], device: dict[str, Any] | None = None) -> str:
    doc = results.new_document(SPEC, DEVICE if device is None else device, records)
    path.write_text(results.dumps(doc))
    return str(path)


@pytest.fixture
def base(tmp_path: Path) -> str:
    return write(tmp_path / "baseline.json", [rec("naive", 10.0), rec("tiled", 1.0)])


def gate(*args: str) -> Any:
    return CliRunner().invoke(cli, ["gate", *args], env=ENV)


def one_line(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_ten_percent_regression_fails(tmp_path: Path, base: str) -> None:
    # tiled: 1.0 ms -> 1/0.9 ms is exactly 10% fewer TFLOP/s
    cur = write(tmp_path / "cur.json", [rec("naive", 10.0), rec("tiled", 1.0 / 0.9)])
    r = gate(cur, "--baseline", base)
    assert r.exit_code == 1
    assert one_line(r) == (
        "error: gate failed, 1 of 2 checks: tiled 1024x1024x1024 fp32 "
        "(TFLOP/s -10.0%, beyond -5% (medians only: no samples))"
    )
    assert "FAIL" in r.stdout and "-10.0%" in r.stdout


def test_three_percent_passes(tmp_path: Path, base: str) -> None:
    cur = write(tmp_path / "cur.json", [rec("naive", 10.0), rec("tiled", 1.0 / 0.97)])
    r = gate(cur, "--baseline", base, "--format", "json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["passed"] is True
    tiled = out["checks"][1]
    assert tiled["verdict"] == "pass"
    assert tiled["change_pct"] == pytest.approx(-3.0, abs=1e-9)
    assert tiled["reason"] == "within 5% (medians only: no samples)"
    assert tiled["rule"] == "medians" and tiled["ci_low_pct"] is None
    assert out["outcome"] == "pass" and set(out["rules"]) == {"bootstrap", "medians"}
    assert r.stderr == ""


def test_tolerance_option(tmp_path: Path, base: str) -> None:
    cur = write(tmp_path / "cur.json", [rec("naive", 10.0), rec("tiled", 1.0 / 0.97)])
    assert gate(cur, "--baseline", base, "--tolerance", "2").exit_code == 1
    assert gate(cur, "--baseline", base, "--tolerance", "3.5").exit_code == 0


def test_a_large_stdev_does_not_excuse_a_slowdown(tmp_path: Path) -> None:
    # 2 combined standard deviations (0.14 ms) exceed this 9.1% loss (0.1 ms), and a few
    # outliers make such a stdev: without samples the medians decide, with no noise allowance.
    b = write(tmp_path / "b.json", [rec("tiled", 1.0, stdev=0.05)])
    c = write(tmp_path / "c.json", [rec("tiled", 1.1, stdev=0.05)])
    r = gate(c, "--baseline", b, "--format", "json")
    assert r.exit_code == 1
    check = json.loads(r.stdout)["checks"][0]
    assert check["verdict"] == "FAIL" and check["rule"] == "medians"
    assert check["noise_pct"] is None
    assert check["change_pct"] == pytest.approx(100 * (1 / 1.1 - 1))
    assert check["reason"] == "TFLOP/s -9.1%, beyond -5% (medians only: no samples)"
    assert "tiled 1024x1024x1024 fp32 (TFLOP/s -9.1%, beyond -5% (medians" in one_line(r)


def test_foreign_gpu_baseline_is_refused(tmp_path: Path, base: str) -> None:
    other = {**DEVICE, "name": "Other GPU"}
    cur = write(tmp_path / "cur.json", [rec("naive", 10.0), rec("tiled", 1.0)], device=other)
    r = gate(cur, "--baseline", base)
    assert r.exit_code == 2
    line = one_line(r)
    assert line.startswith(f"error: {base} comes from another environment (GPU 'Test GPU' in ")
    assert line.endswith("record a new baseline, or pass --allow-mismatch")
    r2 = gate(cur, "--baseline", base, "--allow-mismatch")
    assert r2.exit_code == 0, r2.stderr
    out = " ".join(r2.stdout.split())  # the caption wraps at the table's width
    assert "Environments differ: GPU 'Test GPU' in the baseline, 'Other GPU' now." in out


@pytest.mark.parametrize("field", ["driver", "cuda_driver", "cuda_runtime"])
def test_driver_or_cuda_mismatch_is_refused(tmp_path: Path, base: str, field: str) -> None:
    cur = write(tmp_path / "cur.json", [rec("naive", 10.0)], device={**DEVICE, field: "1.0"})
    r = gate(cur, "--baseline", base)
    assert r.exit_code == 2
    assert "comes from another environment" in one_line(r)


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "is not JSON"),
        ('{"schema": "other/1"}', "not a roofline results document"),
        ("[]", "not a results document"),
    ],
)
def test_malformed_baseline_exits_2(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    cur = write(tmp_path / "cur.json", [rec("tiled", 1.0)])
    r = gate(cur, "--baseline", str(bad))
    assert r.exit_code == 2
    assert message in one_line(r)


def test_model_document_is_refused(tmp_path: Path) -> None:
    model = write(tmp_path / "m.json", [rec("tiled", 1.0)], device={})
    doc = paths.read_json(Path(model), "results file")
    doc["device"] = None
    Path(model).write_text(json.dumps(doc))
    r = gate(model, "--min-pct-of-roof", "tiled=1")
    assert r.exit_code == 2
    assert one_line(r) == (
        f"error: {model} is a model document (no device): the gate needs a GPU run"
    )


def test_missing_and_unverified_stages_fail(tmp_path: Path, base: str) -> None:
    cur = write(
        tmp_path / "cur.json",
        [rec("tiled", 1.0, verified=False, tflops=None), rec("extra", 1.0)],
    )
    r = gate(cur, "--baseline", base, "--format", "json")
    assert r.exit_code == 1
    checks = {c["stage"]: (c["verdict"], c["reason"]) for c in json.loads(r.stdout)["checks"]}
    assert checks == {
        "tiled": ("FAIL", "not verified"),
        "extra": ("FAIL", "missing from the baseline"),
        "naive": ("FAIL", "missing from the current run"),
    }
    assert one_line(r).startswith("error: gate failed, 3 of 3 checks: tiled 1024x1024x1024 fp32 (")


def test_floors_need_no_baseline(tmp_path: Path) -> None:
    cur = write(
        tmp_path / "cur.json",
        [
            rec("naive", 10.0, pct_of_roof=2.0, pct_of_reference=10.0),
            rec("tiled", 1.0, pct_of_roof=85.0, pct_of_reference=95.0),
        ],
    )
    ok = gate(cur, "--min-pct-of-roof", "tiled=80", "--min-pct-of-reference", "tiled=90")
    assert ok.exit_code == 0, ok.stderr
    bad = gate(cur, "--min-pct-of-roof", "tiled=90", "--format", "json")
    assert bad.exit_code == 1
    out = json.loads(bad.stdout)
    assert [c["stage"] for c in out["checks"]] == ["tiled"]  # only floored stages are checked
    assert out["checks"][0]["reason"] == "% of roof 85.0% below the floor 90%"
    every = gate(cur, "--min-pct-of-reference", "*=50")
    assert every.exit_code == 1
    assert one_line(every) == (
        "error: gate failed, 1 of 2 checks: naive 1024x1024x1024 "
        "fp32 (% of reference 10.0% below the floor 50%)"
    )
    # a floor naming a stage the run lacks is a usage error (it failed as a check, exit 1, before)
    missing = gate(cur, "--min-pct-of-roof", "nosuch=1")
    assert missing.exit_code == 2
    assert one_line(missing) == (
        f"error: --min-pct-of-roof names stage nosuch, which {cur} has no record of "
        "(its stages: naive, tiled)"
    )


def test_unknown_floor_stage_exits_2_with_a_baseline_too(tmp_path: Path, base: str) -> None:
    cur = write(tmp_path / "cur.json", [rec("naive", 10.0), rec("tiled", 1.0, pct_of_reference=50)])
    r = gate(cur, "--baseline", base, "--min-pct-of-reference", "tiled=1")
    assert r.exit_code == 0, r.stderr
    r = gate(cur, "--baseline", base, "--min-pct-of-reference", "tiledd=1", "--format", "json")
    assert r.exit_code == 2 and r.stdout == ""
    assert one_line(r).startswith("error: --min-pct-of-reference names stage tiledd, which ")


def test_dtype_mismatch_exits_2(tmp_path: Path) -> None:
    base = write(tmp_path / "bf16.json", [rec("mma_sync", 1.0, dtype="bf16")])
    cur = write(tmp_path / "fp32.json", [rec("mma_sync", 1.0)])
    for extra in ([], ["--allow-mismatch"]):
        r = gate(cur, "--baseline", base, *extra)
        assert r.exit_code == 2  # was exit 1: every check 'missing'
        assert one_line(r) == (
            f"error: {cur} is fp32 but {base} is bf16: "
            "gate a run against a baseline of the same dtype"
        )
    both = write(tmp_path / "both.json", [rec("a", 1.0), rec("b", 1.0, dtype="bf16")])
    r = gate(cur, "--baseline", both)
    assert r.exit_code == 2
    assert f"is fp32 but {both} is bf16+fp32:" in one_line(r)


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    cur = write(tmp_path / "cur.json", [rec("tiled", 1.0)])
    r = gate(cur)
    assert r.exit_code == 2
    assert one_line(r).startswith("error: nothing to check: give --baseline")
    r = gate(cur, "--min-pct-of-roof", "tiled")
    assert r.exit_code == 2
    assert "write STAGE=PERCENT" in one_line(r)
    r = gate(cur, "--min-pct-of-roof", "tiled=lots")
    assert r.exit_code == 2
    assert "'lots' is not a number" in one_line(r)


# The rules of the Windy Road JUnit.xsd (what strict consumers validate against), as a check.
JUNIT_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")  # xs:decimal: no exponent
JUNIT_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")  # no zone, no fraction
JUNIT_OUTCOMES = ("skipped", "error", "failure")


def junit_violations(text: str) -> list[str]:
    """Every way `text` breaks JUnit.xsd: required attributes, the order of a testsuite's
    children (properties, testcase*, system-out, system-err), at most one outcome per testcase,
    no system-out inside a testcase, and suite counts that match the testcases."""
    bad: list[str] = []
    root = ET.fromstring(text)
    if root.tag not in ("testsuites", "testsuite"):
        return [f"root element <{root.tag}>"]
    suites = list(root) if root.tag == "testsuites" else [root]
    for ts in suites:
        if ts.tag != "testsuite":
            bad.append(f"<{ts.tag}> in <testsuites>")
            continue
        needed = ["name", "timestamp", "hostname", "tests", "failures", "errors", "time"]
        needed += ["package", "id"] if root.tag == "testsuites" else []
        bad += [f"testsuite lacks {a}" for a in needed if not (ts.get(a) or "").strip()]
        if not JUNIT_TIMESTAMP.fullmatch(ts.get("timestamp") or ""):
            bad.append(f"testsuite timestamp {ts.get('timestamp')!r}")
        if not JUNIT_DECIMAL.fullmatch(ts.get("time") or ""):
            bad.append(f"testsuite time {ts.get('time')!r}")
        tags = [child.tag for child in ts]
        middle = tags[1:-2]
        if (
            tags[:1] != ["properties"]
            or tags[-2:] != ["system-out", "system-err"]
            or any(t != "testcase" for t in middle)
        ):
            bad.append(f"testsuite children {tags}")
        for prop in ts.iter("property"):
            if not prop.get("name") or prop.get("value") is None:
                bad.append(f"property {prop.attrib}")
        cases = ts.findall("testcase")
        for tc in cases:
            bad += [f"testcase lacks {a}" for a in ("name", "classname", "time") if not tc.get(a)]
            if not JUNIT_DECIMAL.fullmatch(tc.get("time") or ""):
                bad.append(f"testcase {tc.get('name')} time {tc.get('time')!r}")
            kids = [k.tag for k in tc]
            if len(kids) > 1 or any(k not in JUNIT_OUTCOMES for k in kids):
                bad.append(f"testcase {tc.get('name')} holds {kids}")
            bad += [
                f"<{k.tag}> without a type"
                for k in tc
                if k.tag in ("error", "failure") and not k.get("type")
            ]
        counts = {
            "tests": len(cases),
            "failures": sum(tc.find("failure") is not None for tc in cases),
            "errors": sum(tc.find("error") is not None for tc in cases),
            "skipped": sum(tc.find("skipped") is not None for tc in cases),
        }
        for attr, n in counts.items():
            if ts.get(attr) is not None and ts.get(attr) != str(n):
                bad.append(f"testsuite {attr}={ts.get(attr)} but {n} testcases")
    return bad


def test_junit_rules_catch_the_old_output() -> None:
    old = """<testsuites><testsuite name="roofline gate" tests="2" failures="0" errors="0"
    skipped="0"><properties/><testcase classname="roofline.gate.fp32" name="a">
    <system-out>within 5%</system-out></testcase></testsuite></testsuites>"""
    assert set(junit_violations(old)) == {
        "testsuite lacks timestamp",
        "testsuite lacks hostname",
        "testsuite lacks time",
        "testsuite lacks package",
        "testsuite lacks id",
        "testsuite timestamp None",
        "testsuite time None",
        "testsuite children ['properties', 'testcase']",
        "testcase lacks time",
        "testcase a time None",
        "testcase a holds ['system-out']",
        "testsuite tests=2 but 1 testcases",
    }


def test_junit_is_valid_and_counts_each_outcome(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)

    def noisy(factor: float) -> list[float]:  # 30 repeats of 8% spread: cannot tell 3% from 5%
        x = rng.normal(1.0, 0.08, 30)
        x += 1.0 - np.median(x)  # the record's time_ms is its samples' median (results.load)
        return [float(t) * factor for t in x]

    gone = rec("gone", 1.0, verified=None, tflops=None, error="skipped: too old")
    gone["time_ms"] = None
    b = write(
        tmp_path / "b.json",
        [rec("a", 1.0), rec("b", 2.0), rec("c", 1.0, samples_ms=noisy(1.0)), gone, rec("x", 1.0)],
    )
    c = write(
        tmp_path / "c.json",
        [rec("a", 1.0), rec("b", 2.5), rec("c", 1.03, samples_ms=noisy(1.03)), gone],
    )
    junit = tmp_path / "junit.xml"
    r = gate(c, "--baseline", b, "--junit", str(junit))
    assert r.exit_code == 1, r.stderr
    text = junit.read_text()
    assert junit_violations(text) == []
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    counts = [suite.get(a) for a in ("tests", "failures", "errors", "skipped")]
    assert counts == ["5", "2", "1", "1"]
    cases = {tc.get("name"): tc for tc in suite.findall("testcase")}
    assert list(cases) == [
        "a 1024x1024x1024 fp32",
        "b 1024x1024x1024 fp32",
        "c 1024x1024x1024 fp32",
        "gone 1024x1024x1024 fp32",
        "x 1024x1024x1024 fp32",
    ]
    assert [len(tc) for tc in cases.values()] == [0, 1, 1, 1, 1]
    assert cases["a 1024x1024x1024 fp32"].get("time") == "0.001"  # the current median, seconds
    assert cases["b 1024x1024x1024 fp32"].get("time") == "0.0025"
    assert cases["c 1024x1024x1024 fp32"].get("time") == "0.00103"
    assert cases["gone 1024x1024x1024 fp32"].get("time") == "0"  # not run
    assert cases["x 1024x1024x1024 fp32"].get("time") == "0"  # not in the current run
    fail = cases["b 1024x1024x1024 fp32"].find("failure")
    assert fail is not None and fail.get("type") == "regression"
    assert fail.get("message") == "TFLOP/s -20.0%, beyond -5% (medians only: no samples)"
    err = cases["c 1024x1024x1024 fp32"].find("error")
    assert err is not None and err.get("type") == "inconclusive"
    assert "too noisy to tell (bootstrap 99% CI" in (err.get("message") or "")
    missing = cases["x 1024x1024x1024 fp32"].find("failure")
    assert missing is not None and missing.get("type") == "missing"
    assert suite.get("time") == "0.00453"
    out = suite.find("system-out")
    assert out is not None and (out.text or "").startswith("gate failed, 2 of 5 checks: b ")
    assert suite.get("hostname") == "localhost"  # the test documents name no host
    assert JUNIT_TIMESTAMP.fullmatch(suite.get("timestamp") or "")


def test_junit_of_a_passing_committed_run(tmp_path: Path) -> None:
    path = str(RESULTS / "gemm-fp16-4096.json.gz")
    junit = tmp_path / "junit.xml"
    assert gate(path, "--baseline", path, "--junit", str(junit)).exit_code == 0
    text = junit.read_text()
    assert junit_violations(text) == []
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    doc = paths.read_json(Path(path), "results file")
    assert suite.get("timestamp") == doc["created"][:19]  # written in UTC
    assert suite.get("hostname") == doc["environment"]["host"]
    times = [float(tc.get("time") or "nan") for tc in suite.findall("testcase")]
    assert times == pytest.approx([r["time_ms"] / 1e3 for r in doc["records"]], rel=1e-6)


def test_benchmark_json(tmp_path: Path, base: str) -> None:
    cur = write(tmp_path / "cur.json", [rec("naive", 10.0), rec("tiled", 0.5)])
    out = tmp_path / "bench.json"
    r = gate(cur, "--baseline", base, "--benchmark-json", str(out))
    assert r.exit_code == 0, r.stderr
    assert paths.read_json(out, "results file") == [
        {"name": "naive 1024x1024x1024 fp32", "unit": "TFLOP/s", "value": FLOPS / 1e-2 / 1e12},
        {"name": "tiled 1024x1024x1024 fp32", "unit": "TFLOP/s", "value": FLOPS / 5e-4 / 1e12},
    ]


def test_markdown_summary(tmp_path: Path, base: str) -> None:
    cur = write(tmp_path / "cur.json", [rec("naive", 10.0), rec("tiled", 2.0)])
    md = tmp_path / "summary.md"
    r = gate(cur, "--baseline", base, "--markdown", str(md))
    assert r.exit_code == 1
    lines = md.read_text().splitlines()
    assert lines[0] == "## roofline gate: FAILED"
    assert lines[2] == (
        f"Current: `{cur}` (Test GPU, driver 570.1, CUDA 12.8); "
        f"baseline: `{base}` (Test GPU, driver 570.1, CUDA 12.8)"
    )
    assert lines[4] == (
        "gate failed, 1 of 2 checks: tiled 1024x1024x1024 fp32 "
        "(TFLOP/s -50.0%, beyond -5% (medians only: no samples))."
    )
    assert lines[6:10] == [
        "| stage | shape | dtype | baseline TFLOP/s | current TFLOP/s | change | noise "
        "| verdict | reason |",
        "|---|---|---|---:|---:|---:|---:|---|---|",
        "| naive | 1024x1024x1024 | fp32 | 0.21 | 0.21 | +0.0% | - | pass "
        "| within 5% (medians only: no samples) |",
        "| tiled | 1024x1024x1024 | fp32 | 2.15 | 1.07 | -50.0% | - | FAIL "
        "| TFLOP/s -50.0%, beyond -5% (medians only: no samples) |",
    ]
    assert lines[11].startswith("Tolerance 5% of TFLOP/s. Rules: bootstrap: both runs recorded")
    # --format markdown prints the same text
    r2 = gate(cur, "--baseline", base, "--format", "markdown")
    assert r2.stdout == md.read_text()


def test_improvement_and_unchanged_files(tmp_path: Path, base: str) -> None:
    cur = write(tmp_path / "cur.json", [rec("naive", 5.0), rec("tiled", 1.0)])
    r = gate(cur, "--baseline", base, "--format", "csv")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0] == (
        "stage,shape,dtype,baseline_tflops,tflops,change_pct,ci_low_pct,ci_high_pct,"
        "noise_pct,baseline_noise_pct,rule,verdict,reason"
    )
    assert r.stdout.splitlines()[1].endswith(
        ",medians,pass,faster by 100.0%: consider a new baseline (medians only: no samples)"
    )


# -- roofline baseline save ------------------------------------------------------------------


def save(*args: str) -> Any:
    return CliRunner().invoke(cli, ["baseline", "save", *args], env=ENV)


def test_baseline_save(tmp_path: Path) -> None:
    src = write(tmp_path / "run.json", [rec("naive", 10.0), rec("tiled", 1.0)])
    dst = tmp_path / "benchmarks" / "baseline.json"
    r = save(src, str(dst))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == (f"saved {dst}: 2 records from {src} (Test GPU, driver 570.1, CUDA 12.8)\n")
    assert paths.read_json(dst, "results file") == paths.read_json(Path(src), "results file")
    again = save(src, str(dst))
    assert again.exit_code == 2
    assert one_line(again) == f"error: {dst} exists: pass --force to replace it"
    assert save(src, str(dst), "--force").exit_code == 0


def test_baseline_save_refuses_unverified_and_models(tmp_path: Path) -> None:
    src = write(tmp_path / "run.json", [rec("naive", 10.0), rec("tiled", 1.0, verified=False)])
    r = save(src, str(tmp_path / "b.json"))
    assert r.exit_code == 2
    assert one_line(r) == (
        f"error: {src} is not a clean run: not verified or not timed: tiled 1024x1024x1024 fp32"
    )
    assert not (tmp_path / "b.json").exists()
    doc = paths.read_json(Path(src), "results file")
    doc["device"] = None
    Path(src).write_text(json.dumps(doc))
    r = save(src, str(tmp_path / "b.json"))
    assert r.exit_code == 2
    assert "is a model document" in one_line(r)


# -- every kind of document: records paired by results.identity ------------------------------

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
LLM_DOC = str(RESULTS / "llm-llama-7b-fp16.json.gz")


def measured(name: str, time_ms: float, **kw: Any) -> dict[str, Any]:
    """A record as rooflinecli.api.measure() makes it: a name, no m, n, k, no verification."""
    r = {
        "stage": name,
        "kind": "user",
        "dtype": "fp16",
        "m": None,
        "n": None,
        "k": None,
        "flops": 1e12,
        "time_ms": time_ms,
        "time_ms_stdev": 0.01,
        "repeats": 50,
        "tflops": 1e12 / (time_ms * 1e-3) / 1e12,
        "verified": None,
        "device_name": "Test GPU",
    }
    r.update(kw)
    return r


def test_identity_of_each_kind_of_record() -> None:
    doc = paths.read_json(Path(LLM_DOC), "results file")
    a, b = (results.identity(r) for r in doc["records"][12:24:6])  # ffn_gate and ffn_up, b1
    assert (a.stage, a.shape, b.shape) == ("mma_sync", (1, 11008, 4096), (1, 11008, 4096))
    assert a != b and a.workload == "llama-7b:ffn_gate:b1" and b.workload == "llama-7b:ffn_up:b1"
    assert a.label == "mma_sync 1x11008x4096 fp16 llama-7b:ffn_gate:b1"
    user = results.identity(measured("torch.matmul", 1.0))
    assert (user.stage, user.shape, user.workload) == ("torch.matmul", None, None)
    assert user.label == "torch.matmul fp16"
    gemm = results.identity(rec("tiled", 1.0))
    assert gemm.label == "tiled 1024x1024x1024 fp32" and gemm.shape_text == "1024x1024x1024"
    with pytest.raises(RooflineError, match="give all of m, n and k, or none"):
        results.identity(rec("tiled", 1.0, k=None))
    with pytest.raises(RooflineError, match="whole numbers"):
        results.identity(rec("tiled", 1.0, k=1.5))


def test_llm_document_gates_against_itself_and_can_be_a_baseline(tmp_path: Path) -> None:
    r = gate(LLM_DOC, "--baseline", LLM_DOC, "--format", "json")
    assert r.exit_code == 0, r.stderr
    checks = json.loads(r.stdout)["checks"]
    assert len(checks) == 72
    assert {c["verdict"] for c in checks} == {"pass", "skip"}
    gate_up = [c for c in checks if c["stage"] == "mma_sync" and c["shape"] == "1x11008x4096"]
    assert [c["workload"] for c in gate_up] == [f"llama-7b:{g}:b1" for g in ("ffn_gate", "ffn_up")]
    dst = tmp_path / "llm-baseline.json"
    saved = save(LLM_DOC, str(dst))
    assert saved.exit_code == 0, saved.stderr
    assert saved.stdout.startswith(f"saved {dst}: 72 records from {LLM_DOC} (NVIDIA H200")


def test_measure_document_gates_against_itself_and_can_be_a_baseline(tmp_path: Path) -> None:
    from rooflinecli import api

    def made(records: list[dict[str, Any]], name: str) -> str:
        """What a user writes: document() of measure() records (no GPU here: device by name)."""
        path = tmp_path / name
        path.write_text(results.dumps(api.document(records, spec="h200-sxm")))
        return str(path)

    recs = [measured("torch.matmul", 1.0), measured("my_kernel", 2.0)]
    doc = made(recs, "measured.json")
    assert paths.read_json(Path(doc), "results file")["device"] == {"name": "Test GPU"}
    r = gate(doc, "--baseline", doc, "--format", "json")
    assert r.exit_code == 0, r.stderr  # was TypeError: int() of the records' null m, n, k
    names = [(c["stage"], c["shape"], c["verdict"]) for c in json.loads(r.stdout)["checks"]]
    assert names == [("torch.matmul", "-", "pass"), ("my_kernel", "-", "pass")]
    assert save(doc, str(tmp_path / "b.json")).exit_code == 0
    slower = made([measured("torch.matmul", 1.5), recs[1]], "slower.json")
    r = gate(slower, "--baseline", doc)
    assert r.exit_code == 1
    assert "torch.matmul fp16 (TFLOP/s -33.3%" in one_line(r)


def test_genuinely_duplicated_identities_exit_2(tmp_path: Path) -> None:
    doc = paths.read_json(Path(LLM_DOC), "results file")
    doc["records"][18]["workload"] = doc["records"][12]["workload"]  # ffn_up claims ffn_gate
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps(doc))
    for r in (gate(str(dup), "--baseline", LLM_DOC), save(str(dup), str(tmp_path / "b.json"))):
        assert r.exit_code == 2
        assert one_line(r) == (
            f"error: {dup}: mma_sync 1x11008x4096 fp16 llama-7b:ffn_gate:b1 appears twice"
        )
    users = write(tmp_path / "u.json", [measured("f", 1.0), measured("f", 2.0)])
    r = gate(users, "--baseline", users)
    assert r.exit_code == 2
    assert one_line(r) == f"error: {users}: f fp16 appears twice"


def test_compare_shows_the_workload_of_llm_rows() -> None:
    r = CliRunner().invoke(cli, ["compare", LLM_DOC, LLM_DOC, "--format", "markdown"], env=ENV)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("### A: ")  # every Markdown table has a title
    assert any(line.startswith("| stage | workload | shape | dtype |") for line in lines)
    assert "| mma_sync | llama-7b:ffn_up:b1 | 1x11008x4096 | fp16 |" in r.stdout


# -- the regressions the issue reported, in the committed documents (no samples) -------------


def slower(tmp_path: Path, src: str, factor: float, stages: set[str], m: int) -> str:
    """A copy of a committed document with `stages` at M=m made `factor` times slower."""
    doc = paths.read_json((RESULTS / src), "results file")
    for r in doc["records"]:
        if r["stage"] in stages and r["m"] == m:
            for f in ("time_ms", "time_ms_min", "time_ms_max", "time_ms_stdev"):
                r[f] *= factor
            r["tflops"] /= factor
    out = tmp_path / f"slower-{src}"
    out.write_text(json.dumps(doc))
    return str(out)


def test_committed_fp16_8192_ten_percent_slower_fails(tmp_path: Path) -> None:
    base = str(RESULTS / "gemm-fp16-8192.json.gz")
    cur = slower(
        tmp_path, "gemm-fp16-8192.json.gz", 1.1, {"wgmma_persistent", "cublas_hgemm"}, 8192
    )
    r = gate(cur, "--baseline", base, "--format", "json")
    assert r.exit_code == 1  # was `pass (noise)`, exit 0
    out = json.loads(r.stdout)
    failed = {c["stage"]: c for c in out["checks"] if c["verdict"] == "FAIL"}
    assert set(failed) == {"wgmma_persistent", "cublas_hgemm"}
    assert all(c["rule"] == "medians" for c in out["checks"])
    assert failed["wgmma_persistent"]["reason"] == (
        "TFLOP/s -9.1%, beyond -5% (medians only: no samples)"
    )
    assert one_line(r).startswith(
        "error: gate failed, 2 of 8 checks: wgmma_persistent 8192x8192x8192 fp16 (TFLOP/s -9.1%"
    )
    mma = slower(tmp_path, "gemm-fp16-8192.json.gz", 1.25, {"mma_sync"}, 8192)
    r = gate(mma, "--baseline", base)
    assert r.exit_code == 1
    assert "mma_sync 8192x8192x8192 fp16 (TFLOP/s -20.0%, beyond -5%" in one_line(r)


def test_committed_fp16_4096_mma_sync_1_9x_slower_fails(tmp_path: Path) -> None:
    base = str(RESULTS / "gemm-fp16-4096.json.gz")
    cur = slower(tmp_path, "gemm-fp16-4096.json.gz", 1.9, {"mma_sync"}, 4096)
    r = gate(cur, "--baseline", base)
    assert r.exit_code == 1  # 2 combined stdevs of its repeats are ±97%: medians decide
    assert one_line(r) == (
        "error: gate failed, 1 of 16 checks: mma_sync 4096x4096x4096 fp16 "
        "(TFLOP/s -47.4%, beyond -5% (medians only: no samples))"
    )


@pytest.mark.parametrize(
    "name", ["gemm-fp16-8192.json.gz", "gemm-bf16-4096.json.gz", "gemm-fp32-odd.json.gz"]
)
def test_committed_documents_pass_against_themselves(name: str) -> None:
    path = str(RESULTS / name)
    r = gate(path, "--baseline", path, "--format", "json")
    assert r.exit_code == 0, r.stderr
    n = len(json.loads(r.stdout)["checks"])
    assert json.loads(r.stdout)["summary"] == f"gate passed: {n} checks ({n} by medians only)"
