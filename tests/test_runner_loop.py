"""The one runner loop (rooflinecli.gpu.loop) on the CPU: the GEMM runner's flow with NumPy as
the device and stand-in launches. What it checks is bookkeeping the GPU tests cannot isolate:
every stage is timed interleaved with the reference, the reference keeps every repeat it ran
beside them, the last timed launch is checked, skips and failures report no speed."""

from __future__ import annotations

import itertools
import json
from contextlib import contextmanager

import numpy as np
import pytest
from fakes import FakeCuda

from rooflinecli import results
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import device, runner
from rooflinecli.gpu.timer import Timing
from rooflinecli.stages import gemm


class _FakeCuda(FakeCuda):
    """FakeCuda whose intervals differ a little, each a new value."""

    ticks = itertools.count()

    @classmethod
    def get_elapsed_time(cls, start, end):
        return 1.0 + (next(cls.ticks) % 7) / 100


class _FakeCupy:
    cuda = _FakeCuda

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def get_default_memory_pool():
        class Pool:
            def free_all_blocks(self):
                pass

        return Pool()


class _Readings:
    n = itertools.count()

    def summary(self):
        i = next(self.n)
        limited = "power cap" if i == 0 else None
        return {"sm_clock_mhz": 1700 + 10 * i, "sm_clock_mhz_min": 1600, "sm_clock_mhz_max": 1800,
                "clock_samples": 4, "clock_limited_by": limited}  # fmt: skip


class _Sampler:
    @contextmanager
    def sampling(self):
        yield _Readings()


# what each stand-in stage writes into C: the answer, nothing (C stays NaN), the answer on the
# first launch only, or it raises
BEHAVIOUR = {"naive_xcol": "right", "naive_xrow": "nothing", "smem_tile": "first only",
             "blocktile_1d": "raises", "thread_tile_4x4": "refused in launcher"}  # fmt: skip


@pytest.fixture
def fake_gpu(monkeypatch):
    fake = _FakeCupy()
    monkeypatch.setattr(device, "cupy", lambda: fake)
    monkeypatch.setattr(device, "l2_bytes", lambda: 50 << 20)
    monkeypatch.setattr(device, "clock_sampler", lambda: _Sampler())
    monkeypatch.setattr(runner, "harness", lambda cp, arch, dtype: None)  # NumPy does the checks
    cc = {"value": "9.0"}
    monkeypatch.setattr(
        device,
        "info",
        lambda: {"name": "NVIDIA H200", "arch": "sm_90a", "compute_capability": cc["value"],
                 "sm_count": 132},
    )  # fmt: skip
    launches: list[str] = []

    def launcher(cp, stage, g, arch, sm_count=None):
        if stage.reference:

            def library():
                launches.append(stage.name)
                g.C_ref[...] = g._store(g.ref)

            return library, {"registers": None, "smem_bytes": None, "spill_bytes": None}
        how = BEHAVIOUR.get(stage.name, "right")
        if how == "refused in launcher":
            raise RooflineError(f"stage {stage.name}: no tensor map for this shape")
        count = itertools.count()

        def call():
            launches.append(stage.name)
            if how == "raises":
                raise RuntimeError("unspecified launch error\nmore")
            if how == "nothing":
                return
            wrong = how == "first only" and next(count) > 0
            g.C[...] = g._store(1.5 * g.ref if wrong else g.ref)

        meta = {"registers": 32, "smem_bytes": 0, "spill_bytes": 0, "grid": [1, 1, 1],
                "block": [16, 16, 1], "params": dict(stage.params)}  # fmt: skip
        return call, meta

    monkeypatch.setattr(runner, "launcher", launcher)
    return {"launches": launches, "cc": cc}


def _timing(**kw):
    return Timing(flush_l2=False, hold=False, budget_ms=5, warmup_ms=1, min_repeats=5, **kw)


def _run(stages, shapes, **kw):
    chosen = gemm.select(",".join(stages), kw.pop("dtype", "fp32"))
    return runner.run_gemm(shapes, chosen, None, timing=_timing(), **kw)[2]


def test_each_stage_is_timed_beside_the_reference_and_the_reference_keeps_every_repeat(fake_gpu):
    recs = _run(["naive_xcol", "naive_xrow", "smem_tile"], [(32, 48, 16)])
    by = {r["stage"]: r for r in recs}
    right, nothing, first_only, ref = (
        by["naive_xcol"], by["naive_xrow"], by["smem_tile"], by["cublas"]
    )  # fmt: skip
    assert [r["stage"] for r in recs] == ["naive_xcol", "naive_xrow", "smem_tile", "cublas"]
    assert right["verified"] is True and right["tflops"] > 0 and right["pct_of_reference"] > 0
    assert right["time_ms"] == pytest.approx(np.median(right["samples_ms"]))
    assert right["reference_time_ms"] == pytest.approx(np.median(right["reference_samples_ms"]))
    assert right["pct_of_reference"] == pytest.approx(
        100 * right["reference_time_ms"] / right["time_ms"]
    )
    assert nothing["verified"] is False and nothing["tflops"] is None
    assert nothing["time_ms"] is not None  # timed, but a wrong result is never reported as fast
    # right on its first launch, wrong on the last timed one
    assert first_only["rel_error"] <= first_only["tolerance_rel"]
    assert first_only["verified"] is False and first_only["tflops"] is None
    assert first_only["error"] == "the last timed launch's output failed its check"
    # the reference's repeats: every one it ran beside the three stages, pooled
    paired = [x for r in (right, nothing, first_only) for x in r["reference_samples_ms"]]
    assert ref["samples_ms"] == paired and ref["repeats"] == len(paired)
    assert ref["timing"] == "every repeat it ran beside the stages of this shape"
    assert ref["clock_samples"] == 12 and ref["clock_limited_by"] == "power cap"
    assert all(r["compared_with"] == "cublas" for r in (right, nothing, first_only))
    # a stage's launches: one checked, one each to size the repeats, a warm-up each, then the
    # rounds, each running both, the order alternating
    launches = fake_gpu["launches"]
    mine = launches[launches.index("naive_xcol") : launches.index("naive_xrow")]
    pair = ["naive_xcol", "cublas"]
    assert mine[:5] == ["naive_xcol", *pair, *pair]
    assert mine[5:] == (pair + pair[::-1]) * (right["repeats"] // 2) + pair * (right["repeats"] % 2)
    results.validate(json.loads(results.dumps(results.new_document({}, None, recs))))


def test_skips_and_failures_report_no_speed_and_say_why(fake_gpu):
    fake_gpu["cc"]["value"] = "8.0"
    recs = _run(["naive_xcol", "thread_tile_4x4", "gemv_naive", "blocktile_1d"], [(100, 64, 64)])
    by = {r["stage"]: r for r in recs}
    assert by["gemv_naive"]["verified"] is None
    assert by["gemv_naive"]["error"].startswith("skipped: gemv_naive is a decode stage")
    assert by["thread_tile_4x4"]["verified"] is False
    assert by["thread_tile_4x4"]["error"] == "stage thread_tile_4x4: no tensor map for this shape"
    assert by["blocktile_1d"]["error"] == "unspecified launch error"
    for name in ("gemv_naive", "thread_tile_4x4", "blocktile_1d"):
        assert by[name]["tflops"] is None and by[name]["time_ms"] is None
        assert "samples_ms" not in by[name] and "compared_with" not in by[name]
    assert by["naive_xcol"]["verified"] is True


def test_a_stage_too_new_for_the_device_is_skipped_before_its_shape_refusal(fake_gpu):
    fake_gpu["cc"]["value"] = "8.0"
    recs = _run(["wgmma_tma"], [(64, 60, 64)], dtype="fp16")
    assert recs[0]["error"] == "skipped: wgmma_tma needs compute capability 9.0"


def test_work_decides_what_runs_and_what_is_recorded_skipped(fake_gpu):
    """The plan's work list: the stages it names per shape, with the refusal it decided; the
    loop asks nothing of the stage's shape rules itself."""
    xcol, xrow, ref = gemm.select("naive_xcol,naive_xrow", "fp32")
    work = [((32, 32, 32), [(xcol, None), (xrow, "what the plan said")]), ((16, 16, 16), [])]
    recs = runner.run_gemm([], [xcol, xrow, ref], None, timing=_timing(), work=work)[2]
    assert [(r["stage"], r["m"], r["verified"]) for r in recs] == [
        ("naive_xcol", 32, True), ("naive_xrow", 32, None), ("cublas", 32, True),
        ("cublas", 16, True),
    ]  # fmt: skip
    assert recs[1]["error"] == "skipped: what the plan said"
    assert recs[3]["samples_ms"] and recs[3]["timing_method"]  # alone: no stage to pair with


def test_a_launch_that_crashes_the_context_stops_the_run(fake_gpu, monkeypatch):
    monkeypatch.setitem(BEHAVIOUR, "naive_xcol", "raises")
    real = runner.launcher

    def crashing(cp, stage, g, arch, sm_count=None):
        call, meta = real(cp, stage, g, arch, sm_count)
        if stage.reference:
            return call, meta

        def crash():
            raise RuntimeError("an illegal memory access was encountered")

        return crash, meta

    monkeypatch.setattr(runner, "launcher", crashing)
    with pytest.raises(RooflineError, match="stage naive_xcol crashed the CUDA context: an ill"):
        _run(["naive_xcol"], [(8, 8, 8)])


def test_with_beta_the_last_timed_launch_starts_from_c(fake_gpu):
    recs = _run(["naive_xcol"], [(8, 16, 4)], alpha=0.5, beta=2.0)
    assert all(r["verified"] is True for r in recs), recs
    assert recs[0]["beta"] == 2.0 and recs[0]["rel_error_last"] <= recs[0]["tolerance_rel"]
