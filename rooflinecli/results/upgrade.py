"""What older documents did not say about their records, filled in on load."""

from __future__ import annotations

from typing import Any

from rooflinecli.core import reference, roof_keys

# What records that do not describe themselves leave out, by stage name as they give it: the math
# instruction (which compute roof places them) and why a stage can be slower
# than the one before it. Frozen data, not today's registry: a later rename changes nothing here.
_LEGACY_MATH = {
    **dict.fromkeys(
        ("naive_xcol", "naive_xrow", "thread_tile_4x4", "thread_tile_8x8", "smem_tile",
         "blocktile_1d", "blocktile_2d", "vectorized", "warptile", "double_buffer", "multistage"),
        "FFMA",
    ),
    **dict.fromkeys(("mma_sync", "mma_ldmatrix", "mma_multistage", "mma_tma_ws"), "HMMA"),
    **dict.fromkeys(("wgmma_tma", "wgmma_ws", "wgmma_persistent"), "HGMMA"),
    **dict.fromkeys(("cublas", "cublas_hgemm"), "library"),
}  # fmt: skip
_LEGACY_SLOWER = {
    "naive_xrow": "the seed's point: a warp's 32 A addresses are K*4 bytes apart, so each load "
    "touches 32 sectors instead of 2; same instructions, ~8x the memory traffic",
    "thread_tile_8x8": "64 accumulators + 16 operands need ~140 registers: one block of 256 "
    "threads per SM (12.5% occupancy), too few warps to hide global loads (exercise 3)",
    "smem_tile": "one result per thread: every FMA still loads 2 floats, now from shared memory "
    "(0.25 FLOP/B there) plus barriers; the register tile of the stage before reuses each load "
    "4x. Chapter 11 restarts the ladder from here with register tiles on top",
    "wgmma_ws": "on small shapes its 128x256 tiles are too few to fill 132 SMs (1000^3: 32 "
    "tiles); a persistent grid or smaller tiles would fix it",
}


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """Fill in what older records did not say about themselves (in place): the math
    instruction of a known stage (a tune variant `stage@P=V` is its stage's) and its why-note,
    and the reference a ratio was taken against (core.reference.name_missing). Records of
    unknown stages are left as they are."""
    records = doc.get("records")
    if isinstance(records, list):
        reference.name_missing([r for r in records if isinstance(r, dict)])
    for rec in doc.get("records", []):
        if not isinstance(rec, dict) or rec.get("kind") not in ("stage", "reference"):
            continue
        base = str(rec.get("stage", "")).split("@")[0]
        if "math_instruction" not in rec and base in _LEGACY_MATH:
            rec["math_instruction"] = _LEGACY_MATH[base]
        if "slower_because" not in rec and base in _LEGACY_SLOWER:
            rec["slower_because"] = _LEGACY_SLOWER[base]
        # a record's peak label follows the roof it was placed under (its figures are kept)
        if rec.get("peak_key") is not None:
            rec["peak_key"] = roof_keys.label_of_placed(
                rec.get("dtype"), rec.get("peak_key"), rec.get("roof_key")
            )
    return doc
