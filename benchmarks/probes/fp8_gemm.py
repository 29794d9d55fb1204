"""FP8 GEMM on an sm_90a GPU: build every FP8 stage (kernels/32_wgmma_fp8.cu, the list in
rooflinecli/stages/fp8.py), verify each against the float64 product of its dequantised inputs
(output poisoned first; odd shapes; alpha and beta; e5m2 and fp16 output builds), show that a
kernel with one k-block left out fails the check, and time each stage beside cuBLASLt's FP8
GEMM (torch._scaled_mm, per-tensor scales, bf16 out, beta = 0), interleaved in the same timer
rounds, with the last timed launch of each checked too.

    python benchmarks/probes/fp8_gemm.py [--quick] [--json out.json] [--shapes 4096x4096x4096,...]

Each line is one result: VERIFY / WRONG / TIME / SKIP / ERROR; one failure does not stop the
rest. Exit status 0 when every verification passed and every wrong kernel was caught.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import traceback
from typing import Any

from rooflinecli import plan
from rooflinecli.core import fp8
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import fp8 as gfp8
from rooflinecli.stages.fp8 import FP8_STAGES, SWAP_M

# 129 and 77 rows: the second row tile of a pair (CLUSTER_M=2) partly or wholly past M; 300: an
# odd number of row tiles; 1300 x 4112: more (cluster) tiles than blocks, each walking several
VERIFY = [(1000, 1040, 1024), (2048, 2048, 2048), (129, 272, 160), (77, 16, 4096), (1, 48, 16),
          (511, 4112, 2064), (300, 528, 384), (1300, 4112, 640)]  # fmt: skip
TIMED = [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 14336, 4096), (2048, 4096, 14336),
         (4096, 4096, 14336), (8192, 1024, 8192)]  # fmt: skip
ODD_REFUSED = [(256, 256, 100), (256, 250, 256)]


def log(*parts: Any) -> None:
    print(*parts, flush=True)


def verify(cp, stage, m, n, k, *, alpha=1.0, beta=0.0, fmt="e4m3", out="bf16", extra=None, seed=1):  # type: ignore[no-untyped-def]
    g = gfp8.Problem(cp, m, n, k, alpha, beta, seed=seed, fmt=fmt, out=out)
    launch, meta = gfp8.launcher(cp, stage, g, extra)
    g.poison()
    launch()
    cp.cuda.runtime.deviceSynchronize()
    res = g.check(stage.promote_span)
    return res, meta, g


def where_wrong(cp, g) -> str:  # type: ignore[no-untyped-def]
    """Which elements of a failed output are off (by more than 1% of the largest reference
    element): how many, the first few, and which rows mod 64 / columns mod 256 they fall on."""
    got = g.as_f64(g.C)
    bad = ~cp.isfinite(got) | (cp.abs(got - g.ref) > 0.01 * g.ref_max)
    rows, cols = (x.get() for x in cp.nonzero(bad))
    if not len(rows):
        return "no element off by more than 1% of the largest"
    first = ", ".join(f"({r},{c})" for r, c in list(zip(rows, cols, strict=True))[:4])
    r64 = sorted(set((rows % 64).tolist()))
    c256 = sorted(set((cols % 256).tolist()))
    return (
        f"{len(rows)} of {g.m * g.n} off; first {first}; rows%64 {len(r64)} distinct "
        f"{r64[:8]}; cols%256 {len(c256)} distinct {c256[:8]}; "
        f"got {float(got[rows[0], cols[0]]):.4g} want {float(g.ref[rows[0], cols[0]]):.4g}"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer shapes, shorter timing")
    ap.add_argument("--json", default=None)
    ap.add_argument("--shapes", default=None, help="timed shapes, MxNxK,...")
    ap.add_argument("--stages", default=None)
    ap.add_argument("--smoke", action="store_true", help="two small verifications and stop")
    ap.add_argument(
        "--time-only",
        action="store_true",
        help="only the timing (each output still checked before and after it)",
    )
    args = ap.parse_args()
    import cupy as cp

    from rooflinecli.gpu.timer import Launch, Timer, Timing

    stages = [s for s in FP8_STAGES if not args.stages or s.name in args.stages.split(",")]
    for item in (args.stages or "").split(","):  # stage@P=V;Q=W: a variant, named so
        name, _, spec = item.partition("@")
        base = next((s for s in FP8_STAGES if s.name == name), None)
        if spec and base is not None:
            params = {kv.split("=")[0]: int(kv.split("=")[1]) for kv in spec.split(";")}
            v = base.with_params(**params)
            stages.append(type(v)(item, v.what, v.params))
    doc: dict[str, Any] = {"verify": [], "wrong": [], "time": [], "refused": []}
    failures = 0
    if args.smoke:  # a hang or a fault here costs only this process (one stage)
        bad = 0
        for s in stages:
            # one wgmma (K = 32), one k-block (128), two, then odd shapes: where it first goes
            # wrong says which part of the layout is (the k advance, the ring, the edges)
            for m, n, k in ((128, 256, 32), (128, 256, 128), (128, 256, 256), (129, 272, 160),
                            (1000, 1040, 1024)):  # fmt: skip
                res, meta, g = verify(cp, s, m, n, k)
                bad += not res["ok"]
                log(
                    f"SMOKE  {s.name:18s} {m}x{n}x{k} {'PASS' if res['ok'] else 'FAIL'} "
                    f"rel {res['rel']:.2e} (tol {res['rel_tol']:.2e}) regs {meta['registers']}"
                )
                if not res["ok"]:
                    log("       " + where_wrong(cp, g))
        return 1 if bad else 0
    why_no_torch = gfp8.torch_reason()
    log("reference:", gfp8.REFERENCE if why_no_torch is None else f"none ({why_no_torch})")

    t0 = time.time()
    kinds = (("e4m3", "bf16"), ("e4m3", "fp16"), ("e5m2", "bf16"))
    builds = [(s, f, o, {}) for s in stages for f, o in kinds[: 1 if args.time_only else 3]]
    if not args.time_only:
        builds += [(s, "e4m3", "bf16", {"SKIP_KBLOCK": j}) for s in stages for j in (0, 3)]
    for (s, f, o, extra), r in zip(builds, gfp8.precompile(builds), strict=True):
        if isinstance(r, Exception):
            log(f"ERROR build {s.name} {f} {o} {extra}: {r}")
    log(f"built {len(builds)} variants in {time.time() - t0:.1f}s")

    def dump() -> None:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1, default=str)

    for m, n, k in ODD_REFUSED if not args.time_only else ():
        try:
            plan.gemm_kind("fp8", [(m, n, k)])  # where a run checks FP8 shapes, once
            log(f"REFUSE {m}x{n}x{k}: NOT refused")
            failures += 1
        except RooflineError as exc:
            log(f"REFUSE {m}x{n}x{k}: {exc}")
            doc["refused"].append(str(exc))

    def run_cases(cases: list[tuple[Any, ...]]) -> int:
        bad = 0
        for s, (m, n, k), kw in cases:
            try:
                t0 = time.time()
                res, meta, _ = verify(cp, s, m, n, k, **kw)
                ok = res["ok"]
                bad += not ok
                log(
                    f"VERIFY {s.name:18s} {m}x{n}x{k} {kw or ''} {'PASS' if ok else 'FAIL'} "
                    f"rel {res['rel']:.2e} max {res['max']:.2e} (tol {res['rel_tol']:.2e}) "
                    f"regs {meta['registers']} spill {meta['spill_bytes']} {time.time() - t0:.1f}s"
                )
                doc["verify"].append({"stage": s.name, "shape": [m, n, k], **kw, **res})
            except Exception as exc:  # noqa: BLE001 - one failure must not hide the rest
                bad += 1
                log(f"ERROR verify {s.name} {m}x{n}x{k} {kw}: {type(exc).__name__}: {exc}")
                traceback.print_exc(limit=3)
        return bad

    # correctness first at two shapes per stage; the other shapes and builds after the timing
    if not args.time_only:
        failures += run_cases([(s, shp, {}) for s in stages for shp in VERIFY[:3]])

    dump()
    # the deliberately wrong kernel: one k-block left out must fail the check
    for s in stages if not args.time_only else ():
        for (m, n, k), j in (((1000, 1040, 1024), 3), ((2048, 2048, 4096), 0)):
            try:
                res, _, _ = verify(cp, s, m, n, k, extra={"SKIP_KBLOCK": j})
                caught = not res["ok"]
                failures += not caught
                log(
                    f"WRONG  {s.name:18s} {m}x{n}x{k} SKIP_KBLOCK={j} "
                    f"{'CAUGHT' if caught else 'MISSED'} rel {res['rel']:.2e} "
                    f"(tol {res['rel_tol']:.2e})"
                )
                doc["wrong"].append({"stage": s.name, "shape": [m, n, k], "skip": j, **res})
            except Exception as exc:  # noqa: BLE001
                failures += 1
                log(f"ERROR wrong {s.name} {m}x{n}x{k}: {type(exc).__name__}: {exc}")

    # timing, beside torch._scaled_mm in the same rounds; every launch its own output, each
    # checked after its last timed launch
    shapes = TIMED
    if args.shapes:
        shapes = [tuple(int(v) for v in x.split("x")) for x in args.shapes.split(",")]
    timing = Timing(budget_ms=100.0 if args.quick else 200.0, max_repeats=60, warmup_ms=20.0)
    timer = Timer(timing)
    refs = (("scaled_mm", False), ("scaled_mm_fast", True))
    for m, n, k in shapes:
        try:
            g = gfp8.Problem(cp, m, n, k, seed=2)
        except Exception as exc:  # noqa: BLE001
            log(f"ERROR problem {m}x{n}x{k}: {type(exc).__name__}: {exc}")
            continue
        launches: list[Any] = []
        outs: dict[str, tuple[Any, int | None]] = {}
        for name, fast in refs if why_no_torch is None else ():
            try:
                out = cp.empty((m, n), dtype=cp.int16)
                ref = gfp8.scaled_mm(g, fast_accum=fast, out=out)
                g.poison(out)
                ref()
                cp.cuda.runtime.deviceSynchronize()
                rres = g.check(None, out)
                log(
                    f"VERIFY {name} {m}x{n}x{k} {'PASS' if rres['ok'] else 'FAIL'} "
                    f"rel {rres['rel']:.2e} max {rres['max']:.2e} (tol {rres['rel_tol']:.2e})"
                )
                launches.append(Launch(name, ref))
                outs[name] = (out, None)
            except Exception as exc:  # noqa: BLE001
                log(f"ERROR {name} {m}x{n}x{k}: {type(exc).__name__}: {exc}")
        for s in stages:
            if s.swapped and m > SWAP_M[1]:  # the decode stage times only the batches it is for
                continue
            try:
                out = cp.empty((m, n), dtype=cp.uint16)
                launch, _ = gfp8.launcher(cp, s, g, out=out)
                g.poison(out)
                launch()
                cp.cuda.runtime.deviceSynchronize()
                res = g.check(s.promote_span, out)
                if not res["ok"]:  # timed all the same, and every line says it FAILED
                    failures += 1
                    log(
                        f"TIME   {s.name} {m}x{n}x{k}: FAILS the check (rel {res['rel']:.2e}, "
                        f"tol {res['rel_tol']:.2e}): its time below is of a wrong result"
                    )
                    if res["rel"] > 0.5 or not math.isfinite(res["rel"]):
                        continue  # garbage: not worth timing
                launches.append(Launch(s.name, launch))
                outs[s.name] = (out, s.promote_span)
            except Exception as exc:  # noqa: BLE001
                failures += 1
                log(f"ERROR launch {s.name} {m}x{n}x{k}: {type(exc).__name__}: {exc}")
        if not launches:
            continue
        try:
            for out, _ in outs.values():
                g.poison(out)
            timed = timer.time(launches)
        except Exception as exc:  # noqa: BLE001
            log(f"ERROR timing {m}x{n}x{k}: {type(exc).__name__}: {exc}")
            continue
        names = [x.name for x in launches]
        checks = {nm: g.check(span, out) for nm, (out, span) in outs.items()}
        last = {nm: c["ok"] for nm, c in checks.items()}
        failures += sum(not ok for nm, ok in last.items() if not nm.startswith("scaled_mm"))
        flops = 2.0 * m * n * k
        med = {nm: statistics.median(sm) for nm, sm in zip(names, timed.samples, strict=True)}
        ref_ms = med.get("scaled_mm")
        fast_ms = med.get("scaled_mm_fast")
        row = {
            "shape": [m, n, k],
            "median_ms": med,
            "clock": timed.clock,
            "last_ok": last,
            "last_rel": {nm: (c["rel"], c["max"], c["rel_tol"]) for nm, c in checks.items()},
            "samples": dict(zip(names, timed.samples, strict=True)),
        }
        doc["time"].append(row)
        parts = []
        for nm in names:
            tf = flops / med[nm] / 1e9
            ratio = ""
            if ref_ms and not nm.startswith("scaled_mm"):
                ratio = f" {ref_ms / med[nm]:.3f}x"
                if fast_ms:
                    ratio += f"/{fast_ms / med[nm]:.3f}x"
            c = checks[nm]
            flag = "" if last[nm] else " FAILED-CHECK"
            parts.append(f"{nm} {tf:7.1f}{ratio} (rel {c['rel']:.1e}){flag}")
        log(
            f"TIME   {m}x{n}x{k} TFLOP/s (x: vs scaled_mm / vs fast): "
            + " | ".join(parts)
            + f" | {timed.clock.get('sm_clock_mhz', '?')} MHz"
        )
        del g, outs, launches
        cp.get_default_memory_pool().free_all_blocks()
        dump()

    rest: list[tuple[Any, ...]] = []
    for s in stages if not args.time_only else ():
        rest += [(s, shp, {}) for shp in VERIFY[3:]]
        rest.append((s, (1000, 1040, 1024), {"alpha": 0.5, "beta": 0.75}))
        rest.append((s, (300, 528, 384), {"alpha": 0.5, "beta": 0.75}))
        rest.append((s, (1000, 1040, 1024), {"out": "fp16"}))
        rest.append((s, (1000, 1040, 1024), {"fmt": "e5m2"}))
    failures += run_cases(rest)

    doc["tolerance_rule"] = fp8.tolerance_rule()
    dump()
    log("DONE", "failures:", failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
