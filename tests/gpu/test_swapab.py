"""On a GPU: the skinny stage (31, wgmma_swapab) verifies in FP16 and BF16 at M = 1, 3, 17, 64,
100 and 511 in the tile variants `--stages best` picks from, and reads C when beta != 0; where N
or K is no multiple of 8 (rows TMA cannot describe) it is refused before any launch, and
`--stages best` runs another stage there, which verifies."""

import json

import pytest

from rooflinecli.cli import cli
from rooflinecli.stages import gemm as stages

pytestmark = pytest.mark.gpu

MS = (1, 3, 17, 64, 100, 511)
ALIGNED = ((1096, 1048), (264, 4104))  # N and K multiples of 8
# N odd and K % 8 = 3; N % 8 = 4; K odd alone
ODD = ((1097, 1043), (1100, 1048), (1096, 1045))
# the tile shapes of the grid (benchmarks/shapes.sh): BM 8 .. 256, one to four consumers, and
# consumers of 128 columns (WN=128: two 64-column groups, their partials and stores apiece)
VARIANTS = (
    "@BM=8",
    "@BM=16,BN=256",
    "@BM=32",
    "@BN=256",
    "@BM=128",
    "@BM=256,BN=64",
    "@BM=128,BN=256,WN=128",
    "@BN=256,WN=128",
    "@BM=32,WN=128",  # BN=128 is the default: the record names it so
    "@RED=1",
    "@BM=128,BN=256,WN=128,RED=1",
    "@BM=8,RED=1",
)


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


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_stage_verifies_at_skinny_and_medium_m(runner, dtype):
    recs = _run(runner, "--dtype", dtype, "--stages", "wgmma_swapab", "--sizes", _sizes(ALIGNED))
    ran = _all_verified(recs, len(MS) * len(ALIGNED))
    assert {r["stage"] for r in ran} == {"wgmma_swapab"}


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_tile_variants_verify(runner, dtype):
    names = [f"wgmma_swapab{v}" for v in VARIANTS]
    recs = _run(runner, "--dtype", dtype, "--stages", ",".join(names), "--sizes",
                "3x1096x1048,17x264x4104,100x1096x1048,511x264x4104")  # fmt: skip
    ran = _all_verified(recs, 4 * len(names))
    assert {r["stage"] for r in ran} == set(names)


def test_the_stage_reads_c_when_beta_is_not_zero(runner):
    names = (
        "wgmma_swapab",
        "wgmma_swapab@BM=16",
        "wgmma_swapab@BM=128",
        "wgmma_swapab@BM=128,BN=256,WN=128",
        "wgmma_swapab@BM=128,BN=256,WN=128,RED=1",
    )
    recs = _run(
        runner, "--dtype", "bf16", "--stages", ",".join(names), "--sizes",
        "17x1096x1048,100x264x4104", "--alpha", "0.5", "--beta", "2",
    )  # fmt: skip
    _all_verified(recs, 2 * len(names))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_where_tma_cannot_describe_the_matrices_best_runs_another_stage(runner, dtype):
    stage = stages.BY_NAME["wgmma_swapab"]
    assert all(stage.refuses(m, n, k) for m in MS for n, k in ODD)
    sizes = _sizes(ODD)
    # asked for by name at shapes it refuses, every one: one line, before any launch
    r = runner.invoke(cli, ["run", "gemm", "--dtype", dtype, "--quiet", "--stages",
                            "wgmma_swapab", "--sizes", sizes])  # fmt: skip
    assert r.exit_code == 2 and "wgmma_swapab needs N, K multiples of 8" in r.output + r.stderr
    recs = _run(runner, "--dtype", dtype, "--stages", "best", "--sizes", sizes)
    ran = _all_verified(recs, len(MS) * len(ODD))
    assert all(r["stage"].split("@")[0] != "wgmma_swapab" for r in ran)
