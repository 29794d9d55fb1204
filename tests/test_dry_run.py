"""Compile checks on the CPU: `run gemm --dry-run` compiles what would run and says how it would
launch; a user stage that does not compile is one line naming its file, before any GPU is looked
for (run gemm, run llm, and with or without --dry-run); `inspect gemm --extra-stage`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rooflinecli import api
from rooflinecli.cli import cli
from rooflinecli.core import specs
from rooflinecli.gpu import device
from rooflinecli.stages import gemm as stages

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "my_gemm.toml")


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    """No nvidia-smi and no CuPy: the default target is sm_90a; touching the GPU fails."""
    monkeypatch.setattr(device, "smi", lambda query, gpu="0": None)

    def no_cupy():  # type: ignore[no-untyped-def]
        raise AssertionError("the GPU was looked for")

    monkeypatch.setattr(device, "cupy", no_cupy)


@pytest.fixture
def bad_stage(tmp_path):
    (tmp_path / "bad.cu").write_text(
        'extern "C" __global__ void bad_gemm(int M, int N, int K, float alpha, const float* A,\n'
        "                                    const float* B, float beta, float* C) {\n"
        "  int i = threadIdx.x\n"
        "  C[i] = alpha * A[i] * B[i] + beta;\n"
        "}\n"
    )
    toml = tmp_path / "bad.toml"
    toml.write_text(
        'name = "bad_gemm"\nsource = "bad.cu"\nentry = "bad_gemm"\ndtype = "fp32"\n'
        "threads = [16, 16]\ntile = [16, 16]\n"
    )
    return toml


# what `run gemm` compiles by default on the default target, sm_90a (prebuilt: conftest)


@pytest.mark.prebuild(
    *(stages.BY_NAME[name].for_arch("sm_80") for name in ("naive_xcol", "smem_tile")), arch="sm_80"
)
def test_dry_run_compiles_and_says_how_each_stage_would_launch(runner):
    args = ["run", "gemm", "--sizes", "64,100x40x8", "--stages", "naive_xcol,smem_tile"]
    r = runner.invoke(cli, [*args, "--dry-run", "--arch", "sm_80", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["command"], doc["arch"]) == ("run gemm --dry-run", "sm_80")
    rows = {(row["stage"], row["shape"]): row for row in doc["rows"]}
    assert list(rows) == [
        ("naive_xcol", "64x64x64"), ("naive_xcol", "100x40x8"),
        ("smem_tile", "64x64x64"), ("smem_tile", "100x40x8"),
        ("cublas", "64x64x64"), ("cublas", "100x40x8"),
    ]  # fmt: skip
    naive = rows[("naive_xcol", "100x40x8")]
    assert (naive["grid"], naive["block"], naive["status"]) == ("3x7x1", "16x16x1", "would run")
    assert naive["registers"] > 0 and naive["spill_bytes"] == 0 and naive["smem_bytes"] == 0
    assert rows[("smem_tile", "64x64x64")]["smem_bytes"] == 8192  # 2 tiles of 32x32 floats
    assert rows[("cublas", "64x64x64")]["status"] == "library call"
    assert rows[("cublas", "64x64x64")]["registers"] is None


@pytest.mark.prebuild(stages.BY_NAME["naive_xcol"])
def test_dry_run_table_on_the_detected_or_default_target(runner):
    r = runner.invoke(cli, ["run", "gemm", "--m", "64", "--stages", "naive_xcol", "--dry-run"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(
        "Dry run: 1 stage(s) x 1 shape(s), fp32, compiled for sm_90a "
        "(no GPU: the default, --arch chooses; NVRTC "
    )
    assert "), grids for h100-sxm5 (no GPU: the default, --spec chooses); nothing ran" in r.stdout
    assert "│ naive_xcol │ 64x64x64 │ 4x4x1 │ 16x16x1 │" in r.stdout


def test_dry_run_skips_what_the_target_or_the_shape_refuses():
    """Stages above the target's compute capability are not compiled; a shape a stage refuses
    is a skipped row, as the runner records it."""
    picky = replace(stages.BY_NAME["naive_xcol"], name="picky", needs_multiple=8)
    wgmma = stages.BY_NAME["wgmma_tma"]
    spec = specs.resolve("h200-sxm")
    rows = api.dry_run_gemm([(64, 64, 64), (65, 64, 64)], [picky, wgmma], "sm_80", "fp32", spec)
    status = [(r["stage"], r["shape"], r["status"]) for r in rows]
    assert status == [
        ("picky", "64x64x64", "would run"),
        ("picky", "65x64x64", "skipped: picky needs M, N, K multiples of 8 (got 65x64x64)"),
        ("wgmma_tma", "64x64x64", "skipped: needs compute capability 9.0"),
        ("wgmma_tma", "65x64x64", "skipped: needs compute capability 9.0"),
    ]


@pytest.mark.prebuild(stages.BY_NAME["naive_xcol"])
@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_a_user_stage_that_does_not_compile_is_one_line_before_any_gpu(runner, bad_stage, dry):
    args = ["run", "gemm", "--m", "64", "--stages", "naive_xcol", "--extra-stage", str(bad_stage)]
    r = runner.invoke(cli, args + (["--dry-run"] if dry else []))
    assert r.exit_code == 2
    cu = bad_stage.parent / "bad.cu"
    assert r.stderr == (
        f"error: stage file {bad_stage}: {cu} does not compile for sm_90a: "
        f'{cu}(4): error: expected a ";"\n'
    )


def test_run_llm_compiles_user_stages_first_too(runner, bad_stage):
    r = runner.invoke(cli, ["run", "llm", "--dtype", "fp32", "--extra-stage", str(bad_stage)])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: stage file {bad_stage}: ") and "expected a" in r.stderr


def test_dry_run_refusals(runner, tmp_path):
    r = runner.invoke(cli, ["run", "gemm", "--m", "64", "--arch", "sm_80"])
    assert (r.exit_code, r.stderr) == (
        2,
        "error: --arch goes with --dry-run (a run compiles for the GPU it runs on)\n",
    )
    out = str(tmp_path / "r.json")
    r = runner.invoke(cli, ["run", "gemm", "--m", "64", "--dry-run", "-o", out])
    assert (r.exit_code, r.stderr) == (
        2,
        "error: --dry-run writes no results document: leave out --output\n",
    )
    r = runner.invoke(cli, ["run", "gemm", "--m", "64", "--dry-run", "--arch", "sm_9"])
    assert r.exit_code == 2 and r.stderr.startswith("error: bad --arch 'sm_9'")


@pytest.mark.prebuild(stages.BY_NAME["naive_xcol"], sass=True)
def test_inspect_takes_a_user_stage(runner):
    r = runner.invoke(
        cli,
        ["inspect", "gemm", "--stage", "naive_xcol", "--extra-stage", EXAMPLE, "--arch", "sm_90a",
         "--spec", "h100-sxm5", "--format", "json"],
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    recs = {rec["stage"]: rec for rec in json.loads(r.stdout)["records"]}
    assert list(recs) == ["naive_xcol", "my_gemm"]
    mine = recs["my_gemm"]
    assert mine["error"] is None and mine["registers"] > 0 and mine["spill_bytes"] == 0
    assert mine["smem_bytes"] == 8192 and mine["loop_ffma"] > 0


def test_inspect_a_user_stage_that_does_not_compile(runner, bad_stage):
    args = ["inspect", "gemm", "--stage", "naive_xcol", "--extra-stage", str(bad_stage)]
    r = runner.invoke(cli, [*args, "--arch", "sm_90a", "--spec", "h100-sxm5"])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: stage file {bad_stage}: ") and "expected a" in r.stderr
    assert len(r.stderr.splitlines()) == 1
