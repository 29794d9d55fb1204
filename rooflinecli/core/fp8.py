"""FP8 (OCP 8-bit floating point, E4M3 and E5M2) by bit-level arithmetic: decode every code,
encode with round-to-nearest-even and saturation. CuPy and NumPy have no float8 type, so FP8
data live as uint8 codes; the same functions run on NumPy or CuPy arrays (`xp`).

The formats (OCP "8-bit Floating Point Specification (OFP8)", rev. 1.0):

    E4M3: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities; S.1111.111 is NaN,
          so the largest finite magnitude is S.1111.110 = 1.75 * 2^8 = 448.
    E5M2: 1 sign, 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like: S.11111.00 is
          infinity, S.11111.{01,10,11} NaN; the largest finite magnitude is 1.75 * 2^15 = 57344.

    exponent field e > 0: (-1)^s * (1 + m / 2^M) * 2^(e - bias)   (normal)
    exponent field e = 0: (-1)^s * (m / 2^M) * 2^(1 - bias)       (subnormal)

Encoding rounds to the nearest representable value, ties to the even code (the one whose
mantissa's last bit is 0). Saturation (the mode FP8 GEMM inputs are made in): magnitudes past the
largest finite value become it; E4M3 always saturates (it has no infinity), E5M2 does unless
saturate=False, which rounds overflow to infinity as IEEE does. NaN in gives NaN out
(E4M3 0x7F, E5M2 0x7E, sign kept).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

from rooflinecli.errors import RooflineError

if TYPE_CHECKING:
    import numpy as np


def _xp(xp: Any) -> Any:
    """The array module: the caller's, else NumPy (imported here, so that the registry, which
    reads SCALINGS, loads without it)."""
    if xp is not None:
        return xp
    import numpy

    return numpy


class Format(NamedTuple):
    name: str  # "e4m3" / "e5m2"
    exp_bits: int
    man_bits: int
    bias: int
    has_inf: bool  # E5M2: S.11111.00 is infinity; E4M3 has none
    nan_code: int  # the positive NaN encode produces
    max_code: int  # the largest finite positive code

    @property
    def max_value(self) -> float:
        return float(decode_table(self.name)[self.max_code])


FORMATS: dict[str, Format] = {
    "e4m3": Format("e4m3", 4, 3, 7, False, 0x7F, 0x7E),
    "e5m2": Format("e5m2", 5, 2, 15, True, 0x7E, 0x7B),
}


def fmt(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise RooflineError(f"unknown FP8 format {name!r}: e4m3 or e5m2") from None


def _is_nan_code(f: Format, e: Any, m: Any) -> Any:
    all_ones = e == (1 << f.exp_bits) - 1
    if f.has_inf:
        return all_ones & (m != 0)
    return all_ones & (m == (1 << f.man_bits) - 1)


def decode(codes: Any, name: str = "e4m3", xp: Any = None) -> Any:
    """uint8 codes -> float64 values by the spec's formula (NaN codes -> NaN, E5M2 infinities)."""
    xp = _xp(xp)
    f = fmt(name)
    c = xp.asarray(codes).astype(xp.int64)
    s = (c >> 7) & 1
    e = (c >> f.man_bits) & ((1 << f.exp_bits) - 1)
    m = c & ((1 << f.man_bits) - 1)
    frac = m.astype(xp.float64) / float(1 << f.man_bits)
    normal = xp.ldexp(1.0 + frac, (e - f.bias).astype(xp.int32))
    sub = xp.ldexp(frac, xp.full(c.shape, 1 - f.bias, dtype=xp.int32))
    mag = xp.where(e == 0, sub, normal)
    if f.has_inf:
        mag = xp.where((e == (1 << f.exp_bits) - 1) & (m == 0), xp.inf, mag)
    mag = xp.where(_is_nan_code(f, e, m), xp.nan, mag)
    return xp.where(s == 1, -mag, mag)


_TABLES: dict[str, np.ndarray] = {}


def decode_table(name: str = "e4m3") -> np.ndarray:
    """The float64 value of every code 0..255 (a lookup table: table[codes] decodes)."""
    if name not in _TABLES:
        numpy = _xp(None)
        table = decode(numpy.arange(256, dtype=numpy.uint8), name)
        table.setflags(write=False)
        _TABLES[name] = table
    return _TABLES[name]


def encode(x: Any, name: str = "e4m3", saturate: bool = True, xp: Any = None) -> Any:
    """Real values -> uint8 codes: round to nearest, ties to even, saturating (see the module).

    The magnitude is placed among the finite non-negative codes 0..max_code (whose values rise
    with the code) by a binary search; of the two neighbours the nearer wins, and at the exact
    midpoint the even code (mantissa's last bit 0)."""
    xp = _xp(xp)
    f = fmt(name)
    x = xp.asarray(x, dtype=xp.float64)
    vals = xp.asarray(decode_table(name)[: f.max_code + 1])  # 0 .. max finite, increasing
    mag = xp.abs(x)
    hi = xp.clip(xp.searchsorted(vals, mag, side="left"), 0, f.max_code)  # vals[hi] >= mag
    lo = xp.clip(hi - 1, 0, f.max_code)
    d_lo = mag - vals[lo]
    d_hi = vals[hi] - mag
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    code = xp.where(pick_hi, hi, lo)
    code = xp.where(mag >= vals[f.max_code], f.max_code, code)  # saturate (and exact max)
    if f.has_inf and not saturate:
        # IEEE overflow: at or past max + half an ulp of the top binade rounds to infinity
        top = float(vals[f.max_code])
        ulp = top - float(vals[f.max_code - 1])
        code = xp.where(mag >= top + ulp / 2, f.max_code + 1, code)  # S.11111.00: infinity
    code = xp.where(xp.isnan(x), f.nan_code, code)
    sign = xp.signbit(x) & ~xp.isnan(x)
    return (code + xp.where(sign, 0x80, 0)).astype(xp.uint8)


def random_codes(
    rng: Any, shape: tuple[int, ...], name: str = "e4m3", max_abs: float = 2.0, xp: Any = None
) -> Any:
    """Random FP8 inputs: uniform reals in [-max_abs, max_abs] rounded to the format (so every
    binade below max_abs occurs, subnormals and zeros included), as uint8 codes. `rng` is a
    NumPy or CuPy Generator of the same `xp`."""
    xp = _xp(xp)
    if not 0 < max_abs <= fmt(name).max_value:
        raise RooflineError(f"max_abs {max_abs} is outside (0, {fmt(name).max_value:g}]")
    x = (rng.random(shape, dtype=xp.float32) * 2 - 1) * max_abs
    return encode(x, name, xp=xp)


# The precision of the Tensor Cores' FP8 sums on Hopper: products of two FP8 values are exact
# (4 x 4 significand bits fit any float), but they are added into the accumulator with fewer
# significand bits than FP32's 24; DeepSeek-V3's report (section 3.3.2) puts it at about 14.
TC_FP8_SUM_BITS = 14
WGMMA_K = 32  # the K one 8-bit wgmma adds (m64nNk32): one reduced-precision alignment each


def tolerance(
    k: int, span: int | None = None, rounding: tuple[float, float] = (0.0, 0.0)
) -> tuple[float, float]:
    """(relative Frobenius, largest element / largest reference element) bounds of an FP8 GEMM
    against the float64 product of its dequantised inputs.

    The inputs are exact (the reference decodes the very codes the kernel reads) and so are the
    products; the error is the sums' and the output's:
      * rounding: what storing the exact product in the output type costs (measured on the
        reference, by the same two measures);
      * the Tensor Core sums, each spanning S = `span` terms (all of K when None) with
        u = 2^-TC_FP8_SUM_BITS: a random walk, 8 sqrt(S) u, plus a systematic part of one u
        per wgmma (the alignment truncates, always the same way), S / 32 u;
      * promoted sums added in FP32 (K / S of them): 8 sqrt(K) 2^-24.
    A k-block of 128 left out of K = 1024 costs about sqrt(128 / 1024) = 35% (Frobenius), far
    past the bound (1.8% at K = 1024) that a correct kernel stays inside."""
    if k < 1:
        raise ValueError("K must be positive")
    s = k if span is None else min(span, k)
    u = 2.0**-TC_FP8_SUM_BITS
    acc = 8 * math.sqrt(s) * u + (s / WGMMA_K) * u + 8 * math.sqrt(k) * 2.0**-24
    return rounding[0] + acc, rounding[1] + acc


def tolerance_rule(span: int | None = None) -> str:
    """The bound in words, for a record."""
    where = "S = K" if span is None else f"S = {span} (promoted to FP32 every {span} of K)"
    return (
        "rounding of the float64 reference to the output type + Tensor Core FP8 sums of "
        f"2^-{TC_FP8_SUM_BITS} units over S terms: (8 sqrt(S) + S/{WGMMA_K}) units, {where}, "
        "+ 8 sqrt(K) 2^-24 (same rule for the largest element)"
    )


# How an FP8 GEMM's float32 scales are laid out (C = alpha * (scale_a A) (scale_b B)^T):
#   tensor: one scale each (scale_a[1], scale_b[1]), as most checkpoints keep them;
#   row:    one per row of A and one per row of B, i.e. column of C (scale_a[M], scale_b[N]);
#   block:  DeepGEMM's and DeepSeek-V3's: per row of A and 128-wide group of K
#           (scale_a[M][KB]) and per 128 x 128 block of B (scale_b[ceil(N / 128)][KB]),
#           KB = ceil(K / 128).
SCALINGS = ("tensor", "row", "block")
SCALE_BLOCK = 128


def scale_shapes(scaling: str, m: int, n: int, k: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shapes of scale_a and scale_b under `scaling`."""
    kb, nb = -(-k // SCALE_BLOCK), -(-n // SCALE_BLOCK)
    shapes = {"tensor": ((1,), (1,)), "row": ((m,), (n,)), "block": ((m, kb), (nb, kb))}
    if scaling not in shapes:
        raise RooflineError(f"FP8 scaling {scaling!r}: one of {', '.join(SCALINGS)}")
    return shapes[scaling]


def random_scales(
    rng: Any, scaling: str, m: int, n: int, k: int, xp: Any = None
) -> tuple[Any, Any]:
    """float32 scales of `scaling`'s shapes: a per-tensor pair (0.37, 1.9) times factors drawn
    uniformly from [0.5, 2] (none under `tensor`), so that a scale applied to the wrong row,
    column or block moves the product well past any tolerance."""
    xp = _xp(xp)
    sa_shape, sb_shape = scale_shapes(scaling, m, n, k)
    if scaling == "tensor":
        return xp.full(sa_shape, 0.37, dtype=xp.float32), xp.full(sb_shape, 1.9, dtype=xp.float32)
    sa = (0.37 * (0.5 + 1.5 * rng.random(sa_shape, dtype=xp.float64))).astype(xp.float32)
    sb = (1.9 * (0.5 + 1.5 * rng.random(sb_shape, dtype=xp.float64))).astype(xp.float32)
    return sa, sb


def scaled_product(a: Any, b: Any, scaling: str, sa: Any, sb: Any, xp: Any = None) -> Any:
    """The float64 product of dequantised A (M x K) and B (N x K) under the scales: tensor and
    row scale the product's rows and columns; block sums each 128-wide group of K under the
    scales of its rows of A and its 128-row block of B (exact sums of exact products, in
    float64)."""
    xp = _xp(xp)
    sa64, sb64 = sa.astype(xp.float64), sb.astype(xp.float64)
    if scaling == "tensor":
        return float(sa64[0]) * float(sb64[0]) * (a @ b.T)
    if scaling == "row":
        return sa64[:, None] * (a @ b.T) * sb64[None, :]
    if scaling != "block":
        raise RooflineError(f"FP8 scaling {scaling!r}: one of {', '.join(SCALINGS)}")
    m, k = a.shape
    n = b.shape[0]
    out = xp.zeros((m, n), dtype=xp.float64)
    rows_b = xp.arange(n) // SCALE_BLOCK  # each column of C: its block of B
    for g, k0 in enumerate(range(0, k, SCALE_BLOCK)):
        part = a[:, k0 : k0 + SCALE_BLOCK] @ b[:, k0 : k0 + SCALE_BLOCK].T
        out += sa64[:, g][:, None] * part * sb64[rows_b, g][None, :]
    return out
