"""The runner's check on the CPU: rooflinecli.gpu.runner.Problem runs on NumPy as well as CuPy,
so the BF16/FP16 bound is tested here on real numbers: a result computed right (FP32
accumulation, rounded to the output type) passes, one that skips a single k index fails."""

import numpy as np
import pytest

from rooflinecli.gpu import runner


def _kernel_output(g: runner.Problem, skip_k: int | None = None):  # type: ignore[no-untyped-def]
    """What a kernel writes: A@B accumulated in FP32 (optionally without one k), stored in the
    output type."""
    a = g.as_f64(g.A).astype(np.float32)
    b = g.as_f64(g.B).astype(np.float32)
    if skip_k is not None:
        a = a.copy()
        a[:, skip_k] = 0.0
    acc = (a @ b) * np.float32(g.alpha)
    if g.C0 is not None:
        acc += np.float32(g.beta) * g.as_f64(g.C0).astype(np.float32)
    return g._store(acc)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_one_skipped_k_fails_at_16384_and_the_right_result_passes(dtype):
    g = runner.Problem(np, 48, 40, 16384, 1.0, 0.0, seed=3, dtype=dtype)
    g.C = _kernel_output(g)
    ok, rel, _ = g.check()
    assert ok, (rel, g.rel_tol)
    g.C = _kernel_output(g, skip_k=8191)
    bad, rel_bad, _ = g.check()
    assert not bad
    # the skip costs about 1/sqrt(K); the bound is about twice the output's own rounding
    assert rel_bad == pytest.approx(1 / 128, rel=0.35)
    assert rel_bad > 1.5 * g.rel_tol


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("shape", [(1, 7, 3), (33, 17, 1000), (5, 300, 4096)])
def test_right_results_pass_at_odd_shapes_with_beta(dtype, shape):
    g = runner.Problem(np, *shape, alpha=0.5, beta=0.75, seed=1, dtype=dtype)
    g.C = _kernel_output(g)
    ok, rel, mx = g.check()
    assert ok, (rel, mx, g.rel_tol, g.max_tol)


def test_the_bound_is_twice_the_rounding_plus_accumulation():
    rel, mx = runner.tolerance("bf16", 16384, rounding=(0.0016, 0.0039))
    acc = 8 * 128 * 2.0**-24
    assert rel == pytest.approx(2 * 0.0016 + acc)
    assert mx == pytest.approx(2 * 0.0039 + 4 * acc)
    assert runner.tolerance("fp32", 4096)[0] == pytest.approx(1e-4 + 8 * 64 * 2.0**-24)


def test_a_nan_left_in_the_output_fails():
    g = runner.Problem(np, 8, 8, 8, 1.0, 0.0, seed=0, dtype="fp32")
    g.C = _kernel_output(g)
    g.C[3, 3] = np.nan
    assert g.check()[0] is False


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_the_runners_own_kernels_build_for_every_dtype(dtype):
    """kernels/util/check.cu: what the runner does on the GPU in place of the array library's
    operations (tests/gpu/test_harness.py holds the two equal there)."""
    from rooflinecli.stages import compiler

    try:
        built = compiler.build(runner.check_job("sm_90a", dtype))
    except Exception as exc:  # noqa: BLE001 - no NVRTC here
        pytest.skip(str(exc))
    assert built.resources is not None and built.resources.spill_bytes == 0
    job = runner.check_job("sm_90a", dtype)
    assert ("-DELEM_FP32=1" in job.opts) == (dtype == "fp32")
    assert ("-DELEM_BF16=1" in job.opts) == (dtype == "bf16")
