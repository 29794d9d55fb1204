"""A GPU the stages cannot all run on: each stage it cannot run is listed as skipped, with the
reason, and the rest run (rooflinecli.stages.gemm.cannot_run: run gemm, run attention, the dry
run and inspect all ask it). Compute capability alone is not enough: a B200 (sm_100a) and an
RTX 5090 (sm_120) are above 9.0, but NVRTC refuses wgmma for both and setmaxnreg for sm_120."""

from __future__ import annotations

import json

import pytest

from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import device
from rooflinecli.stages import attention, compiler
from rooflinecli.stages import gemm as stages

ALL = [s for s in stages.STAGES if not s.reference] + list(attention.ATTENTION_STAGES)


def _uses(stage: object) -> tuple[str, ...]:
    return stages.ARCH_ONLY_BY_FILE.get(str(getattr(stage, "file", "") or ""), ())


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120"])
def test_each_stage_says_whether_a_target_can_run_it(arch):
    cc = compiler.cc_of_arch(arch)
    for s in ALL:
        why = stages.cannot_run(s, arch)
        if cc < s.min_cc:
            assert why == f"needs compute capability {s.min_cc / 10:.1f}", s.name
            continue
        lacking = [i for i in _uses(s) if arch not in stages.ARCH_ONLY[i]]
        if lacking:
            want = " and ".join(stages.ARCH_ONLY[lacking[0]])
            assert why == f"uses {lacking[0]}, which only {want} has (not {arch})", s.name
        else:
            assert why is None, (s.name, why)
    # the Hopper target runs every stage; the reference runs anywhere
    assert all(stages.cannot_run(s, "sm_90a") is None for s in ALL)
    assert all(stages.cannot_run(s, arch) is None for s in stages.STAGES if s.reference)


def test_a_bad_target_is_one_line():
    with pytest.raises(RooflineError, match="bad --arch 'sm_x'"):
        stages.cannot_run(stages.BY_NAME["wgmma_tma"], "sm_x")


@pytest.fixture
def an_l4(monkeypatch):
    """nvidia-smi of an NVIDIA L4 (compute capability 8.9), and no CuPy to touch."""
    answers = {"name": ["NVIDIA L4"], "compute_cap": ["8.9"]}
    monkeypatch.setattr(device, "smi", lambda query, gpu="0": answers.get(query))

    def no_cupy():  # type: ignore[no-untyped-def]
        raise AssertionError("the GPU was looked for")

    monkeypatch.setattr(device, "cupy", no_cupy)


@pytest.mark.prebuild(stages.BY_NAME["gemv_naive"].for_arch("sm_89"), arch="sm_89", dtype="fp16")
def test_on_a_gpu_of_compute_capability_8_9_what_it_cannot_run_is_skipped(runner, an_l4):
    args = ["run", "gemm", "--m", "16", "--n", "256", "--k", "256", "--dtype", "fp16"]
    args += ["--stages", "gemv_naive,mma_tma_ws,wgmma_tma", "--dry-run", "--format", "json"]
    r = runner.invoke(cli, args)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["arch"] == "sm_89"  # the detected GPU's target
    status = {row["stage"]: row["status"] for row in doc["rows"]}
    assert status == {
        "gemv_naive": "would run",
        "mma_tma_ws": "skipped: needs compute capability 9.0",
        "wgmma_tma": "skipped: needs compute capability 9.0",
        "cublas_hgemm": "library call",
    }


def test_on_a_b200_target_the_wgmma_stages_are_skipped_with_the_reason(runner, an_l4):
    args = ["run", "gemm", "--m", "256", "--dtype", "bf16", "--stages", "wgmma_tma,wgmma_ws"]
    r = runner.invoke(cli, [*args, "--dry-run", "--arch", "sm_100a", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    why = "skipped: uses wgmma, which only sm_90a has (not sm_100a)"
    assert [(x["stage"], x["status"]) for x in rows[:2]] == [("wgmma_tma", why), ("wgmma_ws", why)]
    assert [x["status"] for x in rows[2:]] == ["library call"]  # the reference runs


@pytest.mark.matrix
@pytest.mark.parametrize("arch", ["sm_100a", "sm_120"])
@pytest.mark.parametrize(
    "name",
    sorted(
        {s.name for s in stages.STAGES if s.file in stages.ARCH_ONLY_BY_FILE} | {"mma_multistage"}
    ),
)
def test_the_table_of_instructions_is_what_nvrtc_does(name, arch):
    """Every stage that uses an instruction some targets lack, compiled for the Blackwell targets:
    NVRTC builds it exactly where cannot_run lets it run."""
    stage = stages.BY_NAME[name].for_arch(arch)
    why = stages.cannot_run(stage, arch)
    try:
        compiler.compile_stage(stage, arch, "fp16")
    except RooflineError as exc:
        assert why is not None, f"{name} does not compile for {arch}: {exc.message[:300]}"
        instr = why.split()[1].rstrip(",")
        assert instr in exc.message or "not supported" in exc.message, exc.message[:300]
    else:
        assert why is None, f"{name} compiles for {arch}, yet: {why}"
