"""Attention's arithmetic: FLOPs, bytes fused and unfused, the shape and its label. Pure Python.

O = softmax(scale * Q K^T + mask) V per (batch, head). Q and O are [B, H, N, D]; K and V are
[B, H_kv, N, D] (grouped-query attention when H_kv < H). FLOPs by the usual convention: two
N x N x D matrix products per head, 2 FLOPs per multiply-add, 4*B*H*N^2*D, halved when causal;
the softmax's exponentials are not counted.

Bytes: fused, Q, K, V and O each move once. Unfused (the naive three kernels), the N x N score
matrix also moves: S written by the first kernel, read and written back as P by the softmax,
read by the third: four passes over B*H*N^2 fp32 values (the full square, masked or not: the
naive kernels store the masked entries too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflinecli.core import model, roofs
from rooflinecli.core.specs import Spec
from rooflinecli.errors import RooflineError

SCORE_DTYPE = "fp32"  # the unfused version keeps S and P in fp32 (kernels/40_attn_naive.cu)
SCORE_PASSES = 4  # S written, S read, P written, P read
HEAD_DIMS = (64, 128)  # what the stages build for (-DHEAD_DIM)


@dataclass(frozen=True)
class Shape:
    batch: int
    heads: int
    kv_heads: int
    seq: int
    head_dim: int
    causal: bool = False

    def __post_init__(self) -> None:
        for name in ("batch", "heads", "kv_heads", "seq", "head_dim"):
            if getattr(self, name) < 1:
                raise RooflineError(f"--{name.replace('_', '-')} must be at least 1")
        if self.heads % self.kv_heads:
            raise RooflineError(
                f"--heads {self.heads} is not a multiple of --kv-heads {self.kv_heads}"
            )

    @property
    def label(self) -> str:
        return label(self.fields())

    def fields(self) -> dict[str, Any]:
        """The record fields that name the shape."""
        return {
            "batch": self.batch,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "seq": self.seq,
            "head_dim": self.head_dim,
            "causal": self.causal,
        }

    @property
    def key(self) -> tuple[int, int, int, int, int, bool]:
        return (self.batch, self.heads, self.kv_heads, self.seq, self.head_dim, self.causal)


SHAPE_FIELDS = roofs.ATTENTION_SHAPE


def label(rec: Any) -> str:
    """'B4 H16 N4096 D128 causal' (KV heads named when fewer than the heads: 'KV4')."""
    kv = rec.get("kv_heads") or rec["heads"]
    parts = [f"B{rec['batch']}", f"H{rec['heads']}"]
    if kv != rec["heads"]:
        parts.append(f"KV{kv}")
    parts += [f"N{rec['seq']}", f"D{rec['head_dim']}"]
    return " ".join(parts + (["causal"] if rec.get("causal") else []))


def flops(s: Shape) -> int:
    """4*B*H*N^2*D (QK^T and PV, 2 FLOPs per multiply-add), halved when causal."""
    f = 4 * s.batch * s.heads * s.seq * s.seq * s.head_dim
    return f // 2 if s.causal else f


def bytes_fused(s: Shape, elem_bytes: int) -> int:
    """Q and O ([B, H, N, D]) and K and V ([B, H_kv, N, D]) each moved once."""
    return elem_bytes * 2 * (s.batch * s.heads + s.batch * s.kv_heads) * s.seq * s.head_dim


def bytes_scores(s: Shape) -> int:
    """The N x N matrices' traffic in the unfused version: four fp32 passes over B*H*N^2."""
    return SCORE_PASSES * model.DTYPE_BYTES[SCORE_DTYPE] * s.batch * s.heads * s.seq * s.seq


def bytes_unfused(s: Shape, elem_bytes: int) -> int:
    return bytes_fused(s, elem_bytes) + bytes_scores(s)


def work(s: Shape, dtype: str) -> dict[str, Any]:
    """The record fields of the work: FLOPs, both byte counts and both intensities."""
    elem = model.DTYPE_BYTES[dtype]
    f, fused, unfused = flops(s), bytes_fused(s, elem), bytes_unfused(s, elem)
    return {
        "op": "attention",
        **s.fields(),
        "flops": f,
        "bytes_fused": fused,
        "ai_fused": model.intensity(f, fused),
        "bytes_unfused": unfused,
        "ai_unfused": model.intensity(f, unfused),
        "scores_dtype": SCORE_DTYPE,
    }


def record(
    name: str,
    kind: str,
    s: Shape,
    spec: Spec,
    dtype: str,
    materializes_scores: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """One record of attention at shape `s`, placed under the datasheet roof of `dtype`.

    bytes_ideal / ai_ideal are what the record's own algorithm must move at best: the unfused
    bytes for a stage that writes S to memory (the naive one), the fused bytes otherwise; that
    intensity places it on the roofline (the naive stage left, the fused ones right). Both
    counts are kept (bytes_fused, bytes_unfused, ai_fused, ai_unfused)."""
    w = work(s, dtype)
    nbytes = w["bytes_unfused"] if materializes_scores else w["bytes_fused"]
    rec: dict[str, Any] = {
        "stage": name,
        "kind": kind,
        "dtype": dtype,
        "m": None,
        "n": None,
        "k": None,
        **w,
        "bytes_ideal": nbytes,
        "ai_ideal": model.intensity(w["flops"], nbytes),
        "materializes_scores": materializes_scores,
        **fields,
    }
    roof = roofs.datasheet_roof_for(spec, dtype, rec.get("math_instruction"))
    roofs.put_under(rec, roof, "datasheet", spec.peak_clock(roof.peak_key))
    return rec


def model_records(s: Shape, spec: Spec, dtype: str) -> list[dict[str, Any]]:
    """`roofline model attention`: the fused and the unfused version of one shape."""
    return [
        record(
            "fused",
            "model",
            s,
            spec,
            dtype,
            what="Q, K, V and O each moved once (FlashAttention)",
        ),
        record(
            "unfused",
            "model",
            s,
            spec,
            dtype,
            materializes_scores=True,
            what=f"plus S and P ({SCORE_DTYPE}, B*H*N^2 each) written and read once each",
        ),
    ]
