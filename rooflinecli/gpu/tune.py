"""`roofline tune`: try a stage's tune_space on the running GPU, keep the verified variant with
the best ratio to the reference timed beside it.

Variants that do not compile (the kernel's static_asserts) or that spill are dropped on the
CPU first. Winners are kept per device in the cache (tuned/<device>.json) and applied by
`roofline run gemm --tuned`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from rooflinecli import files, paths
from rooflinecli.errors import RooflineError
from rooflinecli.stages import compiler
from rooflinecli.stages.gemm import Stage


def label(base: Stage, variant: Stage) -> str:
    changed = {k: v for k, v in variant.params.items() if base.params.get(k) != v}
    if not changed:
        return base.name
    return base.name + "@" + ",".join(f"{k}={v}" for k, v in changed.items())


def candidates(stage: Stage, arch: str) -> tuple[list[Stage], list[dict[str, Any]]]:
    """(variants that compile without spills, renamed; rejected ones with the reason)."""
    if not stage.tune_space:
        raise RooflineError(f"stage {stage.name} has no tune_space in the registry")
    base = stage.for_arch(arch)
    keep, dropped = [], []
    variants = list(base.variants())
    # every variant built at once, in parallel processes (compiler.compile_many)
    results = compiler.compile_stages(variants, arch)
    for v, built in zip(variants, results, strict=True):
        name = label(base, v)
        if isinstance(built, RooflineError):
            dropped.append({"stage": name, "reason": built.message})
            continue
        spill = built.resources.spill_bytes if built.resources else 0
        if spill:
            dropped.append({"stage": name, "reason": f"spills {spill} bytes"})
            continue
        keep.append(replace(v, name=name))
    return keep, dropped


def tuned_path(device_name: str) -> Path:
    return paths.cache_file("tuned", device_name)


def load_tuned(device_name: str) -> dict[str, dict[str, int]]:
    p = tuned_path(device_name)
    if not p.is_file():
        return {}
    try:
        data = paths.read_json(p, "tuned parameters", paths.LIMITS["toml"])
        stages = data.get("stages", {})
        return {str(k): {str(n): int(x) for n, x in v.items()} for k, v in stages.items()}
    except RooflineError as exc:
        raise RooflineError(f"{exc.message}: delete the file") from None
    except (AttributeError, KeyError, TypeError, ValueError):
        raise RooflineError(f"tuned parameters {p} are damaged: delete the file") from None


def save_winner(device_name: str, stage: str, params: dict[str, int]) -> Path:
    p = tuned_path(device_name)
    p.parent.mkdir(parents=True, exist_ok=True)
    current = load_tuned(device_name)
    current[stage] = params
    files.write_atomic(p, json.dumps({"device": device_name, "stages": current}, indent=2))
    return p


def best(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The winning variant: the highest ratio to the reference it was interleaved with
    (`pct_of_reference`, both medians over the same rounds), so a variant timed while the
    power-capped clock sat lower is not ranked below one timed at a higher clock; by TFLOP/s
    where a record has no ratio."""
    ok = [r for r in records if r.get("kind") == "stage" and r.get("verified") and r.get("tflops")]
    if not ok:
        return None
    if all(r.get("pct_of_reference") for r in ok):
        return max(ok, key=lambda r: r["pct_of_reference"])
    return max(ok, key=lambda r: r["tflops"])
