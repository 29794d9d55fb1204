"""The run plan (rooflinecli.plan) on the CPU: what runs at each shape, what is left out and why,
each refusal decided once, the device asked for once; and what a sweep's table says of the
stages left out: one summary line, not a row each."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from fakes import fake_run_gemm

from rooflinecli import paths, plan
from rooflinecli.cli import cli
from rooflinecli.core.attention import Shape
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import device, runner
from rooflinecli.stages import gemm as registry

SWEEP = [(4097, 4095, 4093), (64, 4096, 4096), (4096, 4096, 4096)]
DECODE_FP16 = [s.name for s in registry.select(None, "fp16") if s.m_range is not None]
TMA_FP16 = [s.name for s in registry.select(None, "fp16") if s.needs_multiple == 8]


def _names(items):
    return [stage.name for stage, _why in items]


def test_a_sweep_plan_leaves_out_what_cannot_run_and_says_why_once():
    p = plan.gemm_plan(SWEEP, None, "fp16")
    odd, decode_m, square = (items for _shape, items in p.work)
    # the decode stages run at M = 64 only; the TMA stages need N, K multiples of 8
    assert not set(DECODE_FP16) & set(_names(odd) + _names(square))
    assert set(DECODE_FP16) <= set(_names(decode_m))
    assert not set(TMA_FP16) & set(_names(odd)) and set(TMA_FP16) <= set(_names(square))
    assert all(why is None for _shape, items in p.work for _stage, why in items)
    assert p.reference.name == "cublas_hgemm" and p.chosen[-1] is p.reference
    left = {(s.stage, s.shape) for s in p.skipped}
    want = {(n, "4097x4095x4093") for n in DECODE_FP16 + TMA_FP16}
    want |= {(n, "4096x4096x4096") for n in DECODE_FP16}
    assert left == want
    assert len(p.skipped) + p.steps == len(SWEEP) * len(p.stages)
    doc = p.document_fields()["skipped"]
    assert {"stage", "shape", "reason", "kind", "because"} == set(doc[0])
    from rooflinecli.present import table

    n_decode, n_tma = 2 * len(DECODE_FP16), len(TMA_FP16)
    assert table.skip_summary(doc) == (  # in the order the stages come in the sweep
        f"{n_tma} stages skipped ({n_tma} at 1 shape): they need N, K multiples of 8; "
        f"{n_decode} decode stages skipped ({len(DECODE_FP16)} at 2 shapes): they run at M = 1..64"
    )


def test_each_refusal_is_decided_once(monkeypatch):
    calls = []
    real = registry.Stage.refusal

    def counted(self, m, n, k):
        calls.append((self.name, (m, n, k)))
        return real(self, m, n, k)

    monkeypatch.setattr(registry.Stage, "refusal", counted)
    p = plan.gemm_plan(SWEEP, None, "fp32")
    assert sorted(calls) == sorted({(s.name, shape) for s in p.stages for shape in SWEEP})


def test_stages_named_must_run_every_shape_in_run_gemm_and_attention():
    with pytest.raises(RooflineError, match="gemv_naive is a decode stage for M = 1..64"):
        plan.gemm_plan([(1, 64, 64), (4096, 64, 64)], "naive_xcol,gemv_naive", "fp32")
    with pytest.raises(RooflineError, match="attn_fa2_mma is built for head dim"):
        plan.attention_plan([Shape(1, 2, 2, 64, 96)], "attn_fa2_mma", "fp16")


def test_run_llm_keeps_a_named_stage_that_cannot_run_a_shape_as_a_row():
    shapes = [(1, 4096, 4096), (256, 4096, 4096)]
    p = plan.llm_plan(shapes, "gemv_naive", "fp16")
    assert [(s.name, why is not None) for s, why in p.work[1][1]] == [("gemv_naive", True)]
    assert not p.skipped
    default = plan.llm_plan(shapes, None, "fp16")
    assert {s.stage for s in default.skipped} == set(DECODE_FP16)
    assert {s.shape for s in default.skipped} == {"256x4096x4096"}


def test_attention_leaves_out_stages_built_for_another_head_dim():
    from rooflinecli.stages import attention

    shapes = [Shape(1, 2, 2, 64, 64), Shape(1, 2, 2, 64, 96)]
    p = plan.attention_plan(shapes, None, "fp16")
    built_96 = {s.name for s in attention.select(None, "fp16") if 96 in s.configs}
    assert {s.name for s, _ in p.work[1][1]} == built_96
    assert all(s.shape == shapes[1].label and "head dim 96" in s.because for s in p.skipped)


def test_the_device_is_asked_for_once(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    asked = []

    def smi_name():
        asked.append("smi")
        return "NVIDIA H200"

    monkeypatch.setattr(device, "smi_device_name", smi_name)
    p = plan.gemm_plan([(1, 4096, 4096), (4096, 4096, 4096)], "best", "bf16", dry_run=True)
    assert asked == ["smi"] and p.device_name == "NVIDIA H200"
    assert [items[0][0].name for _shape, items in p.work] == [
        p.picks[shape].stage.name for shape in p.shapes
    ]
    plan.gemm_plan([(64, 64, 64)], None, "fp32", tuned=True, dry_run=True)
    assert asked == ["smi", "smi"]
    monkeypatch.setattr(device, "smi_device_name", lambda: None)
    with pytest.raises(RooflineError, match="--tuned: no GPU detected"):
        plan.gemm_plan([(64, 64, 64)], None, "fp32", tuned=True, dry_run=True)


@pytest.fixture
def fake_runner(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(runner, "run_gemm", fake_run_gemm(2, placed=True))


def test_a_sweep_table_lists_only_stages_that_can_run_and_sums_up_the_rest(fake_runner, tmp_path):
    sizes = ",".join("x".join(map(str, s)) for s in SWEEP)
    out = tmp_path / "sweep.json"
    args = ["run", "gemm", "--sizes", sizes, "--dtype", "fp16", "--no-chart", "-q"]
    r = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [*args, "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "skipped:" not in r.output
    doc = paths.read_json(out, "results file")
    assert not any(str(x.get("error") or "").startswith("skipped") for x in doc["records"])
    assert len(doc["skipped"]) == 2 * len(DECODE_FP16) + len(TMA_FP16)
    line = plan.gemm_plan(SWEEP, None, "fp16").document_fields()["skipped"]
    from rooflinecli.present import table

    line = table.skip_summary(line)
    assert "decode stages skipped" in line and r.output.splitlines().count(line) == 1
    # the sweep's summary table keeps the ladder's order, the reference last
    ladder = [st.name for st in plan.gemm_plan(SWEEP, None, "fp16").chosen]
    assert list(table.scaling(doc["records"]).index) == ladder
    shown = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["show", str(out), "--no-chart"])
    assert shown.exit_code == 0 and shown.output.splitlines().count(line) == 1
    # a stage the user names stays a row where the device cannot run it (the runner's skip)
    asked = CliRunner().invoke(cli, [*args[:3], "64", "--stages", "gemv_naive", "--format", "json"])
    assert asked.exit_code == 0 and "skipped" not in json.loads(asked.output)


@pytest.mark.prebuild(registry.BY_NAME["naive_xcol"].for_arch("sm_80"), arch="sm_80")
def test_a_dry_run_sweep_leaves_out_what_the_run_would(monkeypatch):
    """The dry run shows the plan's work: a decode stage at the one shape of its rows, and the
    summary line for the others; no build for a stage the plan leaves out everywhere."""
    monkeypatch.setattr(device, "smi", lambda query, gpu="0": None)
    xcol = registry.BY_NAME["naive_xcol"]
    decodey = replace(xcol, name="decodey", m_range=(1, 64))  # the same build as naive_xcol
    ladder = [xcol, decodey, registry.reference_for("fp32")]
    monkeypatch.setattr(registry, "select", lambda names, dtype: list(ladder))
    args = ["run", "gemm", "--sizes", "64,100x40x8,4096x8x8", "--dry-run", "--arch", "sm_80"]
    r = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(x["stage"], x["shape"]) for x in doc["rows"] if x["stage"] == "decodey"] == [
        ("decodey", "64x64x64")
    ]
    assert len(doc["rows"]) == 3 + 1 + 3 and len(doc["skipped"]) == 2
    r = CliRunner(env={"COLUMNS": "200"}).invoke(cli, args)
    assert r.exit_code == 0, r.stderr
    assert "2 decode stages skipped (1 at 2 shapes): they run at M = 1..64" in r.stdout.splitlines()
    assert "skipped:" not in r.stdout


def test_naming_a_stage_that_cannot_run_a_shape_of_the_sweep_is_one_line(monkeypatch):
    monkeypatch.setattr(device, "smi", lambda query, gpu="0": None)
    args = ["run", "gemm", "--sizes", "4097x4095x4093,64x64x64", "--dtype", "fp16",
            "--stages", "all", "--dry-run"]  # fmt: skip
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2 and "needs N, K multiples of 8" in r.stderr
    assert len(r.stderr.splitlines()) == 1


def test_the_sweep_table_keeps_each_shape_s_order_and_the_reference_last():
    """Stages another shape left out, or did not pick (--stages best), come in their place."""
    from rooflinecli.present import table

    def rec(stage, m, kind="stage"):
        return {"stage": stage, "kind": kind, "dtype": "bf16", "m": m, "n": 64, "k": 64,
                "tflops": 1.0}  # fmt: skip

    best = [rec("gemv", 1), rec("cublas", 1, "reference"), rec("wgmma", 4096),
            rec("cublas", 4096, "reference")]  # fmt: skip
    assert list(table.scaling(best).index) == ["gemv", "wgmma", "cublas"]
    sweep = [rec("a", 4097), rec("c", 4097), rec("cublas", 4097, "reference"), rec("a", 64),
             rec("b", 64), rec("c", 64), rec("cublas", 64, "reference")]  # fmt: skip
    assert list(table.scaling(sweep).index) == ["a", "b", "c", "cublas"]
