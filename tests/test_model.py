"""The analytic model against values computed by hand (the seed's figures)."""

import pytest

from rooflinecli.core import model, roofs


def test_flops_4096():
    assert model.gemm_flops(4096, 4096, 4096) == 2 * 4096**3 == 137_438_953_472


def test_ideal_bytes_and_intensity_at_4096():
    # 4 bytes x (MK + KN + MN) = 4 x 3 x 4096^2 = 201,326,592 bytes
    nbytes = model.gemm_bytes_ideal(4096, 4096, 4096, 4)
    assert nbytes == 201_326_592
    # 2*4096^3 / (12*4096^2) = 2*4096/12 = 682.666...
    assert model.intensity(model.gemm_flops(4096, 4096, 4096), nbytes) == pytest.approx(
        682.6666667, abs=1e-6
    )
    assert round(model.intensity(model.gemm_flops(4096, 4096, 4096), nbytes), 2) == 682.67


def test_beta_reads_c():
    # beta != 0 adds MN more elements: 4 x (6 + 12 + 8 + 8) for 2x4x3
    assert model.gemm_bytes_ideal(2, 4, 3, 4, beta_nonzero=True) == 4 * (6 + 12 + 8 + 8)
    assert model.gemm_bytes_ideal(2, 4, 3, 4) == 4 * (6 + 12 + 8)


def test_odd_shape():
    # 127x333x65: 2*127*333*65 = 5,497,830 FLOPs; 4*(127*65 + 65*333 + 127*333) bytes
    assert model.gemm_flops(127, 333, 65) == 5_497_830
    assert model.gemm_bytes_ideal(127, 333, 65, 4) == 4 * (8255 + 21645 + 42291)


def test_by_instruction_intensity():
    assert model.thread_tile_intensity(1, 1, 4) == 0.25  # naive: 2 FLOPs per 8 bytes
    assert model.thread_tile_intensity(4, 4, 4) == 1.0  # 32 FLOPs per 32 bytes
    assert model.thread_tile_intensity(8, 8, 4) == 2.0  # 128 FLOPs per 64 bytes


def test_ridge_points_h100_sxm5():
    assert roofs.ridge_point(67, 3350) == pytest.approx(20.0)
    assert roofs.ridge_point(989.4, 3350) == pytest.approx(295.34, abs=0.01)
    assert round(roofs.ridge_point(989.4, 3350)) == 295


def test_attainable_and_binding_roof():
    # left of the ridge: 0.25 FLOP/B x 3350 GB/s = 0.8375 TFLOP/s, memory-bound
    assert roofs.attainable(0.25, 67, 3350) == pytest.approx(0.8375)
    assert roofs.binding_roof(0.25, 67, 3350) == "memory"
    # right of it: the compute roof
    assert roofs.attainable(682.67, 67, 3350) == 67
    assert roofs.binding_roof(682.67, 67, 3350) == "compute"
    # at the ridge exactly: both roofs meet, compute binds
    assert roofs.binding_roof(20.0, 67, 3350) == "compute"


def test_tflops():
    # 2*4096^3 FLOPs in 25.8 ms = 5.327 TFLOP/s (the naive kernel on the H200)
    assert model.tflops(model.gemm_flops(4096, 4096, 4096), 25.8) == pytest.approx(5.3271, abs=1e-4)
    with pytest.raises(ValueError):
        model.tflops(1, 0)


def test_model_has_no_cupy_import():
    import ast
    import inspect

    for mod in (model,):
        tree = ast.parse(inspect.getsource(mod))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not any("cupy" in x for x in names)
