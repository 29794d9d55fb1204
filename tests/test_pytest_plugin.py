"""The roofline_benchmark fixture in a pytest run of its own (pytester), on the CPU: the inner
tests fake the timer and the device, as tests/test_api_counters.py does."""

import os
from pathlib import Path

import pytest

from rooflinecli import results
from rooflinecli.cli import cli

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parent.parent

INNER = """
from rooflinecli import api
from rooflinecli.gpu import timer

N = 4096


def fake(monkeypatch, ms):
    def time_callable(fn, name, timing):
        fn()
        return timer.Timed([[ms, ms * 1.01, ms * 0.99, ms, ms]])

    monkeypatch.setattr(timer, "time_callable", time_callable)
    monkeypatch.setattr(api, "_device_name", lambda: "NVIDIA H200")


def test_matmul(roofline_benchmark, monkeypatch):
    fake(monkeypatch, 2.0)
    calls = []
    rec = roofline_benchmark(lambda: calls.append(1), flops=2 * N**3, bytes=4 * 3 * N * N,
                             shape=(N, N, N))
    assert calls and rec["stage"] == "test_matmul" and rec["time_ms"] == 2.0


def test_add(roofline_benchmark, monkeypatch):
    fake(monkeypatch, 0.5)
    roofline_benchmark(lambda: None, flops=N * N, bytes=12 * N * N, name="add", shape=(N, N, 1))
"""


@pytest.fixture
def inner(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # this checkout's rooflinecli, not an install
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # loaded once, by -p below
    monkeypatch.delenv("ROOFLINE_BENCHMARK_OUTPUT", raising=False)
    pytester.makepyfile(test_bench=INNER)
    return pytester


def _run(pytester, *args):
    return pytester.runpytest_subprocess(
        "-p", "rooflinecli.pytest_plugin", "-p", "no:cacheprovider", *args
    )


def test_the_fixture_writes_a_document_the_gate_takes(inner, runner, tmp_path):
    out = tmp_path / "bench.json"
    res = _run(inner, "--roofline-output", str(out))
    res.assert_outcomes(passed=2)
    res.stdout.fnmatch_lines(["*roofline benchmark*", "test_matmul: 2.0000 ms median of 5*",
                              f"wrote {out} (2 records)"])  # fmt: skip
    doc = results.load(out)
    assert doc["command"] == "pytest roofline_benchmark" and doc["spec"]["name"] == "h200-sxm"
    recs = {r["stage"]: r for r in doc["records"]}
    assert set(recs) == {"test_matmul", "add"}
    assert recs["test_matmul"]["tflops"] == pytest.approx(2 * 4096**3 / 2e-3 / 1e12)
    assert recs["test_matmul"]["test"].endswith("test_bench.py::test_matmul")
    assert recs["add"]["roof"] == "memory" and recs["add"]["pct_of_roof"] > 0
    shown = runner.invoke(cli, ["show", str(out), "--no-chart"])
    assert shown.exit_code == 0 and "test_matmul" in shown.output
    gated = runner.invoke(cli, ["gate", str(out), "--baseline", str(out)])
    assert gated.exit_code == 0, gated.output


def test_output_path_from_the_environment_and_a_spec(inner, monkeypatch, tmp_path):
    out = tmp_path / "env.json"
    monkeypatch.setenv("ROOFLINE_BENCHMARK_OUTPUT", str(out))
    _run(inner, "--roofline-spec", "h100-sxm5").assert_outcomes(passed=2)
    assert results.load(out)["spec"]["name"] == "h100-sxm5"


def test_without_an_output_the_records_are_listed(inner):
    res = _run(inner)
    res.assert_outcomes(passed=2)
    res.stdout.fnmatch_lines(["add: 0.5000 ms median of 5*", "no document written*"])
    assert not [p for p in os.listdir(inner.path) if p.endswith(".json")]


def test_a_document_that_cannot_be_written_fails_the_run(inner, tmp_path):
    res = _run(inner, "--roofline-output", str(tmp_path / "no" / "such" / "dir.json"))
    assert res.ret == 1
    res.stdout.fnmatch_lines(["could not write *folder * does not exist*"])
