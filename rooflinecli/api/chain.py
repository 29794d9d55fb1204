"""The chain job (`run llm --chain`): one token's weight GEMMs as a dependent chain, our picks
beside cuBLAS and PyTorch, each from a CUDA graph, whole tokens timed interleaved."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from rooflinecli import results
from rooflinecli.api.requests import ChainProblem, ChainRequest, ChainTiming
from rooflinecli.core.reference import add_ratios
from rooflinecli.errors import RooflineError

CHAIN_WAYS = ("best", "best+pdl", "token", "token+mma", "cublas", "torch")
CHAIN_DEFAULT_WAYS = ("best", "cublas", "torch")
# stages the chain does not run where the tune table picks them, with why, and what runs instead
CHAIN_EXCLUDED = {
    "gemv_streamk": (
        "its output can fail the check after many graph replays in a 64-GEMV chain (rel. "
        "error NaN) though it passes eagerly and in the first replays; its workspace and tile "
        "counters are suspect across back-to-back replays",
        "gemv_splitk",
    ),
}


def run(request: ChainRequest) -> dict[str, Any]:
    """One token's weight GEMMs of the preset as a dependent chain (rooflinecli.core.chain) at
    each batch, or with `shape` (M, N, K) a chain of that one GEMM (M is the batch): our
    `--stages best` picks, cuBLAS and PyTorch's F.linear, each from a CUDA graph, timed as
    whole tokens interleaved, each verified. "best+pdl": the same picks, with stage 56
    (gemv_pdl, programmatic dependent launch) on every M = 1 GEMM. "token": stage 57
    (decode_token), the whole chain in one persistent launch, at batch 1 to 4; "token+mma"
    (decode_token_mma) the same on Tensor Cores, at batch 1 to 16. `layers`: at
    most this many (fewer where the GPU's memory does not hold them). `calibration`: a
    `roofline calibrate` document of this GPU (measured in the same run); its HBM read roof is
    recorded and every way's share of it. `exclude` (default CHAIN_EXCLUDED): stage -> (why,
    the stage run instead). The chain document, with the targets checked (`verdicts`)."""
    from rooflinecli import plan
    from rooflinecli.core import chain
    from rooflinecli.gpu import chain_runner
    from rooflinecli.gpu.loop import setup
    from rooflinecli.stages import compiler

    p, t = request.problem, request.timing
    fulls = _check(p, t)
    batches = [p.shape[0]] if p.shape is not None else p.batches
    cp, dev, spec, arch, _cc, _limits = setup(p.spec_arg)
    shapes = list(dict.fromkeys(s for f in fulls for s in f.shapes))
    picks = plan.picks_for(shapes, p.dtype, dev["name"])
    stages, excluded, pdl_stages = _stages(picks, arch, p.exclude, dev["sm_count"])
    wanted = [*(stages.values() if "best" in p.ways else ()),
              *(pdl_stages.values() if "best+pdl" in p.ways else ())]  # fmt: skip
    if wanted:
        unique = {st.build_key: st for st in wanted}
        compiler.precompile(list(unique.values()), arch, p.dtype)
    read_gbs = None
    if p.calibration is not None:
        read_gbs = (p.calibration.get("measurements") or {}).get("hbm_read_gbs")
    records: list[dict[str, Any]] = []
    for full in fulls:
        records += _one_chain(request, full, (cp, dev, spec, arch), stages, pdl_stages, read_gbs)
    settings = _settings(p, t, picks, stages, excluded, pdl_stages, read_gbs, spec)
    return results.new_document(
        spec.to_dict(), dev, records, command=chain.COMMAND,
        preset=p.preset.to_dict() if p.shape is None else None,
        batches=batches, chain_version=results.CHAIN_VERSION,
        environment=results.environment(), settings=settings,
        # the targets are the token's; a chain of one GEMM is a check of the timing instead
        verdicts=(chain.verdicts(records, chain_runner.OUR_WAYS, p.preset.name)
                  if p.shape is None else []),
    )  # fmt: skip


def _check(p: ChainProblem, t: ChainTiming) -> list[Any]:
    """The request's refusals, one line each, before any GPU work; the chain of each batch."""
    from rooflinecli.core import chain

    if p.dtype not in chain.CHAIN_DTYPES:
        raise RooflineError(f"a chain runs {' or '.join(chain.CHAIN_DTYPES)}, not {p.dtype}")
    bad = [w for w in p.ways if w not in CHAIN_WAYS]
    if bad or not p.ways:
        raise RooflineError(f"unknown chain way {', '.join(bad) or '(none)'}; known: "
                            f"{', '.join(CHAIN_WAYS)}")  # fmt: skip
    if not 1 <= t.repeats <= 10000 or not 0 <= t.warmup <= 1000:
        raise RooflineError("chain: repeats is 1..10000 and warm-up 0..1000")
    if p.shape is not None:
        return [chain.single(*p.shape)]
    return [chain.build(p.preset, b) for b in p.batches]


def _stages(
    picks: dict[Any, Any], arch: str, exclude: dict[str, tuple[str, str]] | None, sms: int
) -> tuple[dict[Any, Any], dict[str, str], dict[Any, Any]]:
    """(the stage per shape, the excluded picks and why, the stage per shape of best+pdl); each
    as it runs its shape (a tile width taken from the shape: Stage.for_shape)."""
    from rooflinecli.stages import gemm

    stages = {s: p.stage.for_arch(arch).for_shape(s[0], s[1], sms) for s, p in picks.items()}
    excluded: dict[str, str] = {}
    for s, st in list(stages.items()):
        why_instead = (CHAIN_EXCLUDED if exclude is None else exclude).get(st.name)
        if why_instead is not None:
            instead = gemm.BY_NAME[why_instead[1]].for_arch(arch)
            if instead.refuses(*s) is None:
                excluded[st.name] = f"{why_instead[0]}; {instead.name} runs instead"
                stages[s] = instead
    pdl_stage = gemm.BY_NAME["gemv_pdl"].for_arch(arch)
    pdl_stages = {s: (pdl_stage if s[0] == 1 and pdl_stage.refuses(*s) is None else st)
                  for s, st in stages.items()}  # fmt: skip
    return stages, excluded, pdl_stages


def _one_chain(
    request: ChainRequest, full: Any, gpu: tuple[Any, Any, Any, str], stages: dict[Any, Any],
    pdl_stages: dict[Any, Any], read_gbs: float | None,
) -> list[dict[str, Any]]:  # fmt: skip
    """One batch's chain (the layers that fit), run, its records placed and compared."""
    import gc

    from rooflinecli.core import chain
    from rooflinecli.gpu import chain_runner
    from rooflinecli.stages import gemm

    p, t = request.problem, request.timing
    cp, dev, spec, arch = gpu
    run = full
    if p.shape is None:
        copies = 1 + ("torch" in p.ways)
        fit = chain_runner.fit_layers(cp, p.preset, full.batch, p.dtype, copies)
        if fit < 1:
            raise RooflineError(
                f"out of device memory: not one layer of {p.preset.name} fits at batch "
                f"{full.batch} {p.dtype}"
            )
        want = min(fit, p.layers or p.preset.layers)
        if want < p.preset.layers:
            run = chain.build(p.preset, full.batch, want)
    # best+pdl only where it differs from best (gemv_pdl takes M = 1)
    differs = any(pdl_stages[x] is not stages[x] for x in full.shapes)
    here = tuple(w for w in p.ways if w != "best+pdl" or differs)
    recs, _clock = chain_runner.run_chain(
        run, full, p.dtype, stages, gemm.reference_for(p.dtype), spec, arch, dev["sm_count"],
        seed=t.seed, warmup=t.warmup, repeats=t.repeats, ways=here, log=request.log,
        pdl_picks=pdl_stages,
    )  # fmt: skip
    for r in recs:
        chain.roof_shares(r, read_gbs, spec.memory_bandwidth_gbs)
    by = {r["stage"]: r for r in recs}
    cub, tor = by.get("cublas"), by.get("torch")
    fair = chain.fairness(cub.get("time_ms") if cub else None,
                          tor.get("time_ms") if tor else None)  # fmt: skip
    if cub is not None:
        cub.update(fair)
    add_ratios(recs)
    gc.collect()  # the chain's buffers, before the next batch's
    cp.get_default_memory_pool().free_all_blocks()
    _free_torch_cache()
    return recs


def run_chain(
    preset: Any,
    batches: list[int],
    dtype: str,
    spec_arg: str | None = None,
    *,
    seed: int = 0,
    warmup: int = 5,
    repeats: int = 30,
    shape: tuple[int, int, int] | None = None,
    ways: Sequence[str] = CHAIN_DEFAULT_WAYS,
    layers: int | None = None,
    log: Callable[[str], None] | None = None,
    calibration: dict[str, Any] | None = None,
    exclude: dict[str, tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """run(ChainRequest(...)) with its values spelled out."""
    problem = ChainProblem(preset, batches, dtype, spec_arg, shape, tuple(ways), layers,
                           calibration, exclude)  # fmt: skip
    return run(ChainRequest(problem, ChainTiming(seed, warmup, repeats), log))


def _settings(
    p: ChainProblem, t: ChainTiming, picks: dict[Any, Any], stages: dict[Any, Any],
    excluded: dict[str, str], pdl_stages: dict[Any, Any], read_gbs: float | None, spec: Any,
) -> dict[str, Any]:  # fmt: skip
    """What the chain document says of how it was run, timed, checked and traced."""
    from rooflinecli.core import chain
    from rooflinecli.gpu import chain_runner
    from rooflinecli.gpu.timer import method_text

    seed, warmup, repeats, ways, calibration = t.seed, t.warmup, t.repeats, p.ways, p.calibration
    return {
        "seed": seed,
        "warmup": warmup,
        "repeats": repeats,
        "ways": list(ways),
        "stages": "best: one stage per GEMM shape from the tune table",
        "timing": "whole tokens replayed from CUDA graphs, timed by the one timer "
        "(rooflinecli.gpu.timer.Timer) on the chain's stream: one replay per way to size the "
        "run, then `warmup` untimed replays per way, then `repeats` rounds, each replaying every "
        "way once between its own CUDA events, the ways interleaved (forward on even rounds, "
        "backward on odd); every sample kept (samples_ms); the median reported; the SM clock "
        "read through NVML meanwhile; no L2 flush (the weights of a token exceed the L2)",
        "timing_method": method_text(chain_runner.replay_timing(warmup, repeats)),
        "check": "float32 reference of the same chain (CuPy matmuls over the same weights), "
        "outputs poisoned first; the first layer's and the last output, of an eager run, a "
        "replayed graph and the last timed replay",
        "tolerance_rule": chain.TOLERANCE_RULE,
        "tracing": "one replayed token per way under CUPTI's activity records (the second of "
        "two: the first pays the tracer's set-up); the traced token is its kernels' span on "
        "the GPU's clock, per GEMM its kernel time and the gap before it; tracing_overhead is "
        "the traced token against the untraced median, tracing_event_overhead the traced "
        "replay's CUDA-event time (Timer.once; it also holds the tracer's delay before the "
        "first kernel starts, tracing_start_delay_us) against it",
        "picks": {"x".join(map(str, s)): p.stage.name for s, p in picks.items()},
        "chain_stages": {"x".join(map(str, s)): st.name for s, st in stages.items()},
        "excluded": excluded,
        "pdl_picks": {"x".join(map(str, s)): st.name for s, st in pdl_stages.items()},
        "ours": "best: the tune table's picks, launched plainly; best+pdl: the same with "
        "gemv_pdl (programmatic dependent launch) on every M = 1 GEMM; token: decode_token, "
        "every GEMM of the chain in one persistent launch (batch 1 to 4); token+mma: "
        "decode_token_mma, the same launch on Tensor Cores (batch 1 to 16)",
        "read_roof": (
            {
                "hbm_read_gbs": read_gbs,
                "source": "roofline calibrate, the same run",
                "device": ((calibration or {}).get("device") or {}).get("name"),
            }
            if read_gbs
            else {"hbm_read_gbs": None, "why": "no calibration given (--calibration)"}
        ),
        "datasheet_gbs": spec.memory_bandwidth_gbs,
    }


def _free_torch_cache() -> None:
    if "torch" in sys.modules:
        try:
            sys.modules["torch"].cuda.empty_cache()
        except Exception:  # a PyTorch without its GPU: nothing cached
            pass
