"""Which roof a record sits under: the one table of peak keys, and the lookups every placement
makes through it (core.specs, core.roofs, gpu.profile_app, present.terminal_chart, results).

A peak key names a compute roof of a spec (`tflops.fp16_tensor_dense`). For each precision the
table gives the datasheet peak its work is placed under when nothing else is known, the peak of
its Tensor Core work and of its SIMT (CUDA core) work as ncu counts them, and the roof of the
other roof sets (derived, measured, clock) that stands for its datasheet peak: those sets carry
FP32 and the FP16 Tensor Core rate, and BF16 runs at the FP16 rate on the parts they describe.
Pure data: no GPU, no output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class Keys(NamedTuple):
    """The peak keys of one precision (None: no roof of that kind)."""

    datasheet: str  # a GEMM of this precision, its instruction unknown
    tensor: str | None  # its Tensor Core work (ncu's tensor pipe)
    simt: str | None  # its SIMT work in the precision itself (16-bit SIMT math has no peak)
    roof_set: str | None  # the roof of a derived, measured or clock set for `datasheet`


TABLE: dict[str, Keys] = {
    "fp64": Keys("fp64", "fp64_tensor_dense", "fp64", None),
    "fp32": Keys("fp32", None, "fp32", "fp32"),
    "tf32": Keys("tf32_tensor_dense", "tf32_tensor_dense", None, None),
    "fp16": Keys("fp16_tensor_dense", "fp16_tensor_dense", None, "fp16_tensor_dense"),
    "bf16": Keys("bf16_tensor_dense", "bf16_tensor_dense", None, "fp16_tensor_dense"),
    "fp8": Keys("fp8_tensor_dense", "fp8_tensor_dense", None, None),
    "int8": Keys("int8_tensor_dense", "int8_tensor_dense", None, None),
}

# the peak key of FFMA, the SIMT FP32 instruction: what bounds a 16-bit stage whose math is FFMA
FFMA = "fp32"

# (precision, math) whose inputs the instruction converts first: on Hopper mma.sync takes FP8 only
# by widening it to fp16 (F2FP, then HMMA at the fp16 rate), so the fp16 Tensor Core peak bounds it
CONVERTED = {("fp8", "HMMA"): "fp16"}
_CONVERTED_PEAKS = frozenset((d, TABLE[v].datasheet) for (d, _math), v in CONVERTED.items())

# datasheet peak key -> the roof of the other roof sets that stands for it
_IN_SETS = {k.datasheet: k.roof_set for k in TABLE.values() if k.roof_set}


def datasheet(dtype: str) -> str:
    """The datasheet peak key a GEMM of `dtype` is placed under (KeyError: no such precision)."""
    return TABLE[dtype].datasheet


def peak_key(key: str) -> str:
    """A peak key, or a precision named in its place (`Spec.peak("bf16")`), as a peak key."""
    return TABLE[key].datasheet if key in TABLE else key


def of_instruction(dtype: str, math: str | None) -> str:
    """The datasheet peak that bounds a record: a 16-bit stage whose math is FFMA runs on the
    CUDA cores, so the FP32 peak bounds it, not the Tensor Cores'; an FP8 stage on mma.sync runs
    at the fp16 rate (CONVERTED)."""
    if math == "FFMA":
        return FFMA
    return datasheet(CONVERTED.get((dtype, str(math)), dtype))


def of_pipe(dtype: str, pipe: str | None) -> str | None:
    """The peak of a kernel's work on ncu's pipe (tensor or simt) in `dtype`; None: no roof."""
    keys = TABLE.get(dtype)
    if keys is None:
        return None
    return keys.tensor if pipe == "tensor" else keys.simt if pipe == "simt" else None


def in_sets(key: str) -> str | None:
    """The roof of a derived, measured or clock roof set that places a record whose datasheet
    peak is `key`; None: the sets have none for it."""
    return _IN_SETS.get(key)


def family(dtype: str, key: str) -> str:
    """The peak key a placed record names: its precision's datasheet peak (roof sets swap within
    it), or FP32 where it was placed under the FP32 peak for its FFMA math, or the peak of the
    precision its instruction converts the inputs to (CONVERTED)."""
    if key == FFMA or dtype not in TABLE or (dtype, key) in _CONVERTED_PEAKS:
        return key
    return TABLE[dtype].datasheet


def of_record(rec: Mapping[str, Any]) -> str:
    """The peak key a record names, else its precision's datasheet peak."""
    dtype = str(rec.get("dtype"))
    return str(rec.get("peak_key") or peak_key(dtype))


def label_of_placed(dtype: str | None, key: str | None, roof_key: str | None) -> str | None:
    """The peak key a record placed under `roof_key` names: a 16-bit record labelled FP32 while
    it stood under its precision's Tensor Core roof names that roof."""
    if key == FFMA and roof_key and roof_key != FFMA and dtype != "fp32":
        return roof_key
    return key
