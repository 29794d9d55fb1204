"""On a GPU: every decode stage verifies through the runner's public path (run_gemm) at M = 1, 3,
17 and 64 with N and K that no vector width divides, at 1x4096x4096 and 16x11008x4096, on the
16-byte paths' edges (N, K multiples of 4 or 8 but of no tile), with beta != 0, and past M = 64
once its shape class is lifted (the contract holds for any M; the class steers a dispatcher)."""

from dataclasses import replace
from itertools import product

import pytest

from rooflinecli.gpu import runner
from rooflinecli.stages import gemm as stages

pytestmark = pytest.mark.gpu

DECODE = [s for s in stages.STAGES if s.m_range is not None]
DTYPES = ["fp32", "fp16", "bf16"]
# verification is the point here: one timed launch, no L2 flush buffer
QUICK = runner.Timing(warmup_ms=1, budget_ms=1, min_repeats=1, max_repeats=1, flush_l2=False)


def _verify(shapes, dtype, chosen=None, alpha=1.0, beta=0.0):
    chosen = chosen if chosen is not None else [s for s in DECODE if dtype in s.all_dtypes]
    _, _, recs = runner.run_gemm(
        shapes,
        [*chosen, stages.reference_for(dtype)],
        None,
        alpha=alpha,
        beta=beta,
        timing=QUICK,
        dtype=dtype,
    )
    assert {r["stage"] for r in recs} == {s.name for s in chosen} | {
        stages.reference_for(dtype).name
    }
    for r in recs:
        assert r["verified"] is True, r
        assert r["time_ms"] > 0
    return recs


@pytest.mark.parametrize("dtype", DTYPES)
def test_decode_stages_verify_at_odd_n_and_k(dtype):
    _verify([(m, 4099, 1031) for m in (1, 3, 17, 64)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_decode_stages_verify_at_llama_shapes(dtype):
    _verify([(1, 4096, 4096), (16, 11008, 4096)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_decode_stages_verify_on_the_edges_of_their_16_byte_paths(dtype):
    # 4100 / 1028: fp32 rows are 16-byte aligned but a thread's 8 columns are half past N;
    # 4104 / 1032: aligned for every dtype, no tile divides them; 40 x 24: N below a block's 32
    # columns; 3 x 7: narrower than one 16-byte piece (scalar paths); K = 8: one step
    shapes = [
        (2, 4100, 1028),
        (17, 4104, 1032),
        (64, 40, 24),
        (5, 3, 7),
        (1, 4096, 8),
        (33, 8, 520),
    ]
    _verify(shapes, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_decode_stages_read_c_when_beta_is_not_zero(dtype):
    _verify([(3, 1000, 515), (33, 4104, 1032)], dtype, alpha=0.5, beta=2.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_decode_kernels_are_correct_past_their_shape_class(dtype):
    lifted = [replace(s, m_range=None) for s in DECODE if dtype in s.all_dtypes]
    _verify([(65, 4104, 1032), (200, 1031, 257)], dtype, chosen=lifted)


def test_decode_stages_are_refused_past_m_64_with_a_reason():
    first = next(s for s in DECODE if "fp32" in s.all_dtypes)
    _, _, recs = runner.run_gemm(
        [(65, 256, 256)], [first, stages.reference_for("fp32")], None, timing=QUICK
    )
    assert recs[0]["verified"] is None and recs[0]["tflops"] is None
    assert recs[0]["error"].startswith(f"skipped: {first.name} is a decode stage for M = 1..64")
    assert recs[1]["verified"] is True


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_any_pitch_stage_verifies_in_every_variant_at_every_row_offset(dtype):
    # gemv_shift's rows start at every offset in a 16-byte piece: N % 8 and K % 8 from 1 to 7,
    # the odd set's decode shapes, N of one piece (8) and just short of two (15), K shorter than
    # a step plus its 16-byte margin (17: the scalar rows only)
    space = stages.BY_NAME["gemv_shift"].tune_space
    names = ",".join(
        "gemv_shift@" + ",".join(f"{k}={v}" for k, v in zip(space, values, strict=True))
        for values in product(*space.values())
    )
    shapes = [
        (3, 6150, 4090),
        (17, 11000, 4097),
        (5, 4097, 263),
        (2, 1003, 1029),
        (1, 8, 100),
        (4, 15, 33),
        (9, 1001, 17),
    ]
    _verify(shapes, dtype, chosen=stages.named(names, dtype), alpha=0.5, beta=1.5)
