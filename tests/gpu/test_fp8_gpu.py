"""On an sm_90a GPU: every FP8 stage (kernels/32_wgmma_fp8.cu, 34_wgmma_fp8_swapab.cu and
58_gemv_fp8.cu)
verifies against the float64 product of its dequantised inputs at shapes that are no tile
multiples (K and N multiples of 16), with alpha and beta, in e5m2 and with fp16 output; one
k-block left out (SKIP_KBLOCK) fails the check; the tile widths between 128 and 256 verify at
the same shapes; the decode stages verify at every batch tile;
cuBLASLt's FP8 GEMM (torch._scaled_mm), where PyTorch is installed, passes the same check on the
same buffers."""

import pytest

from rooflinecli.gpu import fp8 as gfp8
from rooflinecli.stages.fp8 import FP8_STAGES, TILE_WIDTHS

pytestmark = pytest.mark.gpu

# 129 and 77 rows: a pair's (CLUSTER_M=2) second row tile partly or wholly past M; 300: an odd
# number of row tiles; 1300 x 4112: more (cluster) tiles than blocks, each walking several
ODD = ((1000, 1040, 1024), (129, 272, 160), (77, 16, 4096), (1, 48, 16), (511, 4112, 2064),
       (300, 528, 384), (1300, 4112, 640))  # fmt: skip


def _sm90() -> None:
    import cupy as cp

    major = cp.cuda.Device().compute_capability[0]
    if major != "9":
        pytest.skip(f"the FP8 stages need sm_90a (compute capability {major}.x here)")


def _verify(stage, m, n, k, extra=None, **kw):
    import cupy as cp

    g = gfp8.Problem(cp, m, n, k, seed=5, **kw)
    launch, _ = gfp8.launcher(cp, stage, g, extra)
    g.poison()
    launch()
    cp.cuda.runtime.deviceSynchronize()
    return g.check(stage.promote_span)


@pytest.mark.parametrize("stage", FP8_STAGES, ids=lambda s: s.name)
@pytest.mark.parametrize("shape", ODD, ids=lambda s: "x".join(map(str, s)))
def test_every_fp8_stage_verifies_at_odd_shapes(stage, shape):
    _sm90()
    res = _verify(stage, *shape)
    assert res["ok"], res


@pytest.mark.parametrize("stage", FP8_STAGES, ids=lambda s: s.name)
@pytest.mark.parametrize(
    "kw", [{"alpha": 0.5, "beta": 0.75}, {"out": "fp16"}, {"fmt": "e5m2"}], ids=str
)
def test_alpha_beta_e5m2_and_fp16_out(stage, kw):
    _sm90()
    res = _verify(stage, 1000, 1040, 1024, **kw)
    assert res["ok"], res


@pytest.mark.parametrize("stage", FP8_STAGES, ids=lambda s: s.name)
def test_beta_at_an_odd_number_of_row_tiles(stage):
    """C read back (beta) where a pair's second row tile lies past M and N is no tile multiple."""
    _sm90()
    res = _verify(stage, 300, 528, 384, alpha=0.5, beta=0.75)
    assert res["ok"], res


@pytest.mark.parametrize("stage", FP8_STAGES, ids=lambda s: s.name)
def test_a_kernel_one_k_block_short_fails_the_check(stage):
    _sm90()
    res = _verify(stage, 1000, 1040, 1024, extra={"SKIP_KBLOCK": 3})
    assert not res["ok"] and res["rel"] > 5 * res["rel_tol"], res


# the tile widths between 128 and 256 (m64n160k32 .. m64n224k32), on one block, a pair and
# under the TMA store: N no multiple of any of them
WIDTHS = [
    *(("wgmma_fp8_persistent", {"BN": bn, "STAGES": 5}) for bn in TILE_WIDTHS[1:-1]),
    ("wgmma_fp8_cluster", {"BN": 192}),
    ("wgmma_fp8_tma_store", {"BN": 192}),
]


@pytest.mark.parametrize(("name", "params"), WIDTHS, ids=lambda v: str(v))
@pytest.mark.parametrize("shape", ODD, ids=lambda s: "x".join(map(str, s)))
def test_every_tile_width_verifies_at_odd_shapes(name, params, shape):
    _sm90()
    from rooflinecli.stages.fp8 import FP8_BY_NAME

    res = _verify(FP8_BY_NAME[name].with_params(**params), *shape, alpha=0.5, beta=0.75)
    assert res["ok"], res


def test_cublaslt_fp8_passes_the_same_check():
    _sm90()
    if gfp8.torch_reason():
        pytest.skip(gfp8.torch_reason())
    import cupy as cp

    g = gfp8.Problem(cp, 1000, 1040, 1024, seed=5)
    ref = gfp8.scaled_mm(g)
    g.poison(g.C_ref)
    ref()
    cp.cuda.runtime.deviceSynchronize()
    assert g.check(None, g.C_ref)["ok"]


# the decode stage at the batches it is built for, each batch tile (BM) at batches it holds
# whole, partly and several times over; N and K no multiple of its 128 x 128 tile
DECODE = ((1, 4112, 4096), (3, 272, 2064), (17, 1040, 1024), (64, 528, 384), (100, 48, 160))


@pytest.mark.parametrize("even", [0, 1])
@pytest.mark.parametrize("bm", [8, 16, 32, 64])
@pytest.mark.parametrize("shape", DECODE, ids=lambda s: "x".join(map(str, s)))
def test_the_decode_stage_verifies_at_every_batch_tile(bm, even, shape):
    _sm90()
    from rooflinecli.stages.fp8 import FP8_BY_NAME

    stage = FP8_BY_NAME["wgmma_fp8_swapab"].with_params(BM=bm, EVEN=even)
    res = _verify(stage, *shape)
    assert res["ok"], res


# stage 58 at each of its batch tiles, strip widths, warps and chunks in flight
GEMV = ({}, {"BM": 16, "BN": 32}, {"BM": 32, "KU": 2}, {"NUM_THREADS": 512, "KU": 8},
        {"NUM_THREADS": 128, "BN": 32})  # fmt: skip


@pytest.mark.parametrize("params", GEMV, ids=str)
@pytest.mark.parametrize("shape", DECODE, ids=lambda s: "x".join(map(str, s)))
def test_the_fp8_gemv_verifies_at_every_tile(params, shape):
    _sm90()
    from rooflinecli.stages.fp8 import FP8_BY_NAME

    res = _verify(FP8_BY_NAME["gemv_fp8"].with_params(**params), *shape, alpha=0.5, beta=0.75)
    assert res["ok"], res


# scales per row of A and column of B, and DeepGEMM's 128-wide blocks: N and K no multiple of
# 128 (a last block of B and a last group of K partly filled), a pair's rank past M
SCALED = ((1000, 1040, 1040), (77, 272, 4112), (300, 528, 384))
ROW_STAGES = [s for s in FP8_STAGES if s.scaling_refusal("row") is None]
BLOCK_STAGES = [s for s in FP8_STAGES if s.scaling_refusal("block") is None]


@pytest.mark.parametrize("stage", ROW_STAGES, ids=lambda s: s.name)
@pytest.mark.parametrize("shape", SCALED, ids=lambda s: "x".join(map(str, s)))
def test_row_and_column_scales(stage, shape):
    _sm90()
    res = _verify(stage, *shape, scaling="row", alpha=0.5)
    assert res["ok"], res


@pytest.mark.parametrize("stage", BLOCK_STAGES, ids=lambda s: s.name)
@pytest.mark.parametrize("shape", SCALED, ids=lambda s: "x".join(map(str, s)))
def test_block_scales(stage, shape):
    _sm90()
    assert BLOCK_STAGES
    res = _verify(stage, *shape, scaling="block", alpha=0.5)
    assert res["ok"], res


@pytest.mark.parametrize("scaling", ["row", "block"])
def test_a_kernel_that_applies_one_scale_per_tensor_fails_finer_scales(scaling):
    _sm90()
    stage = BLOCK_STAGES[0]
    res = _verify(stage, 1000, 1040, 1040, extra={"SCALES": 0}, scaling=scaling)
    assert not res["ok"] and res["rel"] > 5 * res["rel_tol"], res


def test_run_llm_in_fp8_verifies_each_weight_gemm(runner):
    """`run llm --dtype fp8` at a decode batch and a prefill one: every stage record verified,
    beside cuBLASLt in both modes."""
    import json

    from rooflinecli.cli import cli

    _sm90()
    r = runner.invoke(
        cli,
        ["run", "llm", "--dtype", "fp8", "--gemms", "o_proj,ffn_down", "--batch", "16,512",
         "--stages", "wgmma_fp8_persistent,wgmma_fp8_promote", "--budget-ms", "5",
         "--format", "json", "--quiet"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    recs = json.loads(r.output)["records"]
    ours = [x for x in recs if not x["stage"].startswith("cublaslt")]
    assert len(ours) == 2 * 2 * 2 and all(x["verified"] is True for x in ours), ours


# the stages that take their tile width from the shape, at the width each takes: 192 at 1024 and
# 1000 rows of 6144-6160 columns (N no multiple of 192 at 6160), 128 at 2048 x 1024 and at 300
# rows of 1040 columns (a pair's second row tile past M)
@pytest.mark.parametrize(
    ("name", "shape", "bn"),
    [
        ("wgmma_fp8_fill", (1024, 6144, 512), 192),
        ("wgmma_fp8_fill", (1000, 6160, 528), 192),
        ("wgmma_fp8_fill", (2048, 1024, 512), 128),
        ("wgmma_fp8_cluster_fill", (1024, 6144, 512), 192),
        ("wgmma_fp8_cluster_fill", (300, 1040, 384), 128),
    ],
)
def test_a_stage_taking_its_width_from_the_shape_verifies_at_that_width(name, shape, bn):
    _sm90()
    from rooflinecli.stages.fp8 import of_registry
    from rooflinecli.stages.gemm import BY_NAME

    at = BY_NAME[name].for_shape(shape[0], shape[1], 132)
    assert at.params["BN"] == bn
    res = _verify(of_registry(at), *shape)
    assert res["ok"], res
