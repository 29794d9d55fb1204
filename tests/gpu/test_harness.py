"""On a GPU: the runner's own kernels (kernels/util/check.cu) give the checks the array library's
operations give, on the same buffers, and a wrong output fails them."""

import math

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture
def cp():
    import cupy

    return cupy


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize(
    "shape, alpha, beta", [((127, 333, 65), 1.0, 0.0), ((64, 48, 1000), 0.5, 2.0)]
)
def test_the_kernels_check_as_the_array_operations_do(cp, dtype, shape, alpha, beta):
    from rooflinecli.gpu import arrays, device, runner

    h = runner.harness(cp, device.info()["arch"], dtype)
    fast = runner.Problem(cp, *shape, alpha, beta, seed=5, dtype=dtype, harness=h)
    # the inputs are uniform in [-1, 1) (rounding to 16 bits may reach 1), distinct per stream
    a = fast.as_f64(fast.A)
    assert float(a.min()) >= -1.0 and float(a.max()) <= 1.0
    assert abs(float(a.mean())) < 0.05 and 0.5 < float(a.std()) < 0.65  # 1/sqrt(3)
    assert float(cp.abs(a.ravel()[:64] - fast.as_f64(fast.B).ravel()[:64]).max()) > 0
    # the same buffers, checked by the array library's operations
    slow = runner.Problem(cp, *shape, alpha, beta, seed=5, dtype=dtype)
    slow.A, slow.B, slow.C0 = fast.A, fast.B, fast.C0
    ref = cp.matmul(slow.as_f64(fast.A), slow.as_f64(fast.B)) * alpha
    if fast.C0 is not None:
        ref += beta * slow.as_f64(fast.C0)
    assert float(cp.abs(ref - fast.ref).max()) <= 1e-12 * float(cp.abs(ref).max())
    assert math.isclose(fast.ref_norm, float(cp.linalg.norm(ref)), rel_tol=1e-12)
    assert fast.ref_max == float(cp.abs(ref).max())
    # an output: the reference stored in the dtype, then with one element off
    if beta == 0.0:
        fast.reset_output()
        assert not bool(cp.isfinite(fast.as_f64(fast.C)).any())  # poisoned: every element NaN
        ok, rel, mx = fast.check()
        assert not ok and rel == math.inf
    fast.C[...] = arrays.store(cp, ref.astype(cp.float32), dtype)
    ok, rel, mx = fast.check()
    slow.ref, slow.ref_norm, slow.ref_max = ref, fast.ref_norm, fast.ref_max
    slow.rel_tol, slow.max_tol = fast.rel_tol, fast.max_tol
    ok2, rel2, mx2 = slow.check(fast.C)
    assert ok and ok2
    assert math.isclose(rel, rel2, rel_tol=1e-9, abs_tol=1e-300) and mx == pytest.approx(mx2)
    if dtype != "fp32":
        assert fast.rounding is not None and math.isclose(fast.rounding[0], rel, rel_tol=1e-9)
    fast.C[3, 7] = arrays.store(cp, cp.asarray([[40.0]], dtype=cp.float32), dtype)[0, 0]
    ok, rel, mx = fast.check()
    assert not ok and mx > 1.0


def test_beta_restores_c0_with_a_device_copy(cp):
    from rooflinecli.gpu import device, runner

    h = runner.harness(cp, device.info()["arch"], "fp32")
    g = runner.Problem(cp, 33, 17, 9, 1.0, 3.0, seed=2, harness=h)
    g.C.fill(0)
    g.reset_output()
    assert bool((g.C == g.C0).all())
