"""Every stage of every kind, listed in one place: kernels/README.md and docs/stages.md are
generated from `all_stages()` (rooflinecli.stages.listing), and a test holds that every
kernels/NN_*.cu file is the source of stages of exactly one kind.

The kinds keep their own lists, which their runners read by name (gemm.STAGES and BY_NAME,
fp8.FP8_STAGES and FP8_BY_NAME, attention.ATTENTION_STAGES and ATTENTION_BY_NAME,
token.TOKEN_STAGES and TOKEN_BY_NAME); this module joins them behind the one contract
(rooflinecli.stages.contract.KernelStage). The GEMM registry holds the FP8 stages too, as GEMM
stages the runner and `--stages` choose among: here each is listed once, as its own kind.
Pure Python: no CuPy.
"""

from __future__ import annotations

import functools

from rooflinecli.stages import attention, fp8, gemm, token
from rooflinecli.stages.contract import KINDS, KernelStage


@functools.cache
def all_stages() -> tuple[KernelStage, ...]:
    """Every stage with a kernels/ file, of every kind: the GEMM registry's in its order (an FP8
    stage where the GEMM registry lists it), then attention's, then the token's. Library
    references (cuBLAS, PyTorch's attention) are no stage of ours and are not listed."""
    out: list[KernelStage] = []
    for s in gemm.STAGES:
        if s.reference:
            continue
        out.append(fp8.FP8_BY_NAME[s.name] if s.name in fp8.FP8_BY_NAME else s)
    out += attention.ATTENTION_STAGES
    out += token.TOKEN_STAGES
    return tuple(out)


def of_kind(kind: str) -> tuple[KernelStage, ...]:
    """The stages of one kind (KINDS), in all_stages() order."""
    if kind not in KINDS:
        raise ValueError(f"no stage kind {kind!r}: one of {', '.join(KINDS)}")
    return tuple(s for s in all_stages() if s.kind == kind)


def sources() -> dict[str, tuple[KernelStage, ...]]:
    """Each kernels/ file named by a stage, and its stages, in file order."""
    out: dict[str, list[KernelStage]] = {}
    for s in all_stages():
        out.setdefault(s.source, []).append(s)
    return {f: tuple(out[f]) for f in sorted(out)}
