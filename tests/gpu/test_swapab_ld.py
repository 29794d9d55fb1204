"""On a GPU: stage 33 (wgmma_swapab_ld), stage 31 fed by its producers' own loads, verifies in
FP16 and BF16 at M = 1, 3, 17, 64, 100 and 511 with N and K that are multiples of 8 and that
are not (odd, 4 past a multiple, 3 past), in its tile variants, with one and two producer
warpgroups, and reads C when beta != 0."""

import json

import pytest

from rooflinecli.cli import cli
from rooflinecli.stages import gemm as stages

pytestmark = pytest.mark.gpu

MS = (1, 3, 17, 64, 100, 511)
ALIGNED = ((1096, 1048), (264, 4104))  # N and K multiples of 8
# N odd and K % 8 = 3; N % 8 = 4; K odd alone
ODD = ((1097, 1043), (1100, 1048), (1096, 1045))
VARIANTS = ("@BM=8", "@BM=16,PRODUCERS=1", "@BM=32", "@BM=128", "@BM=128,BN=64,PRODUCERS=1")


def _run(runner, *args):
    r = runner.invoke(
        cli, ["run", "gemm", "--format", "json", "--quiet", "--budget-ms", "3", *args]
    )
    assert r.exit_code == 0, r.output + r.stderr
    return json.loads(r.output)["records"]


def _sizes(pairs):
    return ",".join(f"{m}x{n}x{k}" for m in MS for n, k in pairs)


def _all_verified(recs, count):
    ran = [r for r in recs if r["kind"] == "stage"]
    assert len(ran) == count
    for rec in ran:
        assert rec["verified"] is True, rec
        assert rec["tflops"] > 0
    return ran


def test_the_stage_refuses_no_shape():
    stage = stages.BY_NAME["wgmma_swapab_ld"]
    assert not any(stage.refuses(m, n, k) for m in MS for n, k in ALIGNED + ODD)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_stage_verifies_at_every_pitch(runner, dtype):
    sizes = _sizes(ALIGNED + ODD)
    recs = _run(runner, "--dtype", dtype, "--stages", "wgmma_swapab_ld", "--sizes", sizes)
    ran = _all_verified(recs, len(MS) * len(ALIGNED + ODD))
    assert {r["stage"] for r in ran} == {"wgmma_swapab_ld"}


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_tile_variants_verify(runner, dtype):
    names = [f"wgmma_swapab_ld{v}" for v in VARIANTS]
    recs = _run(runner, "--dtype", dtype, "--stages", ",".join(names), "--sizes",
                "3x1097x1043,17x264x4104,100x1100x1048,511x1096x1045")  # fmt: skip
    ran = _all_verified(recs, 4 * len(names))
    assert {r["stage"] for r in ran} == set(names)


def test_the_stage_reads_c_when_beta_is_not_zero(runner):
    names = ("wgmma_swapab_ld", "wgmma_swapab_ld@BM=16", "wgmma_swapab_ld@BM=128")
    recs = _run(
        runner, "--dtype", "bf16", "--stages", ",".join(names), "--sizes",
        "17x1097x1043,100x264x4104", "--alpha", "0.5", "--beta", "2",
    )  # fmt: skip
    _all_verified(recs, 2 * len(names))
