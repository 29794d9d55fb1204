"""`run gemm --dtype fp8` on the CPU: the FP8 problem kind through the one runner loop, its
launches and cuBLASLt's two modes emulated by an FP32 product of the decoded codes (NumPy as
CuPy), the records it writes, the pairing by accumulation, and the refusals of the CLI."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner
from fakes import FakeCupy

from rooflinecli.cli import cli
from rooflinecli.core import fp8, model, occupancy, specs
from rooflinecli.gpu import fp8 as gfp8
from rooflinecli.gpu import loop
from rooflinecli.stages import gemm

SHAPE = (130, 272, 640)  # no tile multiple in M or N; N and K multiples of 16


class _Cupy(FakeCupy):
    def __init__(self) -> None:
        super().__init__()

        class Device:
            attributes = {"MultiProcessorCount": 132}

        self.cuda.Device = Device


def _product(g, drop_k: int = 0):  # type: ignore[no-untyped-def]
    t = fp8.decode_table(g.fmt)
    a, b = t[g.A], t[g.B]
    a[:, :drop_k] = 0.0  # a kernel that leaves out the first k-block
    prod = fp8.scaled_product(a, b, g.scaling, g.scale_a, g.scale_b)
    return (g.alpha * prod).astype(np.float32)


class _Timer:
    """Every launch of a round run once; samples 1 ms (stage) and 1.1 / 1.2 ms (references)."""

    timing = SimpleNamespace(max_noise_pct=None)

    def time(self, group):  # type: ignore[no-untyped-def]
        for launch in group:
            if launch.before_last is not None:
                launch.before_last()
            launch.call()
        samples = [[1.0 + 0.1 * i] * 3 for i in range(len(group))]
        return SimpleNamespace(samples=samples, clock={}, method="fake", noise_pct=None,
                               noise_target_met=None)  # fmt: skip

    def once(self, fn):  # type: ignore[no-untyped-def]
        fn()
        return 1.0


def _run(monkeypatch, torch: bool, wrong: str = "", scaling: str = "tensor", stages=None):  # type: ignore[no-untyped-def]
    def launcher(cp, stage, g, extra=None, out=None):  # type: ignore[no-untyped-def]
        def launch() -> None:
            g.C[...] = g._store(_product(g, 128 if stage.name == wrong else 0))

        return launch, {"grid": [1, 1, 1], "block": [384, 1, 1], "params": dict(stage.params)}

    def scaled_mm(g, fast_accum=False, out=None):  # type: ignore[no-untyped-def]
        def launch() -> None:
            out[...] = g._store(_product(g)).view(np.int16)

        return launch

    monkeypatch.setattr(gfp8, "launcher", launcher)
    monkeypatch.setattr(gfp8, "scaled_mm", scaled_mm)
    monkeypatch.setattr(gfp8, "torch_reason", lambda: None if torch else "PyTorch is not installed")
    cp, spec = _Cupy(), specs.resolve("h200-sxm")
    refs = [gemm.BY_NAME["cublaslt_fp8"], gemm.BY_NAME[gfp8.FAST]]
    names = stages or ("wgmma_fp8_persistent", "wgmma_fp8_promote")
    work = [(SHAPE, [(gemm.BY_NAME[s], None) for s in names])]

    def problem(shape, _items):  # type: ignore[no-untyped-def]
        return gfp8.Fp8GemmProblem(cp, shape, refs, spec, 90, 1.0, 0, scaling=scaling)

    limits = occupancy.SmLimits.from_spec(spec)
    recs = loop.run(cp, work, problem, gfp8.FP8, _Timer(), limits)  # type: ignore[arg-type]
    return {r["stage"]: r for r in recs}


def test_each_stage_is_compared_with_the_cublaslt_mode_its_accumulation_matches(monkeypatch):
    recs = _run(monkeypatch, torch=True)
    m, n, k = SHAPE
    unpromoted, promoted = recs["wgmma_fp8_persistent"], recs["wgmma_fp8_promote"]
    assert unpromoted["verified"] and promoted["verified"]
    assert recs["cublaslt_fp8"]["verified"] and recs[gfp8.FAST]["verified"]
    assert unpromoted["compared_with"] == gfp8.FAST
    assert promoted["compared_with"] == "cublaslt_fp8"
    # the samples of the round paired: the fake gives the first reference 1.1 ms, the second 1.2
    assert unpromoted["reference_time_ms"] == pytest.approx(1.2)
    assert promoted["reference_time_ms"] == pytest.approx(1.1)
    # records that describe themselves: QGMMA under the FP8 dense peak, A and B 1 byte, C 2
    assert (
        unpromoted["math_instruction"] == "QGMMA" and unpromoted["peak_key"] == "fp8_tensor_dense"
    )
    assert unpromoted["peak_tflops"] == pytest.approx(spec_peak())
    assert unpromoted["bytes_ideal"] == m * k + n * k + 2 * m * n
    assert "N x K" in unpromoted["b_layout"] and "beta = 0" in unpromoted["beta_in_timing"]
    assert "not promoted" in unpromoted["accumulation"]
    assert "every 512 of K" in promoted["accumulation"]
    assert "every 512 of K" in promoted["tolerance_rule"]
    assert promoted["tolerance_rel"] < unpromoted["tolerance_rel"]
    assert "not promoted" in recs[gfp8.FAST]["accumulation"]


def spec_peak() -> float:
    return specs.resolve("h200-sxm").peak("fp8_tensor_dense")


def test_without_pytorch_the_stages_still_run_and_verify(monkeypatch):
    recs = _run(monkeypatch, torch=False)
    assert recs["wgmma_fp8_persistent"]["verified"] is True
    for name in ("cublaslt_fp8", gfp8.FAST):
        assert recs[name]["verified"] is None
        assert "PyTorch is not installed" in recs[name]["error"]


def test_finer_scales_are_checked_and_said(monkeypatch):
    """Per row and column: cuBLASLt (row-wise) beside the stages; DeepGEMM's blocks: no library
    reference, the stage still verified against the float64 product under its block scales."""
    rows = _run(monkeypatch, torch=True, scaling="row")
    assert rows["wgmma_fp8_persistent"]["verified"] and rows["cublaslt_fp8"]["verified"]
    assert "per row of A" in rows["wgmma_fp8_persistent"]["scales"]
    blocks = _run(monkeypatch, torch=True, scaling="block", stages=("wgmma_fp8_blockscale",))
    assert blocks["wgmma_fp8_blockscale"]["verified"] is True
    assert "128 x 128 block" in blocks["wgmma_fp8_blockscale"]["scales"]
    for name in ("cublaslt_fp8", gfp8.FAST):
        assert "takes no 128-wide block scales" in blocks[name]["error"]
    wrong = _run(monkeypatch, True, "wgmma_fp8_blockscale", "block", ("wgmma_fp8_blockscale",))
    assert wrong["wgmma_fp8_blockscale"]["verified"] is False


@pytest.mark.parametrize(
    "args, says",
    [
        (["--dtype", "bf16", "--fp8-scaling", "row"], "--fp8-scaling goes with --dtype fp8"),
        (
            ["--dtype", "fp8", "--fp8-scaling", "block", "--stages", "wgmma_fp8"],
            "wgmma_fp8 cannot apply 128 x 128 block scales",
        ),
        (
            ["--dtype", "fp8", "--fp8-scaling", "row", "--stages", "wgmma_fp8_swapab", "--m", "16"],
            "wgmma_fp8_swapab takes per-tensor scales only",
        ),
    ],
)
def test_fp8_scaling_refusals_are_one_line(args, says):
    r = CliRunner().invoke(
        cli, ["run", "gemm", "--m", "256", "--dry-run", "--spec", "h200-sxm", *args]
    )
    assert r.exit_code == 2 and says in r.output and "Traceback" not in r.output, r.output


def test_a_stage_one_k_block_short_fails_and_reports_no_speed(monkeypatch):
    recs = _run(monkeypatch, torch=True, wrong="wgmma_fp8_persistent")
    assert recs["wgmma_fp8_persistent"]["verified"] is False
    assert recs["wgmma_fp8_promote"]["verified"] is True


def test_the_model_counts_c_at_two_bytes_for_fp8():
    assert model.gemm_bytes_ideal(2, 3, 4, 1, out_bytes=2) == 2 * 4 + 3 * 4 + 2 * 2 * 3
    assert model.gemm_bytes_ideal(2, 3, 4, 2) == 2 * (8 + 12 + 6)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--m", "256", "--k", "250"], "K = 250 not a multiple of 16"),
        (["--m", "256", "--beta", "0.5"], "beta = 0"),
        (["--m", "256", "--tuned"], "neither --tuned"),
    ],
)
def test_fp8_refusals_are_one_line(args, says):
    r = CliRunner().invoke(cli, ["run", "gemm", "--dtype", "fp8", *args])
    assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1


def test_fp8_format_needs_fp8():
    r = CliRunner().invoke(cli, ["run", "gemm", "--m", "256", "--fp8-format", "e5m2"])
    assert r.exit_code == 2 and "--fp8-format goes with --dtype fp8" in r.output


def test_the_fp8_stages_are_in_the_one_registry_and_best_falls_back_to_the_last():
    names = gemm.stage_names("fp8", include_reference=False)
    assert names[-1] == "wgmma_fp8_persistent" and "wgmma_fp8_promote" in names
    # 8-bit wgmma, but stage 58's mma.sync (fp16 HMMA on Hopper, its inputs widened)
    assert {s: gemm.BY_NAME[s].math for s in names if gemm.BY_NAME[s].math != "QGMMA"} == {
        "gemv_fp8": "HMMA"
    }
    from rooflinecli.stages import dispatch

    # a device whose tables have no FP8 entry runs the registry's last FP8 stage
    h200 = [t for t in dispatch.tables_for("NVIDIA H200") if not t.borrowed]
    pick = dispatch.resolve(8192, 8192, 8192, "fp8", h200, "NVIDIA H200")
    assert pick.stage.name == names[-1] and "registry" in pick.table
    # with the H100's table beside it (the same architecture), the H100's FP8 entry runs
    pick = dispatch.resolve(8192, 8192, 8192, "fp8", dispatch.tables_for("NVIDIA H200"),
                            "NVIDIA H200")  # fmt: skip
    h100_name = "NVIDIA H100 80GB HBM3"
    h100 = dispatch.resolve(8192, 8192, 8192, "fp8", dispatch.tables_for(h100_name), h100_name)
    assert pick.stage.name == h100.stage.name and "the same architecture" in pick.table
    assert h100.entry_class.startswith("M=>1024") and "h100-sxm5" in h100.table


@pytest.mark.parametrize(
    ("fmt", "scaling"), [("e4m3", "tensor"), ("e5m2", "row"), ("e4m3", "block")]
)
def test_the_dry_run_compiles_the_build_the_run_launches(monkeypatch, fmt, scaling):
    """`run gemm --dtype fp8 --dry-run` reports the registers and spills of the very build the
    FP8 runner launches: the format's and the scales' defines, bf16 out (not the registry's
    default build)."""
    from rooflinecli.stages import compiler
    from rooflinecli.stages.fp8 import FP8_BY_NAME

    built = []
    real = compiler.build

    def build(job):  # type: ignore[no-untyped-def]
        built.append(job)
        return real(job)

    monkeypatch.setattr(compiler, "build", build)
    monkeypatch.setattr(compiler, "compile_many", lambda jobs: [])  # warm-ups: not needed here
    stage = "wgmma_fp8_blockscale"
    args = ["run", "gemm", "--m", "256", "--n", "512", "--k", "1024", "--dtype", "fp8",
            "--fp8-format", fmt, "--fp8-scaling", scaling, "--stages", stage, "--dry-run",
            "--spec", "h200-sxm", "--format", "json"]  # fmt: skip
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    want = gfp8.build_job(FP8_BY_NAME[stage], fmt, "bf16", scaling)
    assert [j.opts for j in built] == [want.opts]
    row = json.loads(r.output)["rows"][0]
    assert (row["stage"], row["status"]) == (stage, "would run")
    assert row["registers"] == real(want).resources.registers
