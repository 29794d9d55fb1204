"""On a GPU: the skinny stages (31 wgmma_swapab, 32 wgmma_swapab_any) verify in FP16 and BF16 at
M = 1, 3, 17, 64, 100 and 511, with N and K that are multiples of 8 and that are not (stage 32:
B in groups of 8 rows, K slices permuted, the last K % 8 rows in the epilogue), in the tile
variants `--stages best` picks from, and read C when beta != 0."""

import json

import pytest

from rooflinecli.cli import cli
from rooflinecli.stages import gemm as stages

pytestmark = pytest.mark.gpu

MS = (1, 3, 17, 64, 100, 511)
# N and K multiples of 8 (both stages) ...
ALIGNED = ((1096, 1048), (264, 4104))
# ... and not: N odd and K % 8 = 3; N % 8 = 4; K odd alone; K < 8 with N odd (no group of 8 rows)
ODD = ((1097, 1043), (1100, 1048), (1096, 1045), (333, 5))
# the tile shapes of the grid (benchmarks/shapes.sh): BM 8 .. 256, one to four consumers
VARIANTS = ("@BM=8", "@BM=16,BN=256", "@BM=32", "@BN=256", "@BM=128", "@BM=256,BN=64")


def _run(runner, *args):
    r = runner.invoke(
        cli, ["run", "gemm", "--format", "json", "--quiet", "--budget-ms", "3", *args]
    )
    assert r.exit_code == 0, r.output + r.stderr
    return json.loads(r.output)["records"]


def _sizes(pairs):
    return ",".join(f"{m}x{n}x{k}" for m in MS for n, k in pairs)


def _all_verified(recs, names, count):
    ran = [r for r in recs if r["kind"] == "stage"]
    assert {r["stage"] for r in ran} == set(names)
    assert len(ran) == count
    for rec in ran:
        assert rec["verified"] is True, rec
        assert rec["tflops"] > 0


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_both_stages_verify_where_tma_describes_the_matrices(runner, dtype):
    names = ("wgmma_swapab", "wgmma_swapab_any")
    recs = _run(runner, "--dtype", dtype, "--stages", ",".join(names), "--sizes", _sizes(ALIGNED))
    _all_verified(recs, names, 2 * len(MS) * len(ALIGNED))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_any_shape_stage_verifies_where_tma_cannot(runner, dtype):
    recs = _run(runner, "--dtype", dtype, "--stages", "wgmma_swapab_any", "--sizes", _sizes(ODD))
    _all_verified(recs, ("wgmma_swapab_any",), len(MS) * len(ODD))


def test_the_tma_stage_refuses_what_tma_cannot_describe():
    stage = stages.BY_NAME["wgmma_swapab"]
    assert all(stage.refuses(17, n, k) for n, k in ODD)
    assert stages.BY_NAME["wgmma_swapab_any"].refuses(17, 1097, 1043) is None
    assert stage.any_shape == "wgmma_swapab_any"


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_tile_variants_verify(runner, dtype):
    names = [f"wgmma_swapab{v}" for v in VARIANTS] + [f"wgmma_swapab_any{v}" for v in VARIANTS]
    recs = _run(runner, "--dtype", dtype, "--stages", ",".join(names), "--sizes",
                "3x1096x1048,100x1096x1048,511x264x4104")  # fmt: skip
    _all_verified(recs, names, 3 * len(names))
    odd = [f"wgmma_swapab_any{v}" for v in VARIANTS]
    recs = _run(runner, "--dtype", dtype, "--stages", ",".join(odd), "--sizes",
                "17x1097x1043,100x1100x1048")  # fmt: skip
    _all_verified(recs, odd, 2 * len(odd))


def test_both_stages_read_c_when_beta_is_not_zero(runner):
    names = ("wgmma_swapab", "wgmma_swapab_any", "wgmma_swapab@BM=16", "wgmma_swapab_any@BM=128")
    recs = _run(
        runner, "--dtype", "bf16", "--stages", ",".join(names), "--sizes",
        "17x1096x1048,100x264x4104", "--alpha", "0.5", "--beta", "2",
    )  # fmt: skip
    _all_verified(recs, names, 2 * len(names))
    recs = _run(
        runner, "--dtype", "fp16", "--stages", "wgmma_swapab_any", "--sizes",
        "17x1097x1043,511x1100x1048,3x333x5", "--alpha", "0.5", "--beta", "2",
    )  # fmt: skip
    _all_verified(recs, ("wgmma_swapab_any",), 3)
