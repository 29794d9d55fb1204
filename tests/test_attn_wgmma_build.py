"""Stage 43 (kernels/43_attn_wgmma.cu) built for sm_90a without a GPU: each schedule variant
compiles without spills for both 16-bit types and head dims, and its SASS holds what the file
claims (the instructions; correctness and speed are the GPU's to show: benchmarks/probes.sh fa3).

Each variant is the registry's config with some params overridden (64-0-128 and 128-0-176 are the
registry's own, which test_attention_stages builds too); all but the one that must not compile are
built for the session by the prebuild helper (conftest)."""

import re

import pytest
from tiers import MATRIX, tier

from rooflinecli.stages import attention, compiler, sass

STAGE = attention.ATTENTION_BY_NAME["attn_wgmma"]


def variant(head_dim: int, bf16: int, **params: int) -> pytest.MarkDecorator:
    dtype = "bf16" if bf16 else "fp16"
    return pytest.mark.prebuild(STAGE, dtype=dtype, head_dim=head_dim, params=params, sass=True)


def build(head_dim: int, bf16: int, **params: int) -> tuple[compiler.Compiled, str]:
    dtype = "bf16" if bf16 else "fp16"
    built = attention.compile_stage(STAGE, "sm_90a", dtype, head_dim, params)
    return built, sass.disassemble(built.cubin_path)


# the registry's bf16 build at head dim 128 (BLOCK_N 176: test_attention_stages' first-tier
# build) in the first tier; head dim 64, fp16 and the 128-key tile at 128 in the second
DEFAULT = [(128, 1, 176), (64, 1, 128), (128, 1, 128), (64, 0, 128), (128, 0, 176)]
FIRST_TIER = {(128, 1, 176)}


@pytest.mark.parametrize(
    "head_dim, bf16, block_n",
    [
        pytest.param(*v, marks=[variant(v[0], v[1], BLOCK_N=v[2]), *tier(v in FIRST_TIER)])
        for v in DEFAULT
    ],
)
def test_default_schedule_uses_wgmma_with_register_p_and_tma(head_dim, bf16, block_n):
    """QK^T: HGMMA 64 x BLOCK_N with both operands as descriptors, HEAD_DIM / 16 of them; PV:
    HGMMA 64 x HEAD_DIM with A from registers and B transposed (V N-major), BLOCK_N / 16; each
    chain issued twice (tile 0 / the loop for QK^T, the loop / the last tile for PV); Q, K, V by
    UTMALDG (HEAD_DIM / 64 boxes each); no HMMA fallback; no spills under setmaxnreg's 240."""
    built, text = build(head_dim, bf16, BLOCK_N=block_n)
    assert built.resources is not None and built.resources.spill_bytes == 0
    gmma = [ln for ln in text.splitlines() if "HGMMA" in ln]
    ss = [ln for ln in gmma if re.search(rf"HGMMA\.64x{block_n}x16\S* R\d+, gdesc", ln)]
    rs = [ln for ln in gmma if re.search(rf"HGMMA\.64x{head_dim}x16\S* R\d+, R\d+, gdesc", ln)]
    assert len(ss) == 2 * head_dim // 16
    assert len(rs) == 2 * block_n // 16 and all(".tnspB" in ln for ln in rs)
    assert len(gmma) == len(ss) + len(rs)
    assert text.count("UTMALDG") == 3 * head_dim // 64
    assert "HMMA" not in text.replace("HGMMA", "")
    assert ("BF16" in gmma[0]) == bool(bf16)


@variant(128, 1, BLOCK_N=128, OVERLAP=0, PINGPONG=0)
@MATRIX  # a schedule variant: the second tier (tests/tiers.py)
def test_sequential_schedule_builds_and_ping_pong_needs_overlap():
    """OVERLAP=0 (S, softmax, PV in turn) issues each chain once; PINGPONG without OVERLAP is
    refused at compile time, with the reason."""
    built, text = build(128, 1, BLOCK_N=128, OVERLAP=0, PINGPONG=0)
    assert built.resources is not None and built.resources.spill_bytes == 0
    assert text.count("HGMMA") == 128 // 16 + 8
    assert "BAR.ARV" not in text  # no named-barrier hand-over
    with pytest.raises(Exception, match="does not compile"):
        build(128, 1, BLOCK_N=128, OVERLAP=0, PINGPONG=1)


@variant(128, 1, BLOCK_N=128, TMA_O=1)
@MATRIX  # a variant (TMA_O=1)
def test_tma_o_stores_each_box_through_the_copy_engine():
    """TMA_O=1: O leaves through shared memory, one UTMASTG per 64-column box (per consumer
    warpgroup), and no global store instruction is left (STG) for it."""
    built, text = build(128, 1, BLOCK_N=128, TMA_O=1)
    assert built.resources is not None and built.resources.spill_bytes == 0
    assert text.count("UTMASTG.3D") == 128 // 64
    assert not re.search(r"\sSTG\.", text)
