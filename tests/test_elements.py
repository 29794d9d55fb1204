"""The element types' one home (core/elements.py) and the array conversions built on it
(gpu/arrays.py), run with NumPy standing in for CuPy (the same array calls)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rooflinecli.core.elements import ELEMENTS, NAN_BITS, element
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import arrays


def test_unit_roundoff_is_half_the_machine_epsilon():
    assert element("fp32").unit_roundoff == np.finfo(np.float32).eps / 2
    assert element("fp16").unit_roundoff == np.finfo(np.float16).eps / 2
    assert element("bf16").unit_roundoff == 2.0**-8  # 8 significand bits, 7 of them stored


def test_facts_of_each_type():
    assert [e.nbytes for e in ELEMENTS.values()] == [4, 2, 2]
    assert {name: e.cuda_type for name, e in ELEMENTS.items()} == {"fp32": 0, "fp16": 2, "bf16": 14}
    assert [e.bits for e in ELEMENTS.values()] == [False, False, True]
    assert element("fp32").exact_store and not element("bf16").exact_store
    with pytest.raises(RooflineError, match="element type 'fp64': one of fp32, fp16, bf16"):
        element("fp64")


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_nan_bits_are_quiet_nans(dtype):
    bits = np.array([NAN_BITS[dtype]], dtype=np.uint16)
    value = arrays.from_bf16_bits(np, bits) if dtype == "bf16" else bits.view(np.float16)
    assert math.isnan(float(value[0]))


def test_bf16_round_trip_rounds_to_nearest_even():
    # 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1; 1 + 3 * 2^-8: up
    x = np.array([1.0, 1 + 2.0**-8, 1 + 3 * 2.0**-8, -2.5, 3.0e38], dtype=np.float32)
    back = arrays.as_f32(np, arrays.store(np, x, "bf16"), "bf16")
    assert back.tolist() == [1.0, 1.0, 1 + 2.0**-6, -2.5, pytest.approx(3.0e38, rel=2.0**-8)]
    err = np.abs(back - x) / np.abs(x)
    assert (err <= element("bf16").unit_roundoff).all()


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_store_poison_and_read_back(dtype):
    el = element(dtype)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    held = arrays.store(np, x, dtype)
    assert held.dtype == np.dtype(el.storage)
    assert np.allclose(arrays.as_f32(np, held, dtype), x, rtol=2 * el.unit_roundoff)
    arrays.poison(held, dtype)
    assert np.isnan(arrays.as_f32(np, held, dtype)).all()
