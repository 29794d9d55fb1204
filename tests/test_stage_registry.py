"""The one stage contract: every stage of every kind (GEMM, FP8, attention, the decode token) is
an entry of one list (rooflinecli.stages.registry.all_stages) that says the same things of each
(rooflinecli.stages.contract.KernelStage); every kernels/NN_*.cu file is the source of stages
of exactly one kind; kernels/README.md and docs/stages.md are generated from that list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rooflinecli.core.attention import Shape
from rooflinecli.errors import RooflineError
from rooflinecli.stages import attention, fp8, gemm, listing, registry, token
from rooflinecli.stages.contract import KINDS, KernelStage

ROOT = Path(__file__).resolve().parent.parent
KERNEL_FILES = sorted(p.name for p in (ROOT / "kernels").glob("*.cu") if re.match(r"\d\d_", p.name))


def test_every_kernel_file_is_the_source_of_stages_of_one_kind() -> None:
    by_file = registry.sources()
    assert sorted(by_file) == KERNEL_FILES  # every file has stages, and every stage a file
    for file, stages in by_file.items():
        assert stages, file
        assert len({s.kind for s in stages}) == 1, (file, [(s.name, s.kind) for s in stages])
    assert len(KERNEL_FILES) == 42


def test_each_kind_lists_its_own_stages_once() -> None:
    stages = registry.all_stages()
    names = [s.name for s in stages]
    assert len(names) == len(set(names))  # one name, one stage, across kinds
    assert {s.kind for s in stages} == set(KINDS)
    assert all(isinstance(s, KernelStage) for s in stages)
    assert registry.of_kind("fp8") == fp8.FP8_STAGES
    assert registry.of_kind("attention") == attention.ATTENTION_STAGES
    assert registry.of_kind("token") == token.TOKEN_STAGES
    gemm_own = tuple(s for s in gemm.STAGES if not s.reference and s.name not in fp8.FP8_BY_NAME)
    assert registry.of_kind("gemm") == gemm_own
    # the GEMM registry lists the FP8 stages for `--stages` too, with the FP8 stage's own terms
    for s in fp8.FP8_STAGES:
        g = gemm.BY_NAME[s.name]
        assert g.kind == "fp8" and g.source == s.source and g.entry == s.entry
        assert (g.min_cc, g.tune_space, g.params) == (s.min_cc, s.tune_space, s.params)
    with pytest.raises(ValueError, match="no stage kind 'fp16'"):
        registry.of_kind("fp16")


def test_every_stage_says_what_the_contract_asks() -> None:
    for s in registry.all_stages():
        where = f"{s.kind} {s.name}"
        assert s.source in KERNEL_FILES, where
        assert s.entry and s.entry in (ROOT / "kernels" / s.source).read_text(), where
        assert s.what.strip(), where
        assert s.kernel_dtypes and s.math in ("FFMA", "HMMA", "HGMMA", "QGMMA"), where
        assert 50 <= s.min_cc <= 100, where
        assert s.param_sets and all(isinstance(v, int) for p in s.param_sets.values()
                                    for v in p.values()), where  # fmt: skip
        for param, values in s.tune_space.items():
            assert values and all(isinstance(v, int) for v in values), (where, param)
    assert attention.ATTENTION_BY_NAME["attn_fused"].param_sets.keys() == {"d64", "d128"}


def test_each_kind_refuses_a_problem_it_cannot_run_in_its_own_words() -> None:
    gemv = gemm.BY_NAME["gemv_vector"]  # a decode stage: M = 1..64
    assert gemv.refusal_for((4096, 4096, 4096)) == gemv.refuses(4096, 4096, 4096)
    assert "decode stage for M = 1..64" in str(gemv.refusal_for((4096, 4096, 4096)))
    assert gemv.refusal_for((16, 4096, 4096)) is None

    f = fp8.FP8_BY_NAME["wgmma_fp8"]
    assert f.refusal_for((4096, 4096, 100)) == (
        "FP8 GEMM 4096x4096x100: K = 100 not a multiple of 16 (TMA rows of 16-byte multiples; "
        "cuBLASLt FP8 needs it too)"
    )
    assert f.refusal_for((4096, 4096, 4096)) is None

    a = attention.ATTENTION_BY_NAME["attn_fa2_mma"]
    shape = Shape(batch=2, heads=16, kv_heads=16, seq=1024, head_dim=128)
    assert a.refusal_for((shape, "fp32")) == "attn_fa2_mma is fp16/bf16, not fp32"
    assert a.refusal_for((shape, "bf16")) is None

    t = token.TOKEN_BY_NAME["decode_token"]
    chain = [(5, 4096, 4096)]
    assert t.refusal_for(("bf16", 5, chain)) == t.refuses("bf16", 5, chain)
    assert "batch 1 to 4" in str(t.refusal_for(("bf16", 5, chain)))
    assert t.refusal_for(("bf16", 1, [(1, 4096, 4096)])) is None


def test_each_kind_says_how_it_is_launched() -> None:
    naive = gemm.BY_NAME["naive_xcol"]  # one thread per C element, 16 x 16 blocks
    assert naive.launch_for((4096, 2048, 512)) == ((128, 256, 1), (16, 16, 1), 0)

    f = fp8.FP8_BY_NAME["wgmma_fp8"]  # BM 128, BN 256: 3 warpgroups, 4 stages of 48 KiB
    grid, block, smem = f.launch_for((4096, 4096, 4096))
    assert (grid, block) == ((16, 32, 1), (384, 1, 1))
    assert smem == 4 * (128 + 256) * 128 + 1024
    for s in fp8.FP8_STAGES:  # the GEMM registry launches an FP8 stage as the stage itself does
        assert gemm.BY_NAME[s.name].launch(4096, 4096, 132) == s.launch(4096, 4096, 132)

    a = attention.ATTENTION_BY_NAME["attn_naive"]
    shape = Shape(batch=2, heads=16, kv_heads=16, seq=1024, head_dim=64)
    assert a.launch_for((shape, "fp16")) == a.launches(shape)
    assert [x.entry for x in a.launch_for((shape, "fp16"))] == list(a.entries)

    t = token.TOKEN_BY_NAME["decode_token"]  # one block per SM: 8 consumers, a producer, a store
    grid, block, smem = t.launch_for(("bf16", 1, [(1, 4096, 4096), (1, 11008, 4096)]), 132)
    assert (grid, block) == ((132, 1, 1), (320, 1, 1))
    assert smem == t.smem_bytes(1, 4096)
    with pytest.raises(RooflineError, match="needs the SM count"):
        t.launch_for(("bf16", 1, [(1, 4096, 4096)]))


@pytest.mark.parametrize("page", ["kernels/README.md", "docs/stages.md"])
def test_the_pages_about_the_stages_are_generated_from_the_registry(page: str) -> None:
    path = ROOT / page
    assert path.read_text() == listing.page(path), f"run `make docs` ({page})"
    text = path.read_text()
    for s in registry.all_stages():  # every stage of every kind is on both pages
        assert f"`{s.name}`" in text, (page, s.name)
    if page == "docs/stages.md":
        kinds = {m["kind"] for m in listing.TABLE.finditer(text)}
        assert kinds == set(listing.TABLES)
        rows = re.findall(r"^\| `kernels/(\d\d_\w+\.cu)` \| (\w+) \|", text, re.M)
        files = dict(rows[: len(KERNEL_FILES)])  # the first table: every file and its kind
        assert sorted(files) == KERNEL_FILES
        assert files["32_wgmma_fp8.cu"] == "fp8" and files["57_decode_token.cu"] == "token"
