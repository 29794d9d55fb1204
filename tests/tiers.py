"""The CPU suite's two tiers of kernel builds.

`make test` (pytest -m "not matrix") builds each stage once, as it ships: its registry
parameters, on sm_90a, in its primary dtype (bf16 where the stage builds it, the element-type
path its fp16 or fp32 build leaves out, else its own), an attention stage at head dim 128. Every
assertion a stage makes about its code (compiles, no spills, the math instruction in its main
loop, its loads and stores) is checked on that build. `make test-kernels` (pytest -m matrix)
builds the rest of the matrix: every other dtype on sm_90a, every stage on sm_80, the attention
stages at head dim 64 (the same assertions, with the head dim in their counts), and the tune
variants whose SASS a test reads (a cluster pair, a split-K tile, a schedule's control), each
with the same assertions. CI runs
both, one after the other. The dtypes of a stage differ only by the element-type macro
(test_stages checks this), so the first tier still sees every line of every stage file; the
second catches what only another dtype, target or variant trips on.
"""

from __future__ import annotations

from typing import Any

import pytest

MATRIX = pytest.mark.matrix


def primary_dtype(dtypes: tuple[str, ...], own: str) -> str:
    """bf16 where it is built, else the stage's own dtype."""
    return "bf16" if "bf16" in dtypes else own


def tier(primary: bool) -> list[Any]:
    """The marks of a build case: none in the first tier, `matrix` in the second."""
    return [] if primary else [MATRIX]


def first_tier_builds() -> list[tuple[Any, dict[str, Any]]]:
    """What the first tier builds, as (kernel, prebuild keywords), read off the registries the
    way test_stages, test_attention_stages and test_calibrate mark their first-tier cases.

    A guess for the prebuild helper (tests/conftest.py), which starts on it while pytest collects
    the tests; the collected marks then say what is really needed. A build the guess misses is
    only started later, and one it names that no test needs is dropped."""
    from rooflinecli.gpu import calibrate
    from rooflinecli.stages import attention
    from rooflinecli.stages import gemm as stages

    out: list[tuple[Any, dict[str, Any]]] = [
        (s.for_arch("sm_90a"), {"dtype": primary_dtype(s.all_dtypes, s.dtype)})
        for s in stages.STAGES
        if not s.reference
    ]
    out += [
        (s, {"dtype": primary_dtype(s.dtypes, s.dtypes[0]), "head_dim": 128})
        for s in attention.ATTENTION_STAGES
    ]
    out += [(name, {}) for name in calibrate.KERNELS]
    return out
