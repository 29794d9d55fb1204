"""The decode stages (M = 1..64, chapter 14 and their Tensor Core stage) on the CPU: their shape
class, the define that tells fp32 from the 16-bit builds, and the SASS their design relies on:
16-byte loads of B, a whole step of loads issued before its first FMA, HMMA for the WMMA stage.
(tests/test_stages.py compiles every stage for sm_90a and sm_80 without spills.)"""

import json
import re
from dataclasses import replace

import pytest
from tiers import primary_dtype, tier

from rooflinecli.stages import compiler, sass
from rooflinecli.stages import gemm as stages

# (the FP8 decode stage, wgmma_fp8_swapab, keeps the FP8 contract: tests/test_fp8.py)
DECODE = [s for s in stages.STAGES if s.m_range is not None and s.dtype != "fp8"]
# the stages built on 16-byte loads into registers (stage 35 copies B by cp.async instead)
VECTOR = [s for s in DECODE if s.name not in ("gemv_naive", "gemv_streamk_mma")]
TENSOR_CORE = ("gemv_wmma", "gemv_streamk_mma")  # chapter 12's HMMA claim, fp16 and bf16 only


def test_the_decode_ladder_is_registered_in_order():
    assert [s.name for s in DECODE] == [
        "gemv_naive",
        "gemv_vector",
        "gemv_splitk",
        "gemv_multirow",
        "gemv_wmma",
        "gemv_streamk",
        "gemv_streamk_mma",
        "gemv_pdl",
        "gemv_shift",
    ]
    for s in DECODE:
        assert re.fullmatch(r"5\d_gemv_[a-z_]+\.cu", s.file), s.file
        assert s.needs_multiple == 1 and s.m_range == (1, 64)
        assert s.chapter == (12 if s.name in TENSOR_CORE else 14)
        assert set(s.all_dtypes) == (
            {"fp16", "bf16"} if s.chapter == 12 else {"fp32", "fp16", "bf16"}
        )


@pytest.mark.parametrize("stage", DECODE, ids=lambda s: s.name)
def test_decode_stages_take_m_up_to_64_and_any_n_k(stage):
    for m in (1, 3, 17, 64):
        for n, k in ((4099, 1031), (4096, 4096), (11008, 4096), (1, 1)):
            assert stage.refuses(m, n, k) is None
    why = stage.refuses(65, 4096, 4096)
    assert why is not None and "decode stage for M = 1..64" in why and "M = 65" in why
    # the kernel is correct past 64 (tests/gpu/test_decode_gpu.py runs it there): only the
    # shape class says no
    assert replace(stage, m_range=None).refuses(4096, 4096, 4096) is None


def test_fp32_builds_of_a_mixed_source_get_elem_fp32():
    s = stages.BY_NAME["gemv_splitk"]
    assert "-DELEM_FP32=1" in s.defines("fp32")
    assert "-DELEM_BF16=1" in s.defines("bf16")
    assert not any(d.startswith("-DELEM_") for d in s.defines("fp16"))
    # single-family stages are compiled exactly as before
    assert not any(d.startswith("-DELEM_") for d in stages.BY_NAME["naive_xcol"].defines("fp32"))
    assert stages.BY_NAME["mma_sync"].defines("bf16")[-1] == "-DELEM_BF16=1"


def test_launch_geometry_at_the_llama_shapes():
    """A block per 32 columns for the split-K stages: 128 blocks at N = 4096, 344 at 11008."""
    for name in ("gemv_splitk", "gemv_multirow", "gemv_wmma"):
        s = stages.BY_NAME[name]
        assert s.launch(1, 4096, 132)[0] == (128, 1, 1)
        assert s.launch(16, 11008, 132)[0] == (344, -(-16 // s.tile[0]), 1)
    assert stages.BY_NAME["gemv_naive"].launch(3, 4099, 132)[0] == (33, 3, 1)
    assert stages.BY_NAME["gemv_vector"].launch(17, 4096, 132)[0] == (8, 5, 1)


def test_stream_k_gemv_fills_every_sm_whatever_the_shape():
    """Stage 34 is persistent: BLOCKS_PER_SM x SMs blocks (2 x 132 = 264) even at N = 1, and a
    workspace of M x N fp32 sums plus a counter per TM x BN tile (BN = 256)."""
    s = stages.BY_NAME["gemv_streamk"]
    assert (s.params["BLOCKS_PER_SM"], s.params["BN"], s.params["TM"]) == (2, 256, 1)
    for m, n in ((1, 4096), (1, 32000), (64, 1), (16, 11008)):
        assert s.launch(m, n, 132)[0] == (264, 1, 1)
    assert s.workspace_bytes is not None
    assert s.workspace_bytes(1, 4096, 4096, 264) == 4 * (4096 + 16) == 16448
    assert s.workspace_bytes(3, 4097, 1031, 264) == 4 * (3 * 4097 + 3 * 17) == 49368
    wide = s.with_params({"BN": 512, "BLOCKS_PER_SM": 4})
    assert wide.launch(1, 4096, 132)[0] == (528, 1, 1)
    assert wide.workspace_bytes is not None and wide.workspace_bytes(1, 4096, 1, 1) == 4 * 4104


def test_stream_k_gemv_sources_use_the_streaming_load_wrapper():
    """B goes through ptx_sm80.cuh's ld.global.nc.L1::no_allocate wrappers, not asm in the stage."""
    src = compiler.source_of(stages.BY_NAME["gemv_streamk"])
    assert "ld_nc_na_v4(" in src and "ld_nc_na_l2_256b_v4(" in src
    assert "asm" not in src


def test_wmma_shared_memory_is_the_kernels_formula():
    s = stages.BY_NAME["gemv_wmma"]
    bm, bn, kw, warps = s.params["BM"], s.params["BN"], s.params["KW"], s.threads[0] // 32
    stage_bytes = (kw * (bn + 8) + bm * (kw + 8)) * 2  # B and A slices, rows padded by 8
    assert s.smem_bytes == warps * -(-max(stage_bytes, bm * bn * 4) // 128) * 128
    assert s.smem_bytes > 48 * 1024  # dynamic, opted in by the runner
    src = compiler.source_of(s)
    assert "constexpr int SMEM_BYTES = WARPS * WARP_BYTES;" in src


# built and disassembled in the session's helper (conftest), with test_stages' SASS cases
CASES = [
    pytest.param(
        s,
        d,
        marks=[
            pytest.mark.prebuild(s, dtype=d, sass=True),
            *tier(d == primary_dtype(s.all_dtypes, s.dtype)),
        ],
    )
    for s in VECTOR
    for d in s.all_dtypes
]


def _report(stage, dtype):
    built = compiler.compile_stage(stage, "sm_90a", dtype)
    fn = sass.parse(sass.disassemble(built.cubin_path))[stage.entry]
    return built, fn


@pytest.mark.parametrize("stage, dtype", CASES, ids=lambda v: getattr(v, "name", v))
def test_b_is_read_with_16_byte_loads(stage, dtype):
    _, fn = _report(stage, dtype)
    assert sass.widths(fn.instrs)["LDG.128"] > 0
    if stage.name == "gemv_wmma":  # B reaches the Tensor Cores through shared memory
        assert sass.mix(fn.instrs)["HMMA"] > 0 and sass.widths(fn.instrs)["STS.128"] > 0
        if dtype == "fp16":
            assert any(i.opcode.startswith("LDSM.16.MT88") for i in fn.instrs)


SPLIT_K = [
    pytest.param(
        s,
        d,
        marks=[
            pytest.mark.prebuild(s, dtype=d, sass=True),
            *tier(d == primary_dtype(s.all_dtypes, s.dtype)),
        ],
    )
    for s in DECODE
    if s.entry in ("gemv_splitk", "gemv_streamk")
    for d in s.all_dtypes
]


@pytest.mark.parametrize("stage, dtype", SPLIT_K, ids=lambda v: getattr(v, "name", v))
def test_split_k_issues_a_step_of_loads_before_its_first_fma(stage, dtype):
    """Bytes in flight are the whole game at M = 1: in the 16-byte loop (the one with the most
    FFMAs among those holding LDG.128), at least a step's 8 loads of B (128 bytes per thread)
    are issued before the first FFMA consumes one. Without MIN_BLOCKS = 1 (ptxas aiming at
    more blocks per SM) stage 32's loop loaded one row, waited, multiplied, loaded the next."""
    _, fn = _report(stage, dtype)
    best = None
    for loop in sass.loops(fn):
        body = sass.body(fn, loop)
        if not any(i.base == "LDG" and ".128" in i.opcode for i in body):
            continue
        ffma = sum(i.base == "FFMA" for i in body)
        if best is None or ffma > best[0]:
            best = (ffma, body)
    assert best is not None and best[0] > 0
    body = best[1]
    first_fma = next(n for n, i in enumerate(body) if i.base == "FFMA")
    loads_before = sum(i.base == "LDG" and ".128" in i.opcode for i in body[:first_fma])
    assert loads_before >= 8, (stage.name, dtype, loads_before)


STREAM_K = [
    pytest.param(stages.BY_NAME["gemv_streamk"], d, marks=[pytest.mark.prebuild(
        stages.BY_NAME["gemv_streamk"], dtype=d, sass=True), *tier(d == "bf16")])
    for d in stages.BY_NAME["gemv_streamk"].all_dtypes
]  # fmt: skip


@pytest.mark.parametrize("stage, dtype", STREAM_K, ids=lambda v: getattr(v, "name", v))
def test_stream_k_gemv_reduces_without_shared_atomics_and_with_16_byte_reds(stage, dtype):
    """Partial sums leave a block as 16-byte reductions in L2 (REDG ... F32x4: one per four
    columns), and the slots of a block meet through plain shared-memory stores: a float atomicAdd
    on shared memory is a compare-and-swap loop on sm_90 (ATOMS.CAST.SPIN). B's loads skip L1."""
    _, fn = _report(stage, dtype)
    ops = {i.opcode for i in fn.instrs}
    assert any(o.startswith("REDG") and "F32x4" in o for o in ops), sorted(ops)
    assert not any(o.startswith("ATOMS") for o in ops), sorted(ops)
    assert any(o.startswith("LDG") and ".NA" in o and ".128" in o for o in ops), sorted(ops)


def test_stream_k_mma_geometry_workspace_and_shared_memory():
    """Stage 35: persistent like stage 34 (2 x 132 blocks whatever the shape), a workspace of
    M x N fp32 sums plus a counter per 16-row x BN tile, and per slot BK x (BN + 8) of B and
    16 x (BK + 8) of A in dynamic shared memory: the kernel's SMEM_BYTES formula."""
    s = stages.BY_NAME["gemv_streamk_mma"]
    bn, bk, st = s.params["BN"], s.params["BK"], s.params["STAGES"]
    assert (bn, bk, st, s.params["BLOCKS_PER_SM"]) == (128, 64, 5, 2)
    for m, n in ((1, 4096), (16, 11008), (64, 1), (17, 32000)):
        assert s.launch(m, n, 132)[0] == (264, 1, 1)
    assert s.workspace_bytes is not None
    assert s.workspace_bytes(16, 11008, 4096, 264) == 4 * (16 * 11008 + 86)
    assert s.workspace_bytes(17, 4097, 1031, 264) == 4 * (17 * 4097 + 2 * 33)
    assert s.smem_bytes == st * (bk * (bn + 8) + 16 * (bk + 8)) * 2 == 98560
    assert 2 * (s.smem_bytes + 1024) <= 227 * 1024  # two blocks per SM fit
    # (STAGES - 1) x BK x BN x 2 bytes of B in flight per block: 64 KiB, 128 KiB per SM
    assert (st - 1) * bk * bn * 2 == 64 * 1024
    src = compiler.source_of(s)
    assert "constexpr int SMEM_BYTES = STAGES * (B_SLOT + A_SLOT) * 2;" in src
    assert "asm" not in src  # PTX through ptx_sm80.cuh / ptx_sm90.cuh's wrappers


MMA_CASES = [
    pytest.param(stages.BY_NAME["gemv_streamk_mma"], d, marks=[pytest.mark.prebuild(
        stages.BY_NAME["gemv_streamk_mma"], dtype=d, sass=True), *tier(d == "bf16")])
    for d in ("fp16", "bf16")
]  # fmt: skip


@pytest.mark.parametrize("stage, dtype", MMA_CASES, ids=lambda v: getattr(v, "name", v))
def test_stream_k_mma_streams_b_by_cp_async_into_hmma(stage, dtype):
    """B and A reach shared memory by 16-byte cp.async.cg (LDGSTS.E.BYPASS.128, no registers),
    the fragments come out by ldmatrix (LDSM, .MT88 the transposed B), the math is HMMA 16816,
    partials leave as 16-byte reductions in L2 (REDG ... F32x4) and no shared-memory atomics;
    nothing spills."""
    built, fn = _report(stage, dtype)
    ops = {i.opcode for i in fn.instrs}
    assert any(o.startswith("LDGSTS") and "BYPASS" in o and ".128" in o for o in ops), sorted(ops)
    assert any(o.startswith("LDSM.16.MT88.4") for o in ops), sorted(ops)
    assert any(o.startswith("LDSM.16.M88.4") for o in ops), sorted(ops)
    assert sass.mix(fn.instrs)["HMMA"] > 0
    assert any(o.startswith("REDG") and "F32x4" in o for o in ops), sorted(ops)
    assert not any(o.startswith("ATOMS") for o in ops), sorted(ops)
    assert built.resources.spill_bytes == 0


def test_the_default_ladder_keeps_the_decode_stages_to_their_rows(monkeypatch, tmp_path):
    """`run gemm` without --stages runs the stages built for the shape: at M = 4096 the decode
    stages (M = 1..64) leave the table instead of filling it with skipped rows; at M = 1 (or
    with M = 1 among --sizes) they run; named with --stages at M = 4096 they are refused.
    `model gemm` lists the same stages."""
    from click.testing import CliRunner
    from fakes import fake_run_gemm

    from rooflinecli.cli import cli
    from rooflinecli.gpu import runner

    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(runner, "run_gemm", fake_run_gemm(2))
    decode = [s.name for s in stages.select(None, "fp32") if s.m_range is not None]
    assert decode and "gemv_naive" in decode

    def names(*args: str) -> list[str]:
        r = CliRunner().invoke(cli, ["run", "gemm", *args, "--format", "json"])
        assert r.exit_code == 0, r.output
        return [x["stage"] for x in json.loads(r.output)["records"]]

    big = names("--m", "4096")
    assert not set(decode) & set(big) and "warptile" in big and big[-1] == "cublas"
    assert set(decode) <= set(names("--sizes", "1x4096x4096,4096"))
    r = CliRunner().invoke(cli, ["run", "gemm", "--m", "4096", "--stages", "gemv_naive"])
    assert r.exit_code == 2 and "is a decode stage for M = 1..64" in r.stderr
    # the model lists the same ladder
    for m, has_decode in (("4096", False), ("1", True)):
        r = CliRunner().invoke(cli, ["model", "gemm", "--m", m, "--format", "json"])
        listed = {x["stage"] for x in json.loads(r.output)["records"]}
        assert (set(decode) <= listed) is has_decode and "warptile" in listed
