"""On a GPU: every Tensor Core stage verifies in FP16 and BF16 at shapes no tile divides, reads C
when beta != 0, and a stage that needs multiples of 8 is left out with its reason, never run."""

import json

import pytest

from rooflinecli.cli import cli
from rooflinecli.stages import gemm as stages

pytestmark = pytest.mark.gpu


def _doc(runner, *args):
    r = runner.invoke(
        cli, ["run", "gemm", "--format", "json", "--quiet", "--budget-ms", "5", *args]
    )
    assert r.exit_code == 0, r.output + r.stderr
    return json.loads(r.output)


def _run(runner, *args):
    return _doc(runner, *args)["records"]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_every_tensor_core_stage_verifies_at_odd_shapes(runner, dtype):
    sizes = "1000x1016x1032,1001x600x1032,127x333x65"
    doc = _doc(runner, "--dtype", dtype, "--sizes", sizes)
    recs = doc["records"]
    # the default ladder: every stage but those whose M range misses all three rows (decode)
    ladder = stages.built_for(stages.select(None, dtype), [1000, 1001, 127])
    assert {r["stage"] for r in recs} == {s.name for s in ladder}
    for rec in recs:
        assert stages.BY_NAME[rec["stage"]].refuses(rec["m"], rec["n"], rec["k"]) is None, rec
        assert rec["verified"] is True, rec
        assert rec["tflops"] > 0
    # 127x333x65 for the TMA stages (N, K multiples of 8), M > 64 for the decode stages:
    # refused before any launch, left out of the records and listed with the reason
    shapes = [tuple(int(d) for d in s.split("x")) for s in sizes.split(",")]
    want = {
        (s.name, "x".join(map(str, shape))) for s in ladder for shape in shapes if s.refuses(*shape)
    }
    assert any(name == "wgmma_tma" for name, _shape in want)
    assert {(x["stage"], x["shape"]) for x in doc["skipped"]} == want


def test_tensor_core_stages_read_c_when_beta_is_not_zero(runner):
    recs = _run(
        runner, "--dtype", "fp16", "--m", "264", "--n", "200", "--k", "72", "--alpha", "0.5",
        "--beta", "2",
    )  # fmt: skip
    ran = [r for r in recs if not stages.BY_NAME[r["stage"]].refuses(r["m"], r["n"], r["k"])]
    assert ran and all(r["verified"] is True for r in ran), recs


# The tile variants `--stages best` may pick away from large squares (benchmarks/dispatch_table.sh):
# BN = 128 (m64n128k16) on stages 26-29, small cp.async tiles on stage 22 (its scalar path loads
# a whole tile, and the whole prologue, before storing it when GATHER)
TILE_VARIANTS = (
    "wgmma_persistent@BN=128", "wgmma_persistent@BN=128,STAGES=6", "wgmma_cluster@BN=128",
    "wgmma_stagger@BN=128,CLUSTER_M=1,LAG=1", "wgmma_streamk@BN=128",
    "wgmma_streamk@BN=128,STAGES=6", "mma_multistage@BM=64,BN=64,WM=32,WN=32,STAGES=3",
    "mma_multistage@BM=64,BN=64,BK=64,WM=32,WN=32,STAGES=2",
    "mma_multistage@BM=64,BN=64,BK=64,WM=32,WN=32,STAGES=3",
)  # fmt: skip


SCALAR_VARIANTS = tuple(v for v in TILE_VARIANTS if v.startswith("mma_multistage"))


def _check_variants(recs, names):
    assert {r["stage"] for r in recs if r["kind"] == "stage"} == set(names)
    for rec in recs:
        assert rec["verified"] is True, rec
        assert rec["tflops"] > 0


def _verify_at_odd_shapes(runner, dtype, tma_variants, scalar_variants):
    """The TMA variants at 1000x1016x1032 and 264x4104x72; the cp.async (scalar path) ones at
    127x333x65 and 1001x600x1031 (N, K no multiples of 8, which the TMA stages refuse)."""
    for names, sizes in (
        (tma_variants, "1000x1016x1032,264x4104x72"),
        (scalar_variants, "127x333x65,1001x600x1031"),
    ):
        recs = _run(runner, "--dtype", dtype, "--stages", ",".join(names), "--sizes", sizes)
        _check_variants(recs, names)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_tile_variants_verify_at_odd_shapes(runner, dtype):
    # 1000x1016x1032: 64 tiles of 128 x 128, all of them cut by stream-K; 264x4104x72: a 33rd
    # column tile 8 wide and one K slice and a bit. N, K no multiples of 8: stage 22's scalar
    # path, with K = 1031 through the main loop's copies too, not only the prologue's
    _verify_at_odd_shapes(runner, dtype, TILE_VARIANTS, SCALAR_VARIANTS)


# The small shapes' variants (benchmarks/dispatch_table.sh, step tiles): stage 24 with BM = 64
# and split-K, and stage 22's small tiles with all of K = 65 in the prologue (STAGES 4) or
# 32-row tiles
SMALL_VARIANTS = (
    "wgmma_tma@BM=64", "wgmma_tma@SPLIT_K=2", "wgmma_tma@BM=64,SPLIT_K=2", "wgmma_tma@SPLIT_K=3",
)  # fmt: skip
SMALL_SCALAR_VARIANTS = (
    "mma_multistage@BM=64,BN=64,WM=32,WN=32",  # STAGES 4, the registry's
    "mma_multistage@BM=32,BN=64,WM=16,WN=32,STAGES=3",
    "mma_multistage@BM=32,BN=64,BK=64,WM=16,WN=32,STAGES=3",
)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_small_shape_variants_verify_at_odd_shapes(runner, dtype):
    # 1000x1016x1032: 17 K tiles cut in 2 or 3 runs (8 + 9, 5 + 6 + 6); 264x4104x72: 2 K tiles, so
    # SPLIT_K = 3 has a run of none (its block adds zeros); the last timed launch is checked too,
    # so the tile counters went back to 0 after every launch
    _verify_at_odd_shapes(runner, dtype, SMALL_VARIANTS, SMALL_SCALAR_VARIANTS)


def test_small_shape_variants_read_c_when_beta_is_not_zero(runner):
    # split-K: only the last block of a tile reads C, once
    names = SMALL_VARIANTS + SMALL_SCALAR_VARIANTS
    recs = _run(
        runner, "--dtype", "bf16", "--stages", ",".join(names), "--sizes", "264x200x72",
        "--alpha", "0.5", "--beta", "2",
    )  # fmt: skip
    _check_variants(recs, names)


def test_tile_variants_read_c_when_beta_is_not_zero(runner):
    recs = _run(
        runner, "--dtype", "bf16", "--stages", ",".join(TILE_VARIANTS), "--sizes", "264x200x72",
        "--alpha", "0.5", "--beta", "2",
    )  # fmt: skip
    _check_variants(recs, TILE_VARIANTS)
    recs = _run(
        runner, "--dtype", "fp16", "--stages", ",".join(SCALAR_VARIANTS), "--sizes", "127x333x65",
        "--alpha", "0.5", "--beta", "2",
    )  # fmt: skip
    _check_variants(recs, SCALAR_VARIANTS)


# The tile widths between and below 128 and 256 (m64n64k16, m64n192k16), alone, in a cluster
# pair (one B box for the pair, or three dealt out two and one) and with stream-K
WIDTH_VARIANTS = (
    "wgmma_persistent@BN=64", "wgmma_persistent@BN=192", "wgmma_cluster@BN=64,STAGES=8",
    "wgmma_cluster@BN=192", "wgmma_stagger@BN=64", "wgmma_stagger@BN=192",
    "wgmma_streamk@BN=64", "wgmma_streamk@BN=192", "wgmma_persistent_fill",
)  # fmt: skip


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_tile_widths_verify_at_every_batch(runner, dtype):
    """At M = 1, 3, 17, 64, 100 and 511 (a pair's second row tile partly or wholly past M), N
    no multiple of 64 or 192, K a multiple of 8 that no K slice divides; then N and K of a model."""
    sizes = ",".join(f"{m}x1032x1000" for m in (1, 3, 17, 64, 100, 511)) + ",256x4096x4096"
    recs = _run(runner, "--dtype", dtype, "--stages", ",".join(WIDTH_VARIANTS), "--sizes", sizes)
    _check_variants(recs, WIDTH_VARIANTS)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_stage_taking_its_width_from_the_shape_runs_each_width(runner, dtype):
    """wgmma_persistent_fill at the three widths it takes: 192 at 1024 x 6144 (and at 1001 x
    6152, N no multiple of 192), 128 at 512 x 4096, 256 at 512 x 14336; each record names the
    width it launched."""
    sizes = "1024x6144x1032,1001x6152x1000,512x4096x1032,512x14336x1032"
    recs = _run(runner, "--dtype", dtype, "--stages", "wgmma_persistent_fill", "--sizes", sizes)
    widths = {(r["m"], r["n"]): r["params"]["BN"] for r in recs if r["kind"] == "stage"}
    assert widths == {(1024, 6144): 192, (1001, 6152): 192, (512, 4096): 128, (512, 14336): 256}
    _check_variants(recs, ["wgmma_persistent_fill"])
