"""On a GPU: the checks catch what they claim to. A BF16 kernel that skips one k index fails at
K = 16,384 while the same kernel without the skip passes; a kernel right on its first launch
and wrong on later ones fails (the last timed launch is checked); records keep every repeat and
name the reference they were timed beside."""

import dataclasses
from pathlib import Path

import pytest

from rooflinecli.gpu import runner
from rooflinecli.gpu.timer import Timing
from rooflinecli.stages import gemm as stages

pytestmark = pytest.mark.gpu

SRC = str(Path(__file__).parent / "kernels" / "naive_bf16.cu")


def _naive(name: str, **params: int) -> stages.Stage:
    return stages.Stage(
        name=name, what="test", dtype="bf16", dtypes=("bf16",), chapter=0, math="FFMA", file=SRC,
        entry="naive_bf16", params=params,
    )  # fmt: skip


def _run(stage: stages.Stage, shape: tuple[int, int, int]) -> tuple[dict, dict]:
    _dev, _spec, recs = runner.run_gemm(
        [shape], [stage, stages.reference_for("bf16")], None, timing=Timing(budget_ms=5),
        dtype="bf16",
    )  # fmt: skip
    by = {r["stage"]: r for r in recs}
    return by[stage.name], by["cublas_hgemm"]


def test_skipping_one_k_fails_at_16384_and_the_same_kernel_passes_without_it():
    shape = (128, 128, 16384)
    good, ref = _run(_naive("naive_ok", SKIP_K=-1), shape)
    bad, _ = _run(_naive("naive_skip", SKIP_K=-2), shape)
    assert ref["verified"] is True
    assert good["verified"] is True, good
    assert bad["verified"] is False, bad
    assert bad["tflops"] is None
    # the skip costs about 1/sqrt(K) = 0.78%, the bound sits near twice the rounding (~0.3%)
    assert bad["rel_error"] > 2 * bad["tolerance_rel"] > good["rel_error"]


@pytest.mark.parametrize("shape", [(127, 333, 65), (1000, 1016, 1032), (64, 4096, 16384)])
def test_every_bf16_stage_passes_the_tightened_bound(shape):
    chosen = [s for s in stages.STAGES if "bf16" in s.all_dtypes]
    _dev, _spec, recs = runner.run_gemm(
        [shape], chosen, None, timing=Timing(budget_ms=2), dtype="bf16"
    )
    for rec in recs:
        if rec.get("error", "") and str(rec["error"]).startswith("skipped"):
            continue
        assert rec["verified"] is True, rec


def test_right_first_wrong_later_fails_on_the_last_timed_launch():
    bad, _ = _run(_naive("naive_corrupt", SKIP_K=-1, CORRUPT_AFTER_FIRST=1), (64, 64, 64))
    assert bad["rel_error"] <= bad["tolerance_rel"]  # the first launch was right
    assert bad["verified"] is False
    assert bad["error"] == "the last timed launch's output failed its check"


def test_records_keep_samples_and_name_their_reference():
    good, ref = _run(_naive("naive_ok", SKIP_K=-1), (256, 256, 256))
    assert len(good["samples_ms"]) == good["repeats"] >= 5
    assert len(good["reference_samples_ms"]) == good["repeats"]
    assert good["compared_with"] == "cublas_hgemm"
    assert good["pct_of_reference"] == pytest.approx(
        100.0 * good["reference_time_ms"] / good["time_ms"]
    )
    assert ref["repeats"] == len(ref["samples_ms"]) >= good["repeats"]
    assert good["math_instruction"] is None or isinstance(good["math_instruction"], str)


def test_a_stage_reading_b_transposed_is_charged_the_transpose():
    nk = dataclasses.replace(_naive("naive_nk", SKIP_K=-1, B_NK=1), b_layout="nk")
    rec, _ = _run(nk, (1024, 1024, 1024))
    assert rec["verified"] is True
    assert rec["b_layout"].startswith("nk, transposed")
    assert 0 < rec["conversion_ms"] < rec["time_ms"]


def test_tma_stages_read_the_contracts_b_and_pay_no_transpose():
    _dev, _spec, recs = runner.run_gemm(
        [(1024, 1024, 1024)], [stages.BY_NAME["wgmma_tma"], stages.reference_for("bf16")], None,
        timing=Timing(budget_ms=5), dtype="bf16",
    )  # fmt: skip
    rec = recs[0]
    assert rec["verified"] is True
    assert rec["b_layout"] == "kn" and "conversion_ms" not in rec
