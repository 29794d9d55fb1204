"""The pages about the stages, generated from the one list of every stage of every kind
(rooflinecli.stages.registry.all_stages):

- kernels/README.md, whole: one line per stage, by family, from each stage's `what`
  (`kernels_readme()`);
- the stage tables of docs/stages.md, each between a begin and an end marker
  (`<!-- KIND:begin (make docs) -->` ... `<!-- KIND:end -->`, KIND one of TABLES): every
  kernels/ file with its kind and stages, then each kind's own table (`with_tables()`).

`python -m rooflinecli.stages.listing [--check] PATH...` writes each page (README.md whole, any
other page's tables), or with --check exits 1 when one differs. Tests keep the committed pages
equal to it. Pure Python.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from rooflinecli.stages import attention, gemm, registry

# Each family's range of stage numbers (kernels/NN_*.cu), in the order the page lists them.
FAMILIES: tuple[tuple[str, int, int], ...] = (
    ("SIMT GEMM: FP32 on CUDA cores", 1, 19),
    ("Tensor Core GEMM: FP16/BF16 in, FP32 accumulate", 20, 39),
    ("Attention: the forward pass, FP16/BF16 (and FP32 on CUDA cores)", 40, 49),
    ("Decode GEMV: M = 1..64 rows of C, bound by reading B", 50, 59),
)

INTRO = """\
# kernels/

One CUDA file per stage, numbered as a worklog: each `NN_technique.cu` changes one thing of a
step before it, and its header says what and why. Every stage of a kind honours its kind's
contract (GEMM: `rooflinecli/stages/gemm.py`; FP8: `fp8.py`; attention: `attention.py`; the
decode token: `token.py`), so each kind's runner has one launch path, and every stage of every
kind says the same things of itself (`rooflinecli/stages/contract.py`). Figures live in the
results, never in a kernel source.

This page is generated from the one list of every stage (`rooflinecli.stages.registry`), as is
[docs/stages.md](../docs/stages.md) (`rooflinecli.stages.listing`)."""

FOLDERS = """\
## Beside the stages

- `include/`: what the stages share. `ptx_sm80.cuh` (cp.async, ldmatrix, mma.sync, conversions)
  and `sm90/`, `sm70/` (one header per PTX operation: mbarriers, clusters, TMA, WGMMA and its
  descriptors, stmatrix, fences, named barriers, flags) wrap each PTX instruction once, named
  after it; `ptx_sm90.cuh` includes all of `sm90/` and `sm70/`. `elem.cuh` is the element type
  of stages built for fp32, fp16 and bf16 from one source. `gemm/` holds the steps several
  stages run unchanged: the SIMT float4 epilogue, the WGMMA ring's producer and consumer
  slices, the grouped tile orders and the TMA-store epilogue.
- `calibrate/`: the kernels `roofline calibrate` times to measure this GPU's roofs (HBM and L2
  reads, FP32 FMA, mma.sync and WGMMA issue rates).
- `util/`: kernels the tool runs around the stages: `transpose.cu` (B for a stage that takes it
  transposed) and `hold.cu` (holds the stream while the timer queues a batch of launches)."""


def _cell(text: str) -> str:
    """A registry string in a Markdown table cell (the registry's own text: no escaping needed
    but for the pipe, which would end the cell)."""
    return text.replace("|", "\\|")


def _rows() -> list[tuple[int, str, str, str]]:
    """(number, file, name, what) of every stage, in file order."""
    rows = [(int(s.source[:2]), s.source, s.name, s.what) for s in registry.all_stages()]
    return sorted(rows, key=lambda r: (r[0], r[2]))


def kernels_readme() -> str:
    """The text of kernels/README.md: every stage of every kind, one table row each."""
    rows = _rows()
    out = [INTRO, ""]
    for title, lo, hi in FAMILIES:
        mine = [r for r in rows if lo <= r[0] <= hi]
        out += [f"## {title} ({lo:02d}-{hi:02d})", ""]
        out += ["| stage | file | name | what the step changes |", "| --- | --- | --- | --- |"]
        out += [f"| {n:02d} | `{f}` | `{name}` | {_cell(what)} |" for n, f, name, what in mine]
        out.append("")
    unplaced = [r for r in rows if not any(lo <= r[0] <= hi for _, lo, hi in FAMILIES)]
    if unplaced:
        raise ValueError(f"stages outside every family's range: {[r[1] for r in unplaced]}")
    out += [FOLDERS, ""]
    return "\n".join(out)


# ------------------------------------------------------------------ the tables of docs/stages.md


def _params(params: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "-"


def kernels_table() -> str:
    """Every kernels/ file with its kind, its stages and what they share: the entry point, the
    lowest compute capability, the math, and what `roofline tune` may vary."""
    rows = [
        "| file | kind | stages | entry | needs | math | tune space |",
        "|---|---|---|---|---|---|---|",
    ]
    for file, stages in registry.sources().items():
        first = stages[0]
        names = ", ".join(f"`{s.name}`" for s in stages)
        tune = "; ".join(f"{k} in {'/'.join(map(str, v))}" for k, v in first.tune_space.items())
        rows.append(
            f"| `kernels/{file}` | {first.kind} | {names} | `{first.entry}` | "
            f"sm_{first.min_cc} | {first.math} | {tune or '-'} |"
        )
    return "\n".join(rows) + "\n"


def gemm_table() -> str:
    """The GEMM registry's table: every stage it chooses among (the FP8 stages too) and the
    library reference."""
    rows = [
        "| stage | file | dtype | ch. | tile params | what it shows |",
        "|---|---|---|---|---|---|",
    ]
    for s in gemm.STAGES:
        file = f"`kernels/{s.file}`" if s.file else "(library)"
        dtypes = "/".join(s.all_dtypes)
        rows.append(
            f"| `{s.name}` | {file} | {dtypes} | {s.chapter} | {_params(s.params)} | {s.what} |"
        )
    return "\n".join(rows) + "\n"


def attention_table() -> str:
    """The attention stages and their references."""
    rows = [
        "| stage | file | dtype | math | needs | what it shows |",
        "|---|---|---|---|---|---|",
    ]
    for s in registry.of_kind("attention"):
        cc = f"sm_{s.min_cc}"
        dtypes = "/".join(s.kernel_dtypes)
        rows.append(
            f"| `{s.name}` | `kernels/{s.source}` | {dtypes} | {s.math} | {cc} | {s.what} |"
        )
    for r in attention.REFERENCES:
        dtypes = "/".join(r.dtypes)
        rows.append(f"| `{r.name}` | (library) | {dtypes} | - | - | {r.what}: a reference |")
    return "\n".join(rows) + "\n"


def token_table() -> str:
    """The decode token's stages: a chain of GEMMs in one launch."""
    rows = [
        "| stage | file | dtype | math | needs | params | what it shows |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in registry.of_kind("token"):
        params = _params(s.param_sets[""])
        dtypes = "/".join(s.kernel_dtypes)
        rows.append(
            f"| `{s.name}` | `kernels/{s.source}` | {dtypes} | {s.math} | sm_{s.min_cc} | "
            f"{params} | {s.what} |"
        )
    return "\n".join(rows) + "\n"


def fp8_table() -> str:
    """The FP8 stages: tile, pipeline, how each accumulates, the scales it applies and the
    cuBLASLt mode it is held to (the one whose accumulation matches)."""
    from rooflinecli.core.fp8 import SCALINGS
    from rooflinecli.stages.fp8 import of_registry

    rows = [
        "| stage | tile | accumulation | scales | held to |",
        "|---|---|---|---|---|",
    ]
    for s in map(of_registry, registry.of_kind("fp8")):
        p = s.params
        bn = "/".join(map(str, sorted(s.widths))) + " by the shape" if s.widths else p["BN"]
        tile = f"{p['BM']} x {bn}" + (" (C^T: weights x batch)" if s.swapped else "")
        scales = ", ".join(x for x in SCALINGS if s.scaling_refusal(x) is None)
        rows.append(
            f"| `{s.name}` | {tile} | {s.accumulation} | {scales} | `{s.paired_reference}` |"
        )
    return "\n".join(rows) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "kernels": kernels_table,
    "stages": gemm_table,
    "attention-stages": attention_table,
    "token-stages": token_table,
    "fp8-stages": fp8_table,
}
TABLE = re.compile(
    r"<!-- (?P<kind>kernels|stages|attention-stages|token-stages|fp8-stages):begin \(make docs\)"
    r" -->\n"
    r".*?<!-- (?P=kind):end -->",
    re.S,
)


def with_tables(text: str) -> str:
    """The text with every stage table it holds made anew."""

    def table(m: re.Match[str]) -> str:
        kind = m["kind"]
        return f"<!-- {kind}:begin (make docs) -->\n{TABLES[kind]()}<!-- {kind}:end -->"

    return TABLE.sub(table, text)


def page(path: Path) -> str:
    """What the page at `path` holds when current: kernels/README.md (any README.md) whole, any
    other page with its stage tables made anew."""
    if path.name == "README.md":
        return kernels_readme()
    return with_tables(path.read_text())


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"]
    if not paths:
        print("usage: python -m rooflinecli.stages.listing [--check] PATH...")
        return 2
    wanted = {path: page(path) for path in paths}
    if check:
        stale = [p for p, text in wanted.items() if not p.is_file() or p.read_text() != text]
        for p in stale:
            print(f"{p} is out of date: python -m rooflinecli.stages.listing {p}")
        return 1 if stale else 0
    for p, text in wanted.items():
        if not p.is_file() or p.read_text() != text:
            p.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
