"""`--stages best`: which stage (and tile parameters) to run at a shape, from a tune table.

A tune table maps a class of shapes to the stage that was fastest (verified) in it on one GPU.
Shapes are grouped by M (the rows of C, the batch of an LLM's decode step) and by the size of N
and K (docs/dispatch.md):

    M:    1 | 2-4 | 5-16 | 17-32 | 33-64 | 65-128 | 129-256 | 257-512 | 513-1024 | >1024
    N, K: <1k (< 1024) | 1k-8k (1024..8191) | >=8k (>= 8192)

Two tables can hold a device's picks: the user's, written by `roofline tune dispatch` to the
cache (dispatch/<device>.json), and the one shipped in the wheel (dispatch/*.toml, a default
per GPU seeded from the committed documents). The user's wins where it has the class. A pick
that refuses the shape (a Tensor Core stage that needs multiples of 8), or would run it on scalar
loads (a decode stage's 16-byte path at rows off 16 bytes), runs as its any-pitch twin where the
registry names one (stage 31's is stage 33, the same rows fed by ordinary loads; the decode
stages' is stage 59, which shifts aligned pieces), else gives way to the entry of the nearest
class that runs it; the resolution says which class and which table it came from.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rooflinecli import files, paths
from rooflinecli.core import roof_keys, specs, waves
from rooflinecli.core.model import DTYPE_BYTES, OUTPUT_BYTES, gemm_bytes_ideal, gemm_flops
from rooflinecli.errors import RooflineError
from rooflinecli.stages import gemm

# M in powers of two: the skinny stages' tile (wgmma_swapab's BM, the instruction's N: 8 .. 256)
# is the next power of two at or above M, so each bucket is the rows one tile shape serves
# (2-4 and 5-16 both take 16-row WMMA or 8/16-row WGMMA tiles; above 512 the full GEMM stages)
M_BUCKETS: tuple[tuple[int, int | None, str], ...] = (
    (1, 1, "1"),
    (2, 4, "2-4"),
    (5, 16, "5-16"),
    (17, 32, "17-32"),
    (33, 64, "33-64"),
    (65, 128, "65-128"),
    (129, 256, "129-256"),
    (257, 512, "257-512"),
    (513, 1024, "513-1024"),
    (1025, None, ">1024"),
)
SIZE_BUCKETS: tuple[tuple[int, int | None, str], ...] = (
    (1, 1023, "<1k"),
    (1024, 8191, "1k-8k"),
    (8192, None, ">=8k"),
)


def _bucket(value: int, buckets: tuple[tuple[int, int | None, str], ...]) -> int:
    for i, (lo, hi, _name) in enumerate(buckets):
        if value >= lo and (hi is None or value <= hi):
            return i
    raise ValueError(f"{value} is in no bucket")


def class_of(m: int, n: int, k: int) -> str:
    """The class of a shape: 'M=1 N=1k-8k K=1k-8k'."""
    return (
        f"M={M_BUCKETS[_bucket(m, M_BUCKETS)][2]} "
        f"N={SIZE_BUCKETS[_bucket(n, SIZE_BUCKETS)][2]} "
        f"K={SIZE_BUCKETS[_bucket(k, SIZE_BUCKETS)][2]}"
    )


def _class_index(name: str) -> tuple[int, int, int]:
    """'M=1 N=1k-8k K=1k-8k' -> the buckets' positions; a bad name is one error line."""
    match = re.fullmatch(r"M=(\S+) N=(\S+) K=(\S+)", name)
    try:
        if match is None:
            raise ValueError
        m, n, k = match.groups()
        return (
            [b[2] for b in M_BUCKETS].index(m),
            [b[2] for b in SIZE_BUCKETS].index(n),
            [b[2] for b in SIZE_BUCKETS].index(k),
        )
    except ValueError:
        raise RooflineError(
            f"unknown shape class {name!r}: write 'M=<{'|'.join(b[2] for b in M_BUCKETS)}> "
            "N=<<1k|1k-8k|>=8k> K=<...>'"
        ) from None


# Above the decode stages' batches (their m_range ends at DECODE_M_TOP) a class's stages are tile
# GEMMs, whose time goes in waves of tiles over the SMs: a stage measured on few shapes of the
# class may have won there by the luck of its tile count, and lose by its bad luck at the next
# shape (128 x 256 tiles at 512 x 11008: 172 tiles, 1.30 waves on 132 SMs). There an entry keeps
# up to WAVE_CANDIDATES stages with their speed per unit of roof share (launch_share), and the
# shape picks among them (the wave model: _by_waves). At the decode stages' batches the
# weights' bytes, not waves of tiles, set the time, and the class's pick runs as measured.
DECODE_M_TOP = max(s.m_range[1] for s in gemm.STAGES if s.m_range is not None)
WAVE_CANDIDATES = 6


@dataclass(frozen=True)
class Candidate:
    """A stage the wave model weighs at each shape of its entry's class."""

    stage: str
    params: dict[str, int]
    # its % of the reference over the class's measured shapes, each divided by the share of
    # its roofline time its launch kept there (launch_share): the geomean
    efficiency: float
    blocks_per_sm: int = 1  # the blocks an SM held when it was measured


@dataclass(frozen=True)
class Entry:
    dtype: str
    shape_class: str
    stage: str
    params: dict[str, int]
    source: str  # where the entry came from (a document and its measurement)
    candidates: tuple[Candidate, ...] = ()  # the wave model's (classes above DECODE_M_TOP)


@dataclass(frozen=True)
class Table:
    device: str
    where: str  # the file it was read from
    entries: tuple[Entry, ...]
    borrowed: bool = False  # made on another GPU of the same architecture (_kin_tables)
    spec: str | None = None  # the spec of the GPU it was made on (a shipped table's `spec`)


@dataclass(frozen=True)
class Pick:
    stage: gemm.Stage  # renamed stage@P=V when its params differ from the registry's
    shape_class: str  # the class of the shape
    entry_class: str  # the class of the entry used (another when the shape's own refused it)
    table: str  # the file the entry came from
    source: str  # the entry's own note of where it came from
    wave_model: bool = False  # taken by the wave model among the entry's candidates

    def fields(self) -> dict[str, Any]:
        """What a record carries of its pick."""
        return {
            "dispatch_class": self.shape_class,
            "dispatch_entry_class": self.entry_class,
            "dispatch_table": self.table,
            "dispatch_source": self.source,
        }


def _candidates_of(raw: Any, where: str) -> tuple[Candidate, ...]:
    """An entry's `candidates`: each a stage, its params, efficiency and blocks per SM."""
    if not isinstance(raw, list):
        raise TypeError
    out = []
    for c in raw:
        cand = Candidate(
            str(c["stage"]),
            {str(k): int(v) for k, v in dict(c.get("params", {})).items()},
            float(c["efficiency"]),
            int(c.get("blocks_per_sm", 1)),
        )
        if not (math.isfinite(cand.efficiency) and cand.efficiency > 0) or cand.blocks_per_sm < 1:
            raise ValueError
        if cand.stage not in gemm.BY_NAME:
            raise RooflineError(f"tune table {where}: unknown stage {cand.stage!r}")
        try:
            gemm.BY_NAME[cand.stage].with_params(cand.params)
        except (RooflineError, KeyError, ValueError, ZeroDivisionError) as exc:
            why = exc.message if isinstance(exc, RooflineError) else "parameters it cannot take"
            raise RooflineError(f"tune table {where}: candidate {cand.stage}: {why}") from None
        out.append(cand)
    return tuple(out)


def _entries(raw: Any, where: str) -> tuple[Entry, ...]:
    if not isinstance(raw, list):
        raise RooflineError(f"tune table {where}: 'pick' must be a list of entries")
    out: list[Entry] = []
    seen: set[tuple[str, str]] = set()
    for e in raw:
        try:
            entry = Entry(
                str(e["dtype"]),
                str(e["class"]),
                str(e["stage"]),
                {str(k): int(v) for k, v in dict(e.get("params", {})).items()},
                str(e.get("from", "")),
                _candidates_of(e.get("candidates", []), where),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            raise RooflineError(
                f"tune table {where}: each pick needs dtype, class, stage (params, from and "
                "candidates optional; a candidate: stage, efficiency > 0, params and blocks_per_sm "
                "optional)"
            ) from None
        _class_index(entry.shape_class)
        if entry.stage not in gemm.BY_NAME:
            raise RooflineError(f"tune table {where}: unknown stage {entry.stage!r}")
        if (entry.dtype, entry.shape_class) in seen:
            raise RooflineError(
                f"tune table {where}: {entry.dtype} {entry.shape_class} is listed twice"
            )
        seen.add((entry.dtype, entry.shape_class))
        out.append(entry)
    return tuple(out)


def load_toml(path: Path) -> tuple[list[str], Table]:
    """A shipped table: (the device names it is for, the table)."""
    data = paths.read_toml(path, "tune table")
    names = data.get("device_names")
    if not isinstance(names, list) or not names:
        raise RooflineError(f"tune table {path}: device_names must be a non-empty list")
    spec = data.get("spec")
    return [str(x) for x in names], Table(
        str(names[0]), str(path), _entries(data.get("pick"), str(path)),
        spec=str(spec) if spec else None,
    )  # fmt: skip


# Shipped tables to leave out, by file stem, comma-separated: a run that measures how a GPU does
# without the table made on it (benchmarks/h100.sh's `borrowed` step sets h100-sxm5).
SET_ASIDE = "ROOFLINE_SET_ASIDE_TABLES"


def shipped_tables() -> list[tuple[list[str], Table]]:
    try:
        folder = paths.data_dir("dispatch")
    except FileNotFoundError:
        return []
    aside = {x.strip() for x in os.environ.get(SET_ASIDE, "").split(",") if x.strip()}
    return [load_toml(p) for p in sorted(folder.glob("*.toml")) if p.stem not in aside]


def user_table_path(device_name: str) -> Path:
    return paths.cache_file("dispatch", device_name)


def load_user(device_name: str) -> Table | None:
    p = user_table_path(device_name)
    if not p.is_file():
        return None
    try:
        data = paths.read_json(p, "tune table", paths.LIMITS["toml"])
    except RooflineError as exc:
        raise RooflineError(
            f"{exc.message} (the table is damaged: delete it or run `roofline tune dispatch`)"
        ) from None
    if not isinstance(data, dict):
        raise RooflineError(
            f"tune table {p} is damaged (not an object): delete it or run `roofline tune dispatch`"
        )
    return Table(str(data.get("device", device_name)), str(p), _entries(data.get("pick"), str(p)))


def entry_dict(e: Entry) -> dict[str, Any]:
    """An entry as the user's table (JSON) and a `tune dispatch` document hold it."""
    out: dict[str, Any] = {"dtype": e.dtype, "class": e.shape_class, "stage": e.stage,
                           "params": e.params, "from": e.source}  # fmt: skip
    if e.candidates:
        out["candidates"] = [asdict(c) for c in e.candidates]
    return out


def save_user(device_name: str, entries: Iterable[Entry]) -> Path:
    """Write the user's table (merged over what it held: a class measured again is replaced)."""
    p = user_table_path(device_name)
    old = load_user(device_name)
    merged = {(e.dtype, e.shape_class): e for e in (old.entries if old else ())}
    merged.update({(e.dtype, e.shape_class): e for e in entries})
    body = {
        "device": device_name,
        "pick": [entry_dict(e) for _key, e in sorted(merged.items())],
    }  # fmt: skip
    p.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(p, json.dumps(body, indent=2) + "\n")
    return p


def _spec_of_table(table: Table) -> Any:
    """The spec a shipped table was made on, or None where it names none we know."""
    try:
        return specs.choose(table.spec, None).spec if table.spec else None
    except RooflineError:
        return None


def _spec_of_device(device_name: str) -> Any:
    """The spec whose device_names has the GPU, or None where no spec names it."""
    try:
        return specs.choose(None, device_name, default=None).spec
    except RooflineError:
        return None


def _kin_tables(device_name: str, others: list[Table]) -> list[Table]:
    """Shipped tables made on other GPUs of this GPU's architecture (the same compute
    capability, as the specs say), nearest first: the SM count, then the HBM bandwidth. What a
    GPU no table names runs `--stages best` from; each pick says which table it came from."""
    mine = _spec_of_device(device_name)
    if mine is None:
        return []
    kin: list[tuple[tuple[float, float], Table]] = []
    for table in others:
        spec = _spec_of_table(table)
        if spec is None or spec.compute_capability != mine.compute_capability:
            continue
        distance = (
            abs(spec.sm_count - mine.sm_count) / mine.sm_count,
            abs(spec.memory_bandwidth_gbs - mine.memory_bandwidth_gbs) / mine.memory_bandwidth_gbs,
        )
        kin.append((distance, replace(table, borrowed=True)))
    return [t for _d, t in sorted(kin, key=lambda x: x[0])]


def tables_for(device_name: str) -> list[Table]:
    """The tables that speak for this device: the user's first, then the shipped one made on
    it, then the shipped tables of its architecture (`_kin_tables`). A shape takes its class's
    entry from the first table that has one (resolve), so a table made on the GPU wins where it
    has the class, and another GPU's fills the classes it never measured."""
    out: list[Table] = []
    user = load_user(device_name)
    if user is not None:
        out.append(user)
    shipped = shipped_tables()
    own = [t for names, t in shipped if device_name in names]
    others = [t for names, t in shipped if device_name not in names]
    return out + own + _kin_tables(device_name, others)


def label(base: gemm.Stage, params: dict[str, int]) -> str:
    """stage@P=V,... for the params that differ from the registry's (as `roofline tune` names)."""
    changed = {k: v for k, v in params.items() if base.params.get(k) != v}
    return base.name + ("@" + ",".join(f"{k}={v}" for k, v in changed.items()) if changed else "")


def _stage_of(entry: Entry) -> gemm.Stage:
    base = gemm.BY_NAME[entry.stage]
    picked = base.with_params(entry.params)
    # the table's params are final: no per-arch entry may override them later (for_arch)
    return replace(picked, name=label(base, entry.params), arch_params=MappingProxyType({}))


def _any_pitch(entry: Entry, m: int, n: int, k: int, dtype: str) -> gemm.Stage | None:
    """The entry's stage's any-pitch twin (Stage.any_pitch) where the entry's stage refuses the
    shape for its row pitch alone, or runs it on scalar loads (Stage.vector_rows), and the twin
    runs it: the twin with the params it takes over from the entry (each the nearest value at or
    below it that the twin is tuned over)."""
    base = gemm.BY_NAME[entry.stage]
    if not base.any_pitch:
        return None
    if base.refusal(m, n, k) is None:
        if not base.scalar_at(n, k, dtype):
            return None
    elif replace(base, needs_multiple=1).refusal(m, n, k) is not None:
        return None  # refused for more than the pitch: no twin
    twin = gemm.BY_NAME[base.any_pitch]
    picked = base.with_params(entry.params)
    params: dict[str, int] = {}
    for name in base.any_pitch_params:
        value = picked.params[name]
        tried = sorted(v for v in twin.tune_space.get(name, (value,)) if v <= value)
        params[name] = tried[-1] if tried else value
    stage = twin.with_params(params)
    if stage.refuses(m, n, k) is not None:
        return None
    return replace(stage, name=label(twin, params), arch_params=MappingProxyType({}))


def resolve(m: int, n: int, k: int, dtype: str, tables: list[Table], device: str) -> Pick:
    """The stage to run at one shape: the entry of the shape's class in the first table that
    has one; where none does, or its stage refuses the shape, the nearest class's entry that
    runs it (nearest in M buckets first, then N and K). An entry whose stage refuses the shape
    for its row pitch alone, or would run it on scalar loads, runs as its any-pitch twin
    (Stage.any_pitch) where it has one."""
    want = class_of(m, n, k)
    wi = _class_index(want)
    ranked: list[tuple[tuple[int, int, int], Entry, Table]] = []  # (rank, entry, table)
    for ti, table in enumerate(tables):
        for e in table.entries:
            if e.dtype != dtype:
                continue
            ci = _class_index(e.shape_class)
            dist = abs(ci[0] - wi[0]) * 10 + abs(ci[1] - wi[1]) + abs(ci[2] - wi[2])
            ranked.append(((dist, ti, -ci[0]), e, table))  # a tie: the larger M
    if not ranked and tables:  # the device's tables cover other dtypes only: the registry's
        return _registry_pick(m, n, k, dtype, want, "no tune table entry for this dtype yet")
    if not ranked:
        where = ", ".join(t.where for t in tables) or "none"
        raise RooflineError(
            f"--stages best: no {dtype} entries in a tune table for {device} (tables: {where}); "
            "run `roofline tune dispatch` to make one"
        )
    ranked.sort(key=lambda x: x[0])
    spec = _device_spec(device, tables)
    for _rank, entry, table in ranked:
        # the wave model reads a class's candidates at the class's own shapes only
        e = _by_waves(entry, (m, n, k), spec) if entry.shape_class == want else entry
        stage = _stage_of(e)
        where = table.where + (f" (made on {table.device}, the same architecture)"
                               if table.borrowed else "")  # fmt: skip
        twin = _any_pitch(e, m, n, k, dtype)
        if twin is not None:
            note = f"{e.source} (at this pitch: {twin.name}, the same rows at any pitch)"
            return Pick(twin, want, e.shape_class, where, note.strip())
        if stage.refuses(m, n, k) is None:
            return Pick(stage, want, e.shape_class, where, e.source, e is not entry)
    return _registry_pick(m, n, k, dtype, want, "no table entry runs the shape")


def _device_spec(device: str, tables: list[Table]) -> Any:
    """The spec the wave model takes the SMs, peaks and bandwidth from: the device's, else that
    of the first table made on a GPU of a known spec; None where neither says its SM count."""
    found = [_spec_of_device(device)] + [_spec_of_table(t) for t in tables]
    return next((s for s in found if s is not None and s.sm_count), None)


def _by_waves(e: Entry, shape: tuple[int, int, int], spec: Any) -> Entry:
    """The entry as the wave model reads it at this shape: of its candidates that run the shape,
    the one whose efficiency times its launch's roof share here (launch_share, on the spec's
    SMs, peak and bandwidth) is the highest, as an entry of its own whose note says so. The
    entry as it is where it has no candidates, or its own stage does not run the shape as it is
    (refused, or at a pitch its twin takes)."""
    m, n, k = shape
    if not e.candidates or spec is None:
        return e
    own = _stage_of(e)
    if own.refuses(m, n, k) is not None or _any_pitch(e, m, n, k, e.dtype) is not None:
        return e  # the pick's pitch twin, or another class's entry, runs it: as measured
    scored = []
    for c in e.candidates:
        stage = _stage_of(Entry(e.dtype, e.shape_class, c.stage, c.params, ""))
        if e.dtype not in stage.all_dtypes or stage.refuses(m, n, k) is not None:
            continue
        try:
            roofs = (spec.peak(roof_keys.of_instruction(e.dtype, stage.math)),
                     spec.memory_bandwidth_gbs)  # fmt: skip
        except (RooflineError, KeyError):
            continue
        share = launch_share(stage, shape, e.dtype, spec.sm_count, c.blocks_per_sm, roofs)
        if share is not None:
            scored.append((c.efficiency * share, share, c, stage.name))
    if not scored:
        return e
    score, share, c, name = max(scored, key=lambda x: x[0])  # a tie: the more efficient
    pick = label(gemm.BY_NAME[e.stage], e.params)
    note = (
        f"the wave model at {m}x{n}x{k} on {spec.sm_count} SMs: {name}, {c.efficiency:.1f}% of "
        f"the reference per unit of roof share x {share:.2f} of its roofline here = "
        f"{score:.1f}, the best of {len(scored)} candidates (the class's geomean pick, {pick}: "
        f"{e.source})"
    )
    return replace(e, stage=c.stage, params=c.params, source=note)


def _registry_pick(m: int, n: int, k: int, dtype: str, want: str, why: str) -> Pick:
    """The registry's last (most developed) stage of the dtype that runs the shape."""
    for stage in reversed(gemm.select(None, dtype)[:-1]):
        if stage.refuses(m, n, k) is None:
            return Pick(stage, want, "none", f"the registry ({why})", "")
    raise RooflineError(f"--stages best: no {dtype} stage runs {m}x{n}x{k}")


def _runs(
    name: str, per: dict[tuple[int, int, int], tuple], shapes: set[tuple[int, int, int]]
) -> set[tuple[int, int, int]]:
    """The shapes of `shapes` that the stage a record names (stage@P=V, its params read off
    one of its records) runs rather than refuses; every shape when the registry cannot say."""
    base = gemm.BY_NAME[name.split("@")[0]]
    params = dict(next(iter(per.values()))[1].get("params") or {})
    try:
        stage = base.with_params(
            {k: int(v) for k, v in params.items() if k in base.params and base.params.get(k) != v}
        )
    except (RooflineError, KeyError, ValueError, ZeroDivisionError):
        return set(shapes)
    return {sh for sh in shapes if stage.refuses(*sh) is None}


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def winners(found: Iterable[tuple[dict[str, Any], str]], candidates: bool = True) -> list[Entry]:
    """Entries from measured records (record, name of its document), per dtype and class.

    A class's pick is the stage (with its params) whose speed against the reference, measured
    beside it in the same run (`pct_of_reference`), has the highest geometric mean over the
    class's shapes, among the stages verified at every one of them: the quantity a shape set's
    verdict takes. Where no stage was measured at all of them, the stage that was fastest at the
    most shapes (a tie: the least total time). Each entry's `from` lists what it stands on.
    `candidates`: a tile class's entry also keeps the wave model's (_candidates)."""
    best: dict[tuple[str, int, int, int], tuple[dict[str, Any], str]] = {}
    # per (dtype, class): stage -> shape -> (best % of the reference, record, document)
    ratio: dict[tuple[str, str], dict[str, dict[tuple[int, int, int], tuple]]] = {}
    for r, doc in found:
        if r.get("kind") != "stage" or r.get("verified") is not True or not r.get("time_ms"):
            continue
        if r["stage"].split("@")[0] not in gemm.BY_NAME:
            continue
        key = (r["dtype"], r["m"], r["n"], r["k"])
        if key not in best or r["time_ms"] < best[key][0]["time_ms"]:
            best[key] = (r, doc)
        pct = r.get("pct_of_reference")
        if pct:
            shape = (r["m"], r["n"], r["k"])
            per = ratio.setdefault((r["dtype"], class_of(*shape)), {}).setdefault(r["stage"], {})
            if shape not in per or pct > per[shape][0]:
                per[shape] = (pct, r, doc)
    by_class: dict[tuple[str, str], list[tuple[dict[str, Any], str]]] = {}
    for (dt, m, n, k), won in sorted(best.items()):
        by_class.setdefault((dt, class_of(m, n, k)), []).append(won)
    out = []
    for (dt, cls), wins in sorted(by_class.items()):
        shapes = {(r["m"], r["n"], r["k"]) for r, _ in wins}
        # each stage over the class's shapes it runs (a TMA stage refuses N, K no multiple of
        # 8, which another class's pick runs), verified at every one of them
        runs = {s: _runs(s, per, shapes) for s, per in ratio.get((dt, cls), {}).items()}
        full = {
            s: per for s, per in ratio.get((dt, cls), {}).items() if runs[s] and set(per) >= runs[s]
        }
        if full:
            scores = {s: _geomean([per[sh][0] for sh in runs[s]]) for s, per in full.items()}
            total = {s: sum(per[sh][1]["time_ms"] for sh in runs[s]) for s, per in full.items()}
            name = max(full, key=lambda s: (scores[s], -total[s]))  # a tie: least time, then first
            chosen = [(full[name][sh][1], full[name][sh][2]) for sh in sorted(runs[name])]
            why = (
                f"{scores[name]:.1f}% of the reference (geomean) over the {len(runs[name])} "
                "shape(s) of the class"
            )
            if len(runs[name]) < len(shapes):
                why += f" it runs (of {len(shapes)})"
        else:
            count: dict[str, list[tuple[dict[str, Any], str]]] = {}
            for r, doc in wins:
                count.setdefault(r["stage"], []).append((r, doc))
            name = max(
                count, key=lambda s: (len(count[s]), -sum(r["time_ms"] for r, _ in count[s]))
            )
            chosen = count[name]
            why = f"fastest at {len(chosen)} of {len(wins)} shape(s)"
        base = gemm.BY_NAME[name.split("@")[0]]
        params = _entry_params(base, chosen[0][0].get("params") or {})
        notes = []
        for r, doc in chosen:
            ref = r.get("pct_of_reference")
            of_ref = f", {ref:.1f}% of the reference" if ref else ""
            notes.append(f"{doc} {r['m']}x{r['n']}x{r['k']} {r['time_ms'] * 1e3:.1f} us{of_ref}")
        cands = _candidates(full, runs) if candidates and full and _tile_class(cls) else ()
        out.append(Entry(dt, cls, base.name, params, f"{why}: {'; '.join(notes)}", cands))
    return out


def _tile_class(shape_class: str) -> bool:
    """Whether the class's rows lie above the decode stages' (DECODE_M_TOP): tile GEMMs."""
    return M_BUCKETS[_class_index(shape_class)[0]][0] > DECODE_M_TOP


def _entry_params(base: gemm.Stage, params: dict[str, Any]) -> dict[str, int]:
    """The params of a record that differ from the registry's, of those the stage still has and
    the shape does not choose (a tile width taken per shape: Stage.for_shape)."""
    return {
        k: int(v)
        for k, v in params.items()
        if k in base.params and base.params.get(k) != v and k not in base.width_keys
    }


def launch_share(
    stage: gemm.Stage,
    shape: tuple[int, int, int],
    dtype: str,
    sm_count: int,
    per_sm: int,
    roofs: tuple[float, float],
) -> float | None:
    """The share of its roofline time the stage's launch keeps at the shape (core/waves:
    roof_share of busy_at): 1 where its tiles fill every wave, less where the last wave leaves
    slots idle and the compute roof, not HBM's (`roofs`: peak TFLOP/s, GB/s), bounds it."""
    m, n, k = shape
    busy = busy_at(stage, m, n, sm_count, per_sm)
    if busy is None or busy <= 0:
        return None
    nbytes = gemm_bytes_ideal(m, n, k, DTYPE_BYTES[dtype], out_bytes=OUTPUT_BYTES.get(dtype))
    return waves.roof_share(gemm_flops(m, n, k), nbytes, roofs[0], roofs[1], busy)


def busy_at(stage: gemm.Stage, m: int, n: int, sm_count: int, per_sm: int) -> float | None:
    """The share of its blocks' time the stage's launch at an M x N output keeps busy on
    `sm_count` SMs (core/waves.busy_share), from the registry's geometry; None where the
    stage cannot say (it does not launch that output)."""
    try:
        shaped = stage.for_shape(m, n, sm_count)
        grid, _block, _smem = shaped.launch(m, n, sm_count)
    except (RooflineError, KeyError, ValueError, ZeroDivisionError):
        return None
    rows, cols = shaped.tile
    w = waves.waves({"tiles": -(-m // rows) * -(-n // cols), "grid": list(grid),
                     "sm_count": sm_count, "blocks_per_sm": per_sm})  # fmt: skip
    return None if w is None else waves.busy_share(w, shaped.persistent_fill)


def _candidates(
    full: dict[str, dict[tuple[int, int, int], tuple]],
    runs: dict[str, set[tuple[int, int, int]]],
) -> tuple[Candidate, ...]:
    """The wave model's candidates of a class: each stage verified at every shape of the class
    it runs, with its geomean of % of the reference over its launch's roof share there (from
    its records' SM count, blocks per SM, peak and bandwidth), the most efficient
    WAVE_CANDIDATES of them; none where fewer than two stages, or records that do not say what
    they ran on, leave nothing to choose."""
    out = []
    for name, per in full.items():
        base = gemm.BY_NAME[name.split("@")[0]]
        params = _entry_params(base, per[min(runs[name])][1].get("params") or {})
        try:
            stage = base.with_params(params)
        except (RooflineError, KeyError, ValueError, ZeroDivisionError):
            continue
        shares, per_sm = [], 1
        for sh in runs[name]:
            pct, r, _doc = per[sh]
            sms, bps = r.get("sm_count"), r.get("blocks_per_sm") or 1
            peak, bw = r.get("peak_tflops"), r.get("bandwidth_gbs")
            share = None
            said = all(isinstance(x, int | float) and x > 0 for x in (sms, peak, bw))
            if said and isinstance(sms, int):
                share = launch_share(stage, sh, r["dtype"], sms, bps, (float(peak), float(bw)))
            if share is None:
                break
            shares.append(pct / share)
            per_sm = max(per_sm, int(bps))
        else:
            out.append(Candidate(base.name, params, round(_geomean(shares), 1), per_sm))
    out.sort(key=lambda c: -c.efficiency)
    return tuple(out[:WAVE_CANDIDATES]) if len(out) >= 2 else ()


def to_toml(device: str, spec: str, entries: Iterable[Entry], header: str) -> str:
    """A shipped table's text (benchmarks/seed_dispatch.py); `header`: the comment on top."""
    lines = [f"# {x}" if x else "#" for x in header.splitlines()]
    lines += [f"device_names = [{json.dumps(device)}]", f"spec = {json.dumps(spec)}"]
    for e in entries:
        lines += ["", "[[pick]]", f"dtype = {json.dumps(e.dtype)}"]
        lines += [f"class = {json.dumps(e.shape_class)}", f"stage = {json.dumps(e.stage)}"]
        if e.params:
            lines.append(
                "params = { " + ", ".join(f"{k} = {v}" for k, v in e.params.items()) + " }"
            )
        lines.append(f"from = {json.dumps(e.source)}")
        if e.candidates:
            lines.append("candidates = [")
            for c in e.candidates:
                params = ", ".join(f"{k} = {v}" for k, v in c.params.items())
                params = f"{{ {params} }}" if params else "{}"
                lines.append(
                    f"  {{ stage = {json.dumps(c.stage)}, params = {params}, "
                    f"efficiency = {c.efficiency}, blocks_per_sm = {c.blocks_per_sm} }},"
                )
            lines.append("]")
    return "\n".join(lines) + "\n"
