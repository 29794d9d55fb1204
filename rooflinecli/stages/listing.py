"""kernels/README.md: one line per stage, by family, from the registries' `what` fields.

`kernels_readme()` returns the page; `python -m rooflinecli.stages.listing [--check] PATH` writes
it (or exits 1 when PATH differs). A test keeps the committed page equal to it. Pure Python.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rooflinecli.stages import attention, gemm, token

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
step before it, and its header says what and why. Every stage honours one contract (the GEMM
stages: `rooflinecli/stages/gemm.py`; attention: `rooflinecli/stages/attention.py`), so the
runner has one launch path. Figures live in the results, never in a kernel source.

This page is generated from the registries (`rooflinecli.stages.listing.kernels_readme`)."""

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
    """(number, file, name, what) of every stage with a kernels/ file, in file order."""
    rows = [
        (int(s.file[:2]), s.file, s.name, s.what)
        for s in gemm.STAGES
        if s.file is not None and not s.reference
    ]
    rows += [(int(s.file[:2]), s.file, s.name, s.what) for s in attention.ATTENTION_STAGES]
    rows += [(int(s.file[:2]), s.file, s.name, s.what) for s in token.TOKEN_STAGES]
    return sorted(rows, key=lambda r: (r[0], r[2]))


def kernels_readme() -> str:
    """The text of kernels/README.md: every stage of the registries, one table row each."""
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


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    if len(paths) != 1:
        print("usage: python -m rooflinecli.stages.listing [--check] kernels/README.md")
        return 2
    path, text = Path(paths[0]), kernels_readme()
    if check:
        same = path.is_file() and path.read_text() == text
        if not same:
            print(f"{path} is out of date: python -m rooflinecli.stages.listing {path}")
        return 0 if same else 1
    path.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
