"""measure(..., counters=True) on the CPU: the timer and the device are faked, ncu is the
stand-in of tests/fixtures/ncu. The script's second run, under ncu, is simulated by its
environment variable."""

import json
import sys
from pathlib import Path

import pytest

from rooflinecli import api
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import timer

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ncu"
N = 4096
TIMES = [0.21, 0.20, 0.19, 0.20, 0.22]  # ms


@pytest.fixture
def fake_gpu(monkeypatch):
    calls = []

    def time_callable(fn, name, timing):
        fn()
        calls.append(name)
        return timer.Timed([list(TIMES)])

    monkeypatch.setattr(timer, "time_callable", time_callable)
    monkeypatch.setattr(api, "_device_name", lambda: "NVIDIA H200")
    monkeypatch.setattr(api, "_sync", lambda: None)
    return calls


@pytest.fixture
def one_gemm_csv(tmp_path, monkeypatch, ncu_stand_in):
    """ncu's rows for one call: the first FP16 GEMM launch of the fixture's CSV."""
    lines = (FIXTURES / "app-raw.csv").read_text().splitlines()
    path = tmp_path / "one.csv"
    path.write_text("\n".join(lines[:3]) + "\n")
    monkeypatch.setenv("ROOFLINE_NCU", str(ncu_stand_in))
    monkeypatch.setenv("FAKE_NCU_CSV", str(path))
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("FAKE_NCU_ENV_LOG", str(tmp_path / "env.log"))
    monkeypatch.delenv(api.COUNTERS_CHILD, raising=False)
    monkeypatch.setattr(api, "script_argv", lambda: [sys.executable, "bench.py", "--n", "4096"])
    return tmp_path


def test_measure_without_counters(fake_gpu):
    rec = api.measure(lambda: None, flops=2 * N**3, name="mm", dtype="fp16", shape=(N, N, N))
    assert rec["time_ms"] == 0.20 and rec["repeats"] == 5
    assert rec["tflops"] == pytest.approx(2 * N**3 / 0.20e-3 / 1e12)
    assert rec.get("flops_hw") is None and fake_gpu == ["mm"]


def test_counters_rerun_the_script_under_ncu_and_count_one_call(fake_gpu, one_gemm_csv):
    rec = api.measure(
        lambda: None,
        flops=2 * N**3,
        bytes=2 * 3 * N * N,
        name="torch.matmul fp16",
        dtype="fp16",
        shape=(N, N, N),
        counters=True,
    )
    # the speed is the one timed here, outside ncu
    assert rec["time_ms"] == 0.20 and rec["tflops"] == pytest.approx(2 * N**3 / 0.2e-3 / 1e12)
    assert rec["flops_hw"] == 2 * N**3 + 2 * N * N
    assert rec["flops_hw_by"] == {"fp16 tensor": 2 * N**3, "fp32 simt": 2 * N * N}
    assert rec["flops_hw_ratio"] == pytest.approx(1 + 1 / N)
    assert rec["ai_l1"] is None and "bypassed" in rec["ai_l1_note"]  # TMA: L1 carried nothing
    assert rec["ai_l2"] == pytest.approx(rec["flops_hw"] / 1_409_286_144)
    assert rec["ncu_time_ms"] == pytest.approx(0.196512) and rec["ncu_kernels"][0].startswith(
        "sm90"
    )
    calls = [json.loads(ln) for ln in (one_gemm_csv / "calls.log").read_text().splitlines()]
    (profiled,) = [c for c in calls if "--export" in c]
    # only the range the script's second run opens around one call; the script as it was started
    i = profiled.index("--nvtx-include")
    assert profiled[i - 1] == "--nvtx" and profiled[i + 1] == "roofline_counters@torch.matmul_fp16/"
    assert profiled[-4:] == [sys.executable, "bench.py", "--n", "4096"]
    env = [json.loads(ln) for ln in (one_gemm_csv / "env.log").read_text().splitlines()]
    assert env[-1][api.COUNTERS_CHILD] == "torch.matmul_fp16"


def test_the_run_under_ncu_makes_the_counted_call_and_starts_no_ncu(fake_gpu, monkeypatch):
    events = []

    class Range:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            events.append(("push", self.name))

        def __exit__(self, *exc):
            events.append(("pop", self.name))

    monkeypatch.setattr(api, "_counted_range", Range)
    monkeypatch.setenv(api.COUNTERS_CHILD, "mm_1")
    monkeypatch.setenv("ROOFLINE_NCU", "/nonexistent/ncu")  # would fail if it were started
    rec = api.measure(lambda: events.append("call"), flops=1.0, name="mm 1", counters=True)
    # a call that may set up handles, then the one in the range, then the timing's own calls
    assert events[:4] == ["call", ("push", "mm 1"), "call", ("pop", "mm 1")]
    assert rec["counters_reason"] == "this run is the script's run under ncu"
    other = api.measure(lambda: events.append("x"), flops=1.0, name="other", counters=True)
    assert ("push", "other") not in events and other.get("flops_hw") is None


def test_counters_without_ncu_or_a_script_are_one_clear_error(fake_gpu, monkeypatch, tmp_path):
    from rooflinecli.gpu import profile as prof

    monkeypatch.delenv(api.COUNTERS_CHILD, raising=False)
    monkeypatch.setattr(api, "script_argv", lambda: [sys.executable, "bench.py"])
    monkeypatch.delenv("ROOFLINE_NCU", raising=False)
    monkeypatch.setattr(prof, "_candidates", lambda: [])
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RooflineError, match=r"Nsight Compute \(ncu\) not found"):
        api.measure(lambda: None, flops=1.0, name="mm", counters=True)


@pytest.mark.parametrize("argv", [["python"], ["python", "-c", "pass"], ["python", "-"]])
def test_a_script_that_cannot_be_rerun(monkeypatch, argv):
    monkeypatch.setattr(sys, "orig_argv", argv)
    with pytest.raises(RooflineError, match="not with -c, stdin, a REPL or a notebook"):
        api.script_argv()


def test_range_names_avoid_ncus_filter_syntax(monkeypatch):
    assert api.range_name("torch.matmul fp16 @ b/2") == "torch.matmul_fp16___b_2"
    monkeypatch.setattr(sys, "orig_argv", ["/usr/bin/python3", "-m", "pytest", "-q", "t.py"])
    monkeypatch.setattr(sys, "argv", ["/x/pytest/__main__.py", "-q", "t.py"])
    assert api.script_argv() == [sys.executable, "-m", "pytest", "-q", "t.py"]
