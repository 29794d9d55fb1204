"""The element types the GPU side stores and checks, one record each: how wide an element is,
its unit roundoff, the array type that holds it (CuPy has no bfloat16: bf16 lives as its 16-bit
patterns), the NaN an output is poisoned with before a launch, the cudaDataType and PyTorch type
the references take, and the -D that builds a kernel for it. Every module that branches on a
16-bit type asks here rather than spelling the facts again. Pure data: no CuPy, no PyTorch."""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

from rooflinecli.core import model
from rooflinecli.errors import RooflineError


class Element(NamedTuple):
    name: str
    unit_roundoff: float  # round to nearest: a stored value is within this, relative
    storage: str  # the NumPy/CuPy type of the arrays that hold it
    bits: bool  # True: `storage` holds bit patterns, not values (bf16)
    poison: int | float  # a NaN, as `storage` holds it
    cuda_type: int  # cudaDataType_t (library.h): CUDA_R_32F 0, CUDA_R_16F 2, CUDA_R_16BF 14
    torch: str  # the torch dtype's attribute name
    define: str  # the -D that selects it in a source built for several types ("": default)

    @property
    def nbytes(self) -> int:
        return model.DTYPE_BYTES[self.name]

    @property
    def exact_store(self) -> bool:
        """Whether storing the float32 result loses nothing (fp32 output): no rounding check."""
        return self.name == "fp32"


_NAN = float("nan")
_BF16_NAN = 0x7FC0  # a quiet bfloat16 NaN: sign 0, exponent all ones, top fraction bit
_FP16_NAN = 0x7E00  # the same for IEEE half

ELEMENTS: MappingProxyType[str, Element] = MappingProxyType(
    {
        "fp32": Element("fp32", 2.0**-24, "float32", False, _NAN, 0, "float32", "ELEM_FP32"),
        "fp16": Element("fp16", 2.0**-11, "float16", False, _NAN, 2, "float16", ""),
        "bf16": Element("bf16", 2.0**-8, "uint16", True, _BF16_NAN, 14, "bfloat16", "ELEM_BF16"),
    }
)

# the NaN bit pattern of each 16-bit output type, for an output viewed as uint16
NAN_BITS: MappingProxyType[str, int] = MappingProxyType({"bf16": _BF16_NAN, "fp16": _FP16_NAN})


def element(dtype: str) -> Element:
    """The element type named `dtype` (fp32, fp16, bf16), or one line saying which exist."""
    try:
        return ELEMENTS[dtype]
    except KeyError:
        raise RooflineError(f"element type {dtype!r}: one of {', '.join(ELEMENTS)}") from None
