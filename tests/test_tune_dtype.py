"""`roofline tune gemm --dtype`: a Tensor Core stage is tuned in the dtype asked for (bf16 as well
as its first, fp16), beside that dtype's reference; a dtype the stage does not build is refused
in one line before any GPU work."""

import sys

import pytest
from fakes import fake_run_gemm

from rooflinecli.cli import cli


@pytest.fixture
def fake_tune(monkeypatch, tmp_path):
    """No GPU and no compiler: the stage's registry entry is its only variant; the run is the
    fake runner's, and what it was asked to run is kept."""
    from rooflinecli.gpu import device, runner
    from rooflinecli.gpu import tune as core

    asked = {}
    fake = fake_run_gemm(2, each=lambda i, r: r.setdefault("params", {}))

    def run_gemm(shapes, chosen, spec_arg, *args, **kw):  # type: ignore[no-untyped-def]
        asked.update(shapes=shapes, stages=[s.name for s in chosen], dtype=kw["dtype"])
        return fake(shapes, chosen, spec_arg, *args, **kw)

    monkeypatch.setattr(runner, "run_gemm", run_gemm)
    monkeypatch.setattr(device, "info", lambda: {"name": "FAKE H200", "arch": "sm_90a"})
    monkeypatch.setattr(core, "candidates", lambda stage, arch: ([stage], []))
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    return asked


@pytest.mark.parametrize("dtype", ["bf16", "fp16", None])
def test_tune_runs_the_dtype_asked_for(runner, fake_tune, dtype):
    args = ["tune", "gemm", "--stage", "wgmma_cluster", "--m", "256", "--format", "json"]
    r = runner.invoke(cli, args + (["--dtype", dtype] if dtype else []))
    assert r.exit_code == 0, r.output
    assert fake_tune == {
        "shapes": [(256, 256, 256)],
        "stages": ["wgmma_cluster", "cublas_hgemm"],  # the 16-bit reference, both dtypes
        "dtype": dtype or "fp16",  # the stage's first dtype
    }


def test_tune_refuses_a_dtype_the_stage_does_not_build(runner, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # refused before any GPU work
    r = runner.invoke(cli, ["tune", "gemm", "--stage", "double_buffer", "--dtype", "bf16"])
    assert r.exit_code == 2, r.output
    assert r.stderr.strip() == "error: stage double_buffer builds for fp32, not bf16"


def test_tune_takes_a_decode_shape(runner, fake_tune):
    """--n and --k make the shape a GEMV's (a decode stage refuses M = N = K = 1); the title
    names it."""
    args = ["tune", "gemm", "--stage", "gemv_streamk", "--m", "1", "--n", "11008", "--k", "4096"]
    r = runner.invoke(cli, [*args, "--dtype", "bf16", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert fake_tune == {
        "shapes": [(1, 11008, 4096)],
        "stages": ["gemv_streamk", "cublas_hgemm"],
        "dtype": "bf16",
    }


def test_the_winner_is_the_best_ratio_to_the_reference_timed_beside_it():
    """On a power-capped GPU the variants' clocks differ: A ran faster in TFLOP/s at a higher
    clock, B was closer to cuBLAS in the same rounds. The ratio decides; TFLOP/s only where a
    record has no ratio."""
    from rooflinecli.gpu import tune

    a = {"kind": "stage", "stage": "s@X=1", "verified": True, "tflops": 700.0,
         "pct_of_reference": 99.6}  # fmt: skip
    b = {"kind": "stage", "stage": "s@X=2", "verified": True, "tflops": 692.0,
         "pct_of_reference": 101.0}  # fmt: skip
    ref = {"kind": "reference", "stage": "cublas", "verified": True, "tflops": 690.0}
    bad = {"kind": "stage", "stage": "s@X=3", "verified": False, "tflops": 900.0,
           "pct_of_reference": 130.0}  # fmt: skip
    assert tune.best([a, b, ref, bad]) is b
    assert tune.best([{**a, "pct_of_reference": None}, b]) is not b  # no ratio: TFLOP/s
    assert tune.best([bad, ref]) is None
