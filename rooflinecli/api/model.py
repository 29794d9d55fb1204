"""The model job: the analytic roofline of a GEMM, an LLM's decode step and attention, no GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rooflinecli import results
from rooflinecli.core import roofs
from rooflinecli.core.specs import Spec


def model_gemm(
    m: int,
    n: int,
    k: int,
    dtype: str,
    spec: Spec,
    alpha: float = 1.0,
    beta: float = 0.0,
    stages: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """The analytic model document of every stage built for the shape (or `stages`) of a dtype
    at one shape: the default ladder leaves out decode stages outside their rows (built_for)."""
    from rooflinecli.stages.gemm import built_for, select

    chosen = list(stages) if stages is not None else built_for(select(None, dtype), [m])
    records = [roofs.model_record(s, m, n, k, spec, alpha, beta, dtype) for s in chosen]
    return results.new_document(spec.to_dict(), None, records, command="model gemm")


def model_llm(
    preset: Any, contexts: list[int], dtype: str, spec: Spec | None = None,
    batches: list[int] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """`model llm`'s document (rooflinecli.core.llm): without `batches`, where the FLOPs of one
    decoded token go at each context; with them, each weight GEMM on `spec`'s roofline at each
    batch, and the time share the roofs allow each operation (`shares`)."""
    from rooflinecli.core import llm

    if batches is None:
        return results.new_document(
            {}, None, _flop_records(preset, contexts, dtype), command="model llm",
            preset=preset.to_dict(), contexts=contexts,
            flop_counts={
                "rmsnorm_per_element": llm.RMSNORM_FLOPS_PER_ELEMENT,
                "silu_mul_per_element": llm.SILU_MUL_FLOPS_PER_ELEMENT,
                "softmax_per_score": llm.SOFTMAX_FLOPS_PER_SCORE,
                "rope_per_element": llm.ROPE_FLOPS_PER_ELEMENT,
                "residual_per_element": llm.RESIDUAL_FLOPS_PER_ELEMENT,
            },
        )  # fmt: skip
    if spec is None:
        raise ValueError("model_llm: the GEMMs at a batch stand under a spec's roofs: give spec")
    gemms = llm.weight_gemms(preset)
    records = [llm.gemm_record(preset, g, b, spec, dtype) for b in batches for g in gemms]
    shares = [
        {"context": c, "batch": b, **r}
        for c in contexts
        for b in batches
        for r in llm.time_split(preset, c, b, spec, dtype)
    ]
    return results.new_document(
        spec.to_dict(), None, records, command="model llm", preset=preset.to_dict(),
        contexts=contexts, batches=batches, shares=shares,
    )  # fmt: skip


def _flop_records(p: Any, contexts: list[int], dtype: str) -> list[dict[str, Any]]:
    """One record per operation and context: its FLOPs, count and share of one token's."""
    from rooflinecli.core import llm

    out = []
    for c in contexts:
        parts = llm.flop_split(p, c)
        total = llm.group_totals(parts)["total"]
        for part in parts:
            m, n, k = part.shape if part.shape else (None, None, None)
            out.append(
                {
                    "stage": part.name,
                    "kind": "llm",
                    "dtype": dtype,
                    "m": m,
                    "n": n,
                    "k": k,
                    "flops": part.flops_each,
                    "workload": f"{p.name}:{part.name}:ctx{c}",
                    "preset": p.name,
                    "group": part.group,
                    "what": part.what,
                    "context": c,
                    "count": part.count,
                    "flops_per_token": part.flops,
                    "share_pct": 100.0 * part.flops / total,
                }
            )
    return out


def model_attention(shape: Any, dtype: str, spec: Spec) -> dict[str, Any]:
    """The analytic model document of attention at one shape (rooflinecli.core.attention.Shape):
    the fused version (Q, K, V, O once) and the unfused one (S and P through memory in fp32)."""
    from rooflinecli.core import attention

    records = attention.model_records(shape, spec, dtype)
    return results.new_document(spec.to_dict(), None, records, command="model attention")
