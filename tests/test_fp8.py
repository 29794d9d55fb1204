"""FP8 without a GPU: the codec (rooflinecli/core/fp8.py) against the OCP FP8 tables, the check
and its bound on NumPy (a correct product passes, one with a k-block left out fails), the shape
rule, the 1-byte tensor maps, and stage 32's SASS: 8-bit QGMMA on both operands from shared
memory, no 16-bit HGMMA and no conversion of the inputs; the pairs' multicast and the TMA-store
epilogue where a stage has them, and the geometry of both."""

import re
from fractions import Fraction

import numpy as np
import pytest

from rooflinecli.core import fp8
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import fp8 as gfp8
from rooflinecli.gpu import tma
from rooflinecli.stages import compiler, sass
from rooflinecli.stages import fp8 as stages
from rooflinecli.stages.gemm import BY_NAME


def spec_value(code: int, exp_bits: int, man_bits: int, bias: int) -> Fraction | None:
    """The OCP spec's value of a code, exactly, written out per field (None: NaN or infinity)."""
    s, e, m = code >> 7, (code >> man_bits) & ((1 << exp_bits) - 1), code & ((1 << man_bits) - 1)
    if exp_bits == 4 and e == 15 and m == 7:
        return None  # E4M3 S.1111.111: NaN
    if exp_bits == 5 and e == 31:
        return None  # E5M2 S.11111.xx: infinity or NaN
    if e == 0:
        v = Fraction(m, 1 << man_bits) * Fraction(2) ** (1 - bias)
    else:
        v = (1 + Fraction(m, 1 << man_bits)) * Fraction(2) ** (e - bias)
    return -v if s else v


@pytest.mark.parametrize("name, eb, mb, bias", [("e4m3", 4, 3, 7), ("e5m2", 5, 2, 15)])
def test_every_code_decodes_to_the_spec_value(name, eb, mb, bias):
    table = fp8.decode_table(name)
    for code in range(256):
        want = spec_value(code, eb, mb, bias)
        if want is None:
            continue
        assert table[code] == float(want), hex(code)
        assert Fraction(float(table[code])) == want  # exact, not rounded


def test_the_special_codes():
    e4, e5 = fp8.decode_table("e4m3"), fp8.decode_table("e5m2")
    assert e4[0x7E] == 448 and e4[0xFE] == -448 and e4[0x01] == 2.0**-9 and e4[0x38] == 1.0
    assert np.isnan(e4[0x7F]) and np.isnan(e4[0xFF]) and np.isnan(e4).sum() == 2
    assert e4[0x80] == 0 and np.signbit(e4[0x80])
    assert e5[0x7B] == 57344 and e5[0x7C] == np.inf and e5[0xFC] == -np.inf
    assert e5[0x01] == 2.0**-16 and e5[0x3C] == 1.0 and np.isnan(e5).sum() == 6


@pytest.mark.parametrize("name", ["e4m3", "e5m2"])
def test_every_value_encodes_to_its_code(name):
    table = fp8.decode_table(name)
    codes = np.arange(256)
    ok = np.isfinite(table)
    assert (fp8.encode(table[ok], name) == codes[ok]).all()


@pytest.mark.parametrize("name", ["e4m3", "e5m2"])
def test_rounding_is_to_nearest_with_ties_to_even(name):
    f = fp8.fmt(name)
    vals = fp8.decode_table(name)[: f.max_code + 1]
    mid = (vals[:-1] + vals[1:]) / 2  # exact in float64
    lower = np.arange(f.max_code)
    tie = fp8.encode(mid, name)
    assert (tie == np.where(lower % 2 == 0, lower, lower + 1)).all()
    assert (fp8.encode(np.nextafter(mid, 0), name) == lower).all()
    assert (fp8.encode(np.nextafter(mid, np.inf), name) == lower + 1).all()
    assert (fp8.encode(-mid, name) == tie + 0x80).all()  # the sign bit, same magnitude


def test_e5m2_matches_rounding_float16_bits():
    """E5M2 is float16's top byte: for every finite float16 in range, rounding its 16 bits to
    8 with round-to-nearest-even on the integer bits gives the code."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x = bits.view(np.float16).astype(np.float64)
    keep = np.isfinite(x) & (np.abs(x) <= 57344)
    b = bits[keep].astype(np.uint32)
    rne = (b + 0x7F + ((b >> 8) & 1)) >> 8
    assert (fp8.encode(x[keep], "e5m2") == rne.astype(np.uint8)).all()


def test_saturation_nan_and_infinity():
    assert list(fp8.encode([1e6, -1e6, 449, 464, np.inf], "e4m3")) == [0x7E, 0xFE, 0x7E, 0x7E, 0x7E]
    assert fp8.encode([np.nan], "e4m3")[0] == 0x7F and fp8.encode([np.nan], "e5m2")[0] == 0x7E
    assert list(fp8.encode([1e6, np.inf, -1e6], "e5m2")) == [0x7B, 0x7B, 0xFB]
    over = fp8.encode([57344 + 4096, 57344 + 4095, np.inf], "e5m2", saturate=False)
    assert list(over) == [0x7C, 0x7B, 0x7C]
    with pytest.raises(RooflineError, match="e4m3 or e5m2"):
        fp8.encode([1.0], "e3m4")


def test_random_codes_stay_in_range_and_cover_the_binades():
    codes = fp8.random_codes(np.random.default_rng(0), (4096,), "e4m3", max_abs=2.0)
    v = fp8.decode_table("e4m3")[codes]
    assert np.isfinite(v).all() and np.abs(v).max() <= 2.0
    assert len(np.unique(codes)) > 100  # subnormals through 2: most codes below 2 occur
    with pytest.raises(RooflineError, match="max_abs"):
        fp8.random_codes(np.random.default_rng(0), (4,), "e4m3", max_abs=500.0)


def _emulated(p, drop_k: int = 0) -> np.ndarray:
    """What a kernel would write: the FP32 product of the decoded codes (from k = drop_k on)."""
    t = fp8.decode_table(p.fmt)
    a = t[p.A][:, drop_k:].astype(np.float32)
    b = t[p.B][:, drop_k:].astype(np.float32)
    return (a @ b.T) * np.float32(p.alpha * 0.37 * 1.9) + (
        0 if p.C0 is None else np.float32(p.beta) * p.as_f64(p.C0).astype(np.float32)
    )


@pytest.mark.parametrize("out", ["bf16", "fp16"])
@pytest.mark.parametrize("beta", [0.0, 0.75])
def test_the_check_passes_a_right_product_and_fails_one_k_block_short(out, beta):
    """The problem and its check run on NumPy as well as CuPy: the float64 reference of the
    decoded codes, the bound for the output type, and a product missing BK = 128 of K fails."""
    p = gfp8.Problem(np, 100, 48, 1024, alpha=0.5, beta=beta, seed=3, out=out)
    p.C[...] = p._store(_emulated(p))
    right = p.check(None)
    assert right["ok"] and right["rel"] < right["rel_tol"] / 4
    p.C[...] = p._store(_emulated(p, drop_k=128))
    wrong = p.check(None)
    assert not wrong["ok"] and wrong["rel"] > 5 * wrong["rel_tol"]
    p.C[...] = 0x7FC0 if out == "bf16" else 0x7E00  # poisoned, never written
    assert not p.check(None)["ok"]


def test_the_bound_grows_with_the_span_and_promotion_tightens_it():
    full = [fp8.tolerance(k)[0] for k in (256, 1024, 4096, 16384)]
    assert full == sorted(full) and full[-1] < 0.1
    assert fp8.tolerance(16384, 512)[0] < fp8.tolerance(16384)[0] / 5
    assert fp8.tolerance(1024, 512) == fp8.tolerance(1024, 512)  # pure
    assert fp8.tolerance(100, 512) == fp8.tolerance(100)  # a span past K is all of K
    assert "2^-14" in fp8.tolerance_rule() and "every 512 of K" in fp8.tolerance_rule(512)


@pytest.mark.parametrize("m, n, k", [(256, 256, 100), (256, 250, 256), (0, 16, 16)])
def test_shapes_tma_cannot_read_are_refused_in_one_line(m, n, k):
    with pytest.raises(RooflineError) as exc:
        stages.check_shape(m, n, k)
    assert "\n" not in str(exc.value) and f"{m}x{n}x{k}" in str(exc.value)
    stages.check_shape(1, 16, 16)  # M is free


def test_fp8_tensor_maps_are_one_byte_elements():
    class A:
        dtype = "uint8"

    assert tma._elem_bytes(A(), None) == 1 and tma._elem_bytes(A(), "fp8") == 1
    assert tma._elem_bytes(A(), "bf16") == 2


def test_stage_geometry():
    s = stages.FP8_BY_NAME["wgmma_fp8"]
    assert s.threads == 384 and s.grid(1000, 1040) == (5, 8, 1)
    assert s.smem_bytes == 4 * (128 + 256) * 128 + 1024 <= 227 * 1024
    assert s.promote_span is None and stages.FP8_BY_NAME["wgmma_fp8_promote"].promote_span == 512
    persistent = stages.FP8_BY_NAME["wgmma_fp8_persistent"]
    assert persistent.grid(8192, 8192, 132) == (132, 1, 1)
    assert persistent.grid(1000, 1040, 132) == (40, 1, 1)  # never more blocks than tiles
    with pytest.raises(RooflineError, match="needs the SMs"):
        persistent.grid(1000, 1040)
    assert s.defines("e5m2", "fp16")["FP8_E5M2"] == 1 and s.defines()["ELEM_BF16"] == 1
    with pytest.raises(RooflineError):
        s.defines("int8")


def test_cluster_and_tma_store_geometry():
    """A pair's grid is a whole number of clusters, capped at MAX_BLOCKS and at the pairs the
    tiles fill (a pair's second row tile past M still runs); TMA_C adds 2 x 8 KiB of staging
    per consumer to the ring, and every stage stays within 227 KiB."""
    pair = stages.FP8_BY_NAME["wgmma_fp8_cluster"]
    assert pair.cluster_m == 2 and pair.b_box_rows == 128 and pair.tma_c
    assert pair.grid(8192, 8192, 132) == (128, 1, 1)  # MAX_BLOCKS 128
    assert pair.with_params(MAX_BLOCKS=0).grid(8192, 8192, 132) == (132, 1, 1)
    assert pair.with_params(MAX_BLOCKS=0).grid(8192, 8192, 131) == (130, 1, 1)  # whole pairs
    assert pair.grid(77, 16, 132) == (2, 1, 1)  # one row tile: the pair, rank 1 past M
    assert pair.grid(300, 528, 132) == (12, 1, 1)  # 3 row tiles -> 2 pairs x 3 columns
    assert pair.grid(1300, 4112, 132) == (128, 1, 1)  # 6 x 17 cluster tiles > 64 pairs
    assert pair.smem_bytes == 4 * (128 + 256) * 128 + 2 * 2 * 8192 + 1024 == 225 * 1024
    store = stages.FP8_BY_NAME["wgmma_fp8_tma_store"]
    assert store.cluster_m == 1 and store.b_box_rows == 256 and store.grid(77, 16, 132) == (1, 1, 1)
    assert store.smem_bytes == stages.FP8_BY_NAME["wgmma_fp8_persistent"].smem_bytes + 32768
    for s in stages.FP8_STAGES:
        assert s.smem_bytes <= 227 * 1024, s.name
        if s.cluster_m > 1:
            assert s.params["PERSISTENT"] and not s.params.get("PINGPONG"), s.name
            for m, n in ((8192, 8192), (129, 272), (77, 16), (1, 48), (300, 528)):
                assert s.grid(m, n, 132)[0] % 2 == 0 and s.grid(m, n, 132)[0] <= 128, s.name


def test_the_registry_launches_fp8_stages_as_their_own_geometry():
    """The one registry's entries (rooflinecli/stages/gemm.py) launch FP8 stages with the same
    grid, block and shared memory as Fp8Stage.launch, clusters and caps included."""
    from rooflinecli.stages import gemm

    for s in stages.FP8_STAGES:
        for m, n in ((8192, 8192), (129, 272), (77, 16), (300, 528), (1300, 4112)):
            assert gemm.BY_NAME[s.name].launch(m, n, 132) == s.launch(m, n, 132), (s.name, m, n)


def _build(stage, fmt="e4m3", extra=None):
    src = (compiler.include_dir().parent / stage.source).read_text()
    name = stage.source.removesuffix(".cu")
    built = compiler.compile_source(
        src, name, stage.entry, stages.ARCH, {**stage.defines(fmt), **(extra or {})}
    )
    return built, sass.disassemble(built.cubin_path)


def _width(name: str, **params: int) -> stages.Fp8Stage:
    """A stage at another tile width (and ring), as `--stages NAME@BN=...` builds it."""
    s = stages.FP8_BY_NAME[name].with_params(**params)
    return s._replace(name=f"{name}@BN={params['BN']}")


# every width between 128 and 256 on one block, and 192 on a pair and under the TMA store
WIDTHS = [
    *(_width("wgmma_fp8_persistent", BN=bn, STAGES=5) for bn in stages.TILE_WIDTHS[1:-1]),
    _width("wgmma_fp8", BN=192),
    _width("wgmma_fp8_cluster", BN=192),
    _width("wgmma_fp8_tma_store", BN=192),
]


WGMMA_STAGES = [s for s in stages.FP8_STAGES if not s.gemv]


@pytest.mark.parametrize("stage", [*WGMMA_STAGES, *WIDTHS], ids=lambda s: s.name)
def test_sass_is_fp8_wgmma_on_both_shared_operands(stage):
    """BK / 32 = 4 QGMMA.64xBNx32.F32.E4M3.E4M3 per k-block, both operands descriptors (no
    register A), no 16-bit HGMMA or HMMA and no F2F conversion of the inputs; A and B by one
    UTMALDG each; no spills. The swapped stage's instruction is m64nBMk32: the batch tile is its
    N side. The tile widths between 128 and 256 build the same way."""
    built, text = _build(stage)
    assert built.resources is not None and built.resources.spill_bytes == 0
    bn = stage.params["BN"]
    width = stage.params["BM"] if stage.swapped else bn
    q = [ln for ln in text.splitlines() if "QGMMA" in ln]
    sets = 2 if stage.params.get("PROMOTE_ASYNC") else 1  # a copy of the batch per register set
    assert len(q) == stage.params["BK"] // 32 * sets
    # the batch's WGMMAs issue back to back: only its last waits on the group (gsb0), never
    # each one (ptxas's serialisation when other code touches the accumulators mid-batch)
    assert sum(", gsb0" in ln for ln in q) == sets
    assert all(re.search(rf"QGMMA\.64x{width}x32\.F32\.E4M3\.E4M3 R\d+, gdesc\[", ln) for ln in q)
    assert "HGMMA" not in text and "HMMA" not in text
    assert not re.search(r"\bF2F\.(BF16|F16)", text)  # no widening of FP8 inputs
    assert text.count("UTMALDG") == 2
    # a pair: A alone, B's half multicast to both blocks, arrivals on the peer's empty
    # barriers, and the cluster barrier after the barriers' set-up and before exit
    pair = stage.params.get("CLUSTER_M", 1) == 2
    assert text.count("UTMALDG.2D.MULTICAST") == (1 if pair else 0)
    assert ("UCGABAR_WAIT" in text) == pair
    # the TMA-store epilogue: one box store per 64 columns of a consumer's block, no STG
    if stage.params.get("TMA_C"):
        assert text.count("UTMASTG.2D") == bn // 64 and not re.search(r"\bSTG\.", text)
    else:
        assert "UTMASTG" not in text and re.search(r"\bSTG\.", text)
    _, e5 = _build(stage, "e5m2")
    assert "QGMMA" in e5 and "E4M3" not in e5 and ".E5M2.E5M2" in e5


GEMV_VARIANTS = [{}, {"BM": 16, "BN": 32}, {"BM": 32, "KU": 2}, {"NUM_THREADS": 512, "KU": 8}]


@pytest.mark.parametrize("params", GEMV_VARIANTS, ids=str)
def test_the_fp8_gemv_is_mma_sync_on_registers(params):
    """Stage 58: two m16n8k32 per 64 bytes of K and 16 x 8 tile, which Hopper runs as fp16
    HMMA.16816 on inputs widened by F2FP (its only conversions: no F2F of the inputs); the
    weights by 16-byte loads that L1 does not keep, no shared memory before the epilogue's one
    barrier, no TMA, no spills; e5m2 widens from e5m2."""
    s = stages.FP8_BY_NAME["gemv_fp8"].with_params(**params)
    built, text = _build(s)
    assert built.resources is not None and built.resources.spill_bytes == 0
    p = s.params
    hmma = text.count("HMMA.16816.F32")
    # two m16n8k32 (4 HMMA.16816) per chunk, tile of 16 x 8 and chunk in flight
    assert hmma == 4 * p["KU"] * (p["BN"] // 16) * (p["BM"] // 8)
    assert "QGMMA" not in text and "UTMALDG" not in text and "LDGSTS" not in text
    assert not re.search(r"\bF2F\.", text)
    assert "F2FP.F16.E4M3.UNPACK_B" in text
    assert text.count("LDG.E.NA.128.CONSTANT") == 2 * p["KU"] * (p["BN"] // 16)
    assert text.count("BAR.SYNC") == 1
    _, e5 = _build(s, "e5m2")
    assert "F2FP.F16.E5M2.UNPACK_B" in e5 and "E4M3" not in e5


def test_the_wrong_kernel_differs_only_by_the_skipped_k_block():
    s = stages.FP8_BY_NAME["wgmma_fp8"]
    _, right = _build(s)
    _, wrong = _build(s, extra={"SKIP_KBLOCK": 3})
    assert right.count("QGMMA") == wrong.count("QGMMA") == 4
    assert right != wrong


def test_the_decode_stage_geometry():
    """Stage 34: one block per SM (a stream-K line), a ring as deep as RING_KIB holds, a
    producer and a consumer per 64 weight rows, a workspace of one 64 x BM fp32 partial and a
    flag per block and consumer; a decode stage of the FP8 contract (M 1..64, N, K by 16)."""
    from rooflinecli.stages import gemm

    s = stages.FP8_BY_NAME["wgmma_fp8_swapab"]
    assert s.swapped and s.source == "34_wgmma_fp8_swapab.cu"
    assert s.entry == "gemm_wgmma_fp8_swapab"
    assert s.consumers == 2 and s.threads == 384
    assert s.ring_stages == 200 * 1024 // ((8 + 128) * 128) == 11
    assert s.launch(1, 4096, 132) == ((132, 1, 1), (384, 1, 1), 11 * 136 * 128 + 1024)
    assert s.workspace_bytes(132) == 132 * 2 * (64 * 8 * 4 + 4)
    wide = s.with_params(BM=64, BN=256)
    assert wide.swapped and wide.ring_stages == 200 * 1024 // (320 * 128) == 5
    assert wide.threads == 640 and wide.workspace_bytes(2) == 2 * 4 * (64 * 64 * 4 + 4)
    g = gemm.BY_NAME["wgmma_fp8_swapab"]
    # the runner's geometry of a registry entry keeps its source, and a variant its parameters
    assert stages.of_registry(g).swapped and stages.of_registry(g).entry == s.entry
    v = gemm.select("wgmma_fp8_swapab@BM=32", "fp8")[0]
    assert stages.of_registry(v).swapped and stages.of_registry(v).params["BM"] == 32
    assert g.workspace_bytes is not None and g.workspace_bytes(1, 4096, 4096, 132) == (
        s.workspace_bytes(132)
    )
    assert g.refuses(64, 4096, 4096) is None and "M = 65" in (g.refuses(65, 4096, 4096) or "")
    assert "multiple" in (g.refuses(1, 4099, 4096) or "")
    with pytest.raises(RooflineError, match="needs the SMs"):
        s.grid(1, 4096)


def test_the_even_decode_grid_cuts_every_tile_alike():
    """EVEN=1: where stage 34's tiles fit the SMs, a whole number of blocks per tile, so the
    line's equal ranges never run from one tile into the next; the registry launches the same."""
    from rooflinecli.stages import gemm

    s = stages.FP8_BY_NAME["wgmma_fp8_swapab"]
    cases = [  # (params, M, N, blocks): 128 x 64 tiles, 32 of them, 4 blocks each ...
        ({"BM": 64, "EVEN": 1}, 64, 4096, 128),
        ({"BM": 16, "EVEN": 1}, 64, 4096, 128),  # 4 x 32 tiles: one block each, all of K
        ({"BM": 64, "EVEN": 1}, 64, 14336, 112),  # 112 tiles: one block each
        ({"BM": 64, "EVEN": 1}, 64, 32000, 132),  # more tiles than SMs: the stream-K line
        ({"BM": 64, "EVEN": 0}, 64, 4096, 132),
        ({"BM": 8, "BN": 64, "EVEN": 1}, 1, 2560, 120),  # 40 tiles, 3 blocks each
    ]
    for params, m, n, blocks in cases:
        v = s.with_params(**params)
        assert v.grid(m, n, 132) == (blocks, 1, 1), (params, m, n)
        name = "wgmma_fp8_swapab@" + ",".join(f"{k}={x}" for k, x in params.items())
        (g,) = gemm.named(name, "fp8")
        assert g.launch(m, n, 132) == v.launch(m, n, 132), (params, m, n)


def test_scale_layouts_and_the_scaled_reference():
    """core.fp8's scales: their shapes per layout, and the float64 product under them against
    a sum written out term by term (each term's scale taken from its row, column or block)."""
    rng = np.random.default_rng(3)
    m, n, k = 3, 260, 300  # a last block of B 4 rows high, a last group of K 44 wide
    assert fp8.scale_shapes("tensor", m, n, k) == ((1,), (1,))
    assert fp8.scale_shapes("row", m, n, k) == ((3,), (260,))
    assert fp8.scale_shapes("block", m, n, k) == ((3, 3), (3, 3))
    with pytest.raises(RooflineError, match="one of tensor, row, block"):
        fp8.scale_shapes("channel", m, n, k)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    for scaling in fp8.SCALINGS:
        sa, sb = fp8.random_scales(rng, scaling, m, n, k)
        assert sa.dtype == sb.dtype == np.float32
        got = fp8.scaled_product(a, b, scaling, sa, sb)
        want = np.zeros((m, n))
        for i in range(m):
            for j in range(n):
                for kk in range(k):
                    if scaling == "tensor":
                        f = float(sa[0]) * float(sb[0])
                    elif scaling == "row":
                        f = float(sa[i]) * float(sb[j])
                    else:
                        f = float(sa[i, kk // 128]) * float(sb[j // 128, kk // 128])
                    want[i, j] += f * a[i, kk] * b[j, kk]
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12), scaling


def test_which_stages_take_which_scales():
    """Per tensor and per row every stage-32 build takes (-DSCALES=1); DeepGEMM's blocks only a
    stage promoting every 128 of K on 128-column tiles (-DSCALES=2), or stage 58, whose
    promotion every 64 of K lies inside a block; stage 34 per tensor only."""
    block = stages.FP8_BY_NAME["wgmma_fp8_blockscale"]
    assert block.defines(scaling="block")["SCALES"] == 2
    assert block.defines(scaling="row")["SCALES"] == 1
    assert "SCALES" not in block.defines()  # per tensor: the build as before
    why = stages.FP8_BY_NAME["wgmma_fp8_promote"].scaling_refusal("block")
    assert why and "PROMOTE=1" in why
    assert stages.FP8_BY_NAME["wgmma_fp8_swapab"].scaling_refusal("row")
    with pytest.raises(RooflineError, match="per-tensor scales only"):
        stages.FP8_BY_NAME["wgmma_fp8_swapab"].defines(scaling="row")
    takes = {s.name for s in stages.FP8_STAGES if s.scaling_refusal("block") is None}
    assert takes == {"wgmma_fp8_blockscale", "gemv_fp8"}
    assert stages.FP8_BY_NAME["gemv_fp8"].defines(scaling="block")["SCALES"] == 2


@pytest.mark.parametrize("scaling", ["row", "block"])
def test_finer_scales_compile_to_the_same_wgmmas(scaling):
    """A stage built for finer scales keeps its QGMMA main loop (4 per k-block, no HGMMA, no
    conversion of the inputs) and spills nothing; the scales are read in the epilogue (row) or
    at each promotion (block)."""
    s = stages.FP8_BY_NAME["wgmma_fp8_blockscale"]
    built, text = _build(s, extra={"SCALES": stages.SCALES_DEFINE[scaling]})
    assert built.resources is not None and built.resources.spill_bytes == 0
    assert text.count("QGMMA.64x128x32.F32.E4M3.E4M3") == 4
    assert "HGMMA" not in text and not re.search(r"\bF2F\.(BF16|F16)", text)


def test_each_stage_is_held_to_the_cublaslt_mode_its_accumulation_matches():
    """A stage that promotes its sums into FP32 beside cuBLASLt's default mode, one that keeps a
    reduced-precision sum beside use_fast_accum; the runner pairs them so, and docs/stages.md's
    generated FP8 table says the same of every stage."""
    from rooflinecli.stages import gemm, listing

    table = listing.fp8_table()
    for s in stages.FP8_STAGES:
        want = "cublaslt_fp8" if s.promote_span else "cublaslt_fp8_fast"
        assert s.paired_reference == want and want in gemm.BY_NAME
        assert gfp8.Fp8GemmProblem.paired_name(None, gemm.BY_NAME[s.name]) == want  # type: ignore[arg-type]
        row = next(r for r in table.splitlines() if r.startswith(f"| `{s.name}` |"))
        assert row.endswith(f"| `{want}` |") and s.accumulation in row
    assert (
        "each promotion under the next group's WGMMAs"
        in stages.FP8_BY_NAME["wgmma_fp8_promote_async"].accumulation
    )


def test_a_stage_with_widths_takes_its_tile_width_from_the_shape():
    """wgmma_fp8_fill launches BN = 192 with its 4-deep ring at 1024 x 6144 (256 tiles fill 132
    SMs where 256-wide tiles make 1.45 waves), BN = 256 at 1024 x 4096; its name stays, so its
    records and the table know it as one stage. The pairs count their 128 blocks, not the SMs.
    A stage of one width is itself at any shape."""
    fill = BY_NAME["wgmma_fp8_fill"]
    at = fill.for_shape(1024, 6144, 132)
    assert at.name == "wgmma_fp8_fill" and (at.params["BN"], at.params["STAGES"]) == (192, 4)
    assert at.tile == (128, 192) and at.widths == fill.widths
    assert fill.for_shape(1024, 4096, 132) is fill
    assert fill.for_shape(2048, 1024, 132).params["BN"] == 128  # 16 x 8 tiles: one wave at 97%
    assert fill.width_keys == {"BN", "STAGES"}
    pairs = BY_NAME["wgmma_fp8_cluster_fill"]
    assert (
        pairs.persistent_max_blocks == 128 and pairs.for_shape(1024, 6144, 132).params["BN"] == 192
    )
    fixed = BY_NAME["wgmma_fp8_tma_store"]
    assert fixed.for_shape(1024, 6144, 132) is fixed and not fixed.width_keys
