"""Compile a stage and every variant of its tune_space into the kernel cache, in parallel, so
that `roofline tune gemm` and `run gemm --tuned` after it start at once (NVRTC one program at a
time is most of a cold tune's wall time).
Usage: python3 benchmarks/precompile_stage.py ARCH STAGE[:all] [STAGE[:all] ...]
(STAGE: its registry parameters only, or a variant as --stages names it, stage@P=V,Q=W;
STAGE:all: every variant of its tune_space too)
Prints one line per stage: variants compiled, and how many spill (tune drops those)."""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rooflinecli.stages import compiler, gemm as stages  # noqa: E402
from rooflinecli.errors import RooflineError  # noqa: E402


def _compile(job: tuple[str, dict[str, int], str, str, str]) -> tuple[str, int | None]:
    name, params, dtype, arch, label = job
    stage = stages.BY_NAME[name].for_arch(arch)
    stage = stage.with_params({k: v for k, v in params.items() if stage.params.get(k) != v})
    stage = replace(stage, name=label)  # the cache file is named after the stage as it runs
    try:
        built = compiler.compile_stage(stage, arch, dtype)
    except RooflineError as exc:
        return f"{name} {params} {dtype}: {exc.message}", None
    return "", built.resources.spill_bytes if built.resources else 0


def main() -> None:
    arch, names = sys.argv[1], [a.split(":")[0] for a in sys.argv[2:]]
    every = {a.split(":")[0] for a in sys.argv[2:] if a.endswith(":all")}
    jobs, owner = [], []  # owner: the argument each job came from
    for name in names:
        base = stages.BY_NAME[name.split("@")[0]]
        stage = base.for_arch(arch)
        if "@" in name:  # a variant: the registry's params overridden as --stages says
            stage = stages.select(name, base.dtype)[0]
        for v in stage.variants() if name in every else [stage]:
            jobs += [(base.name, dict(v.params), d, arch, v.name) for d in stage.all_dtypes]
            owner += [name] * len(stage.all_dtypes)
    with ProcessPoolExecutor() as pool:
        done = list(pool.map(_compile, jobs))
    for name in names:
        mine = [r for o, r in zip(owner, done, strict=True) if o == name]
        spills = sum(1 for err, s in mine if not err and s)
        print(f"precompiled {name}: {len(mine)} builds, {spills} spill")
    for err, _ in done:
        if err:
            print(f"precompile: {err}", file=sys.stderr)


if __name__ == "__main__":
    main()
