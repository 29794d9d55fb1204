"""Generate docs/cli.md from the commands' --help, and the generated parts of README.md and of the
pages under docs/, so none drifts from the code or the documents (checked in tests).

python -m rooflinecli.docgen docs/cli.md          # write
python -m rooflinecli.docgen --check docs/cli.md  # exit 1 if stale

The pages are README.md and every docs/*.md but the CLI reference (`pages`). Their generated
parts, each between a begin and an end marker, may stand on any page:
- the stage tables, from the one list of every stage (`<!-- KIND:begin (make docs) -->` ...
  `<!-- KIND:end -->`, KIND one of rooflinecli.stages.listing.TABLES: kernels, stages,
  attention-stages, token-stages), written by rooflinecli.stages.listing;
- a sample of the output, `roofline show NAME --format markdown` of a committed document
  (`<!-- show:NAME:begin (make docs) -->` ... `<!-- show:NAME:end -->`);
- results tables, from named committed documents (`<!-- results:A.json,B.json:begin (make
  docs) -->` ... `<!-- results:A.json,B.json:end -->`): a names without a folder is under
  benchmarks/results/, one with a folder is from the repository root. The documents decide the
  table: a calibration gives measured against datasheet roofs; profile documents the
  intensities Nsight Compute measured at each level; several runs of one shape in different
  precisions a table side by side; one run its ladder;
- the summary of `--stages best` documents against their reference (`<!-- best:A.json,B.json:begin
  (make docs) -->` ... `<!-- best:A.json,B.json:end -->`): per document the geometric mean of
  reference time / pick time over its shapes, the share of shapes at 0.90 or better, the worst
  shape, and the geometric mean per M bucket of the dispatch;
- the fastest stage per shape of documents that timed several (`<!-- fastest:A.json:begin (make
  docs) -->` ... `<!-- fastest:A.json:end -->`): per document and M the geometric mean of
  reference time / the fastest verified stage's time, the worst shape, which stages won;
- the token table of chain documents (`run llm --chain`; `<!-- token:A.json,B.json:begin (make
  docs) -->` ... `<!-- token:A.json,B.json:end -->`): per document, batch and way the time per
  token, its share of the measured HBM read roof and of the datasheet, cuBLAS's chain time over
  it, the share of the traced token lost to gaps; then the targets the documents checked.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from rooflinecli.stages import listing


def _walk(cmd: click.Command, path: list[str], parent: click.Context | None):  # type: ignore[no-untyped-def]
    settings = {**cmd.context_settings, "terminal_width": 100, "max_content_width": 100}
    ctx = click.Context(cmd, info_name=path[-1], parent=parent, **settings)
    yield path, cmd.get_help(ctx)
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, [*path, name], ctx)


def render() -> str:
    from rooflinecli.cli import cli

    parts = [
        "# CLI reference\n",
        "Generated from `--help` by `make docs` (`python -m rooflinecli.docgen docs/cli.md`);",
        "a test fails when it is stale.\n",
    ]
    for path, text in _walk(cli, ["roofline"], None):
        parts.append(f"## `{' '.join(path)}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


# The stage tables are the stage listing's (rooflinecli.stages.listing): one home for each.
TABLE = listing.TABLE
with_stage_tables = listing.with_tables


ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path("benchmarks") / "results"
BLOCK = re.compile(
    r"<!-- (?P<kind>show|results|best|fastest|token):(?P<names>[^\s:]+):begin \(make docs\) -->\n"
    r".*?<!-- (?P=kind):(?P=names):end -->",
    re.S,
)


def _path(name: str) -> Path:
    return ROOT / (name if "/" in name else RESULTS / name)


def _md(header: list[str], align: str, rows: list[list[str]]) -> str:
    """A Markdown table; `align` has one letter per column: l (left) or r (right)."""
    rule = "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"
    lines = ["| " + " | ".join(header) + " |", rule]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _num(digits: int) -> Callable[[Any], str]:
    def fmt(v: Any) -> str:
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        return f"{v:,.{digits}f}" if ok else "-"

    return fmt


def _ai(v: Any) -> str:
    """Intensities: one decimal, two below 1 (0.25, 0.50, 18.8)."""
    return _num(2)(v) if isinstance(v, int | float) and v < 1 else _num(1)(v)


def _stage(rec: dict[str, Any]) -> str:
    """The stage, and for the reference the library call (from the registry's description)."""
    from rooflinecli.stages.gemm import STAGES

    name = str(rec["stage"])
    if rec.get("kind") != "reference":
        return name
    what = next((s.what for s in STAGES if s.name == name), "") or str(rec.get("what") or "")
    call = re.search(r"\((cublas\w+)", what)
    return f"{name} ({call.group(1)})" if call else name


def _ladder(doc: dict[str, Any]) -> str:
    header = ["stage", "time ms", "TFLOP/s", "% cuBLAS", "% of roof", "regs", "spill B",
              "occupancy %"]  # fmt: skip
    rows = [
        [
            _stage(r),
            _num(3)(r.get("time_ms")),
            _num(2)(r.get("tflops")),
            _num(1)(r.get("pct_of_reference")),
            _num(1)(r.get("pct_of_roof")),
            _num(0)(r.get("registers")),
            _num(0)(r.get("spill_bytes")),
            _num(0)(r.get("occupancy_pct")),
        ]
        for r in doc["records"]
    ]
    shapes = [f"{r['m']}x{r['n']}x{r['k']}" for r in doc["records"]]
    if len(set(shapes)) > 1:  # several shapes in one document: say each row's
        header.insert(1, "shape")
        for row, shape in zip(rows, shapes, strict=True):
            row.insert(1, shape)
        return _md(header, "llrrrrrrr", rows)
    return _md(header, "lrrrrrrr", rows)


def _gpu(doc: dict[str, Any]) -> str:
    """A document's GPU in a column head: 'H100' of 'NVIDIA H100 80GB HBM3'."""
    name = str((doc.get("device") or {}).get("name") or "-").removeprefix("NVIDIA ")
    return name.split()[0] if name.split() else "-"


def _side_by_side(docs: list[dict[str, Any]]) -> str:
    """One row per stage, each document's precision (or, all of one precision, its shape) in
    its own columns."""
    header, stages = ["stage"], list[str]()
    by: list[dict[str, dict[str, Any]]] = []
    one_dtype = len({d["records"][0]["dtype"] for d in docs}) == 1  # then the shapes differ
    gpus = [_gpu(d) for d in docs]
    for doc, gpu in zip(docs, gpus, strict=True):
        r0 = doc["records"][0]
        what = f"{r0['m']}x{r0['n']}x{r0['k']}" if one_dtype else r0["dtype"]
        if len(set(gpus)) > 1:  # the same runs on two GPUs: each column says which
            shapes = {(d["records"][0]["m"], d["records"][0]["n"], d["records"][0]["k"])
                      for d in docs}  # fmt: skip
            what = gpu if len(shapes) == 1 and one_dtype else f"{gpu} {what}"
        header += [f"{what} TFLOP/s", "% cuBLAS", "% peak", "SM MHz"]
        by.append({str(r["stage"]): r for r in doc["records"]})
        stages += [str(r["stage"]) for r in doc["records"] if str(r["stage"]) not in stages]
    rows = []
    for st in stages:
        first = next(d[st] for d in by if st in d)
        row = [_stage(first)]
        for d in by:
            r = d.get(st, {})
            row += [
                _num(2)(r.get("tflops")),
                _num(1)(r.get("pct_of_reference")),
                _num(1)(r.get("pct_of_peak")),
                _num(0)(r.get("sm_clock_mhz")),
            ]
        rows.append(row)
    return _md(header, "l" + "r" * (len(header) - 1), rows)


def _attention(docs: list[dict[str, Any]]) -> str:
    """Attention sweeps: one row per shape (the documents in order), TFLOP/s of each stage and
    reference, each stage's ratio to the reference it is compared with (FlashAttention-2 for
    the mma.sync stage, cuDNN for the Hopper one), and a last row of geometric means."""
    from rooflinecli.core.attention import label

    recs = [r for d in docs for r in d["records"]]
    stages = list(dict.fromkeys(str(r["stage"]) for r in recs))
    shapes = list(dict.fromkeys(label(r) for r in recs))
    against = {"attn_fa2_mma": "torch_flash", "attn_wgmma": "torch_cudnn"}
    header = ["shape"]
    for st in stages:
        header.append(f"{st} TFLOP/s")
        if st in against:
            header.append(f"% {against[st]}")
    rows, logs = [], {st: list[float]() for st in against}
    for shape in shapes:
        by = {str(r["stage"]): r for r in recs if label(r) == shape}
        row = [shape]
        for st in stages:
            r = by.get(st, {})
            row.append(_num(1)(r.get("tflops") if r.get("verified") else None))
            if st in against:
                pct = r.get(f"pct_of_{against[st]}") if r.get("verified") else None
                row.append(_num(1)(pct))
                if pct:
                    logs[st].append(math.log(pct / 100))
        rows.append(row)
    if any(logs.values()):
        row = ["geometric mean"]
        for st in stages:
            row.append("")
            if st in against:
                vals = logs[st]
                row.append(_num(1)(100 * math.exp(sum(vals) / len(vals)) if vals else None))
        rows.append(row)
    return _md(header, "l" + "r" * (len(header) - 1), rows)


def _profile(docs: list[dict[str, Any]]) -> str:
    """The intensities Nsight Compute measured, a stage once (the first document that has it),
    in the registry's order."""
    from rooflinecli.stages.gemm import STAGES

    order = {s.name: i for i, s in enumerate(STAGES)}
    seen: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for r in doc["records"]:
            seen.setdefault(str(r["stage"]), r)
    header = ["stage", "ncu ms", "DRAM bytes", "AI DRAM", "AI L2", "AI L1", "AI by instruction"]
    rows = []
    for name in sorted(seen, key=lambda n: order.get(n, len(order))):
        r = seen[name]
        instr = _num(2)(r.get("ai_instruction")) if r.get("ai_instruction") else "-"
        if r.get("ai_shared") and r.get("ai_shared") == r.get("ai_instruction"):
            instr += " (from SMEM)"
        dram = r.get("bytes_dram")
        rows.append(
            [
                name,
                _num(2)(r.get("ncu_time_ms")),
                f"{dram / 1e9:.2f} GB" if dram else "-",
                _ai(r.get("ai_dram")),
                _ai(r.get("ai_l2")),
                _ai(r.get("ai_l1")),
                instr,
            ]
        )
    return _md(header, "lrrrrrr", rows)


def _calibration(doc: dict[str, Any]) -> str:
    """What `roofline calibrate` measured against the datasheet (its own labels)."""
    from rooflinecli.commands.calibrate import ROOFS

    sheet = (doc.get("roof_sets") or {}).get("datasheet") or {}
    rows = []
    for key, label, unit, set_key in ROOFS:
        digits = 0 if unit == "GB/s" else 1

        def fmt(v: Any, unit: str = unit, digits: int = digits) -> str:
            return f"{_num(digits)(v)} {unit}" if isinstance(v, int | float) else "-"

        measured = (doc.get("measurements") or {}).get(key)
        rows.append([label, fmt(measured), fmt(sheet.get(set_key) if set_key else None)])
    return _md(["roof", "measured", "datasheet"], "lrr", rows)


def results_table(names: str) -> str:
    """The table of the named documents (comma-separated), as the module docstring says."""
    from rooflinecli import paths, results

    docs = []
    for name in names.split(","):  # each file read (and inflated) once
        raw = paths.read_json(_path(name), "results file")
        if not str(raw.get("schema", "")).startswith("roofline.calibration/"):
            results.validate(raw, str(_path(name)))  # results.load's checks, on what was read
            raw = results.upgrade(raw)
        docs.append(raw)
    if "measurements" in docs[0]:
        return _calibration(docs[0])
    if str(docs[0].get("command", "")).startswith("profile"):
        return _profile(docs)
    if any(r.get("op") == "attention" for d in docs for r in d["records"]):
        return _attention(docs)
    if len(docs) > 1:
        return _side_by_side(docs)
    return _ladder(docs[0])


def _best_ratios(doc: dict[str, Any]) -> list[tuple[tuple[int, int, int], str, float | None]]:
    """Per shape of a `--stages best` document: (shape, its pick, the time of the reference it
    was compared with / pick time; None when the pick did not verify or has no time)."""
    from rooflinecli.core import reference

    out: list[tuple[tuple[int, int, int], str, float | None]] = []
    for r in doc["records"]:
        if r.get("kind") != "stage":
            continue
        key = (r["m"], r["n"], r["k"])
        # the reference the record is held to (FP8: the cuBLASLt mode of its accumulation)
        ref = (reference.of(r, doc["records"]) or {}).get("time_ms")
        t = r.get("time_ms")
        ok = r.get("verified") is True and ref and t
        out.append((key, str(r.get("stage")), ref / t if ok else None))
    return out


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _best(docs: list[dict[str, Any]], names: list[str]) -> str:
    from rooflinecli.stages.dispatch import M_BUCKETS

    rows = []
    buckets: dict[str, dict[str, float]] = {}
    for name, doc in zip(names, docs, strict=True):
        got = _best_ratios(doc)
        ratios = [x for _k, _s, x in got if x is not None]
        failed = sum(x is None for _k, _s, x in got)
        worst = min((g for g in got if g[2] is not None), key=lambda g: g[2] or 0.0, default=None)
        dtype = doc["records"][0].get("dtype", "-") if doc["records"] else "-"
        label = f"`{name}`"
        rows.append([
            label, dtype, str(len(got)), f"{_geomean(ratios):.3f}",
            f"{sum(x >= 0.9 for x in ratios)}/{len(got)}",
            f"{'x'.join(map(str, worst[0]))} {worst[2]:.2f}" if worst else "-",
            str(failed),
        ])  # fmt: skip
        for lo, hi, col in M_BUCKETS:
            xs = [x for k, _s, x in got if x is not None and lo <= k[0] <= (hi or k[0])]
            if xs:
                buckets.setdefault(col, {})[name] = _geomean(xs)
    head = ["document", "dtype", "shapes", "geomean", ">= 0.90", "worst", "not verified"]
    text = _md(head, "llrrrlr", rows)
    cols = [c for _lo, _hi, c in M_BUCKETS if c in buckets]
    text += "\n" + _md(
        ["document", *[f"M {c}" for c in cols]],
        "l" + "r" * len(cols),
        [
            [f"`{name}`", *[f"{buckets[c][name]:.2f}" if name in buckets[c] else "-" for c in cols]]
            for name in names
        ],
    )
    return text


def _fastest(doc: dict[str, Any], name: str) -> list[list[str]]:
    """Per M of a document that timed several stages per shape: the fastest verified stage at
    each shape against the reference it is held to, as the geometric mean of the ratios, the
    worst shape, and how often each stage was the fastest."""
    from rooflinecli.core import reference

    fastest: dict[tuple[int, int, int], dict[str, Any]] = {}
    for r in doc["records"]:
        key = (r["m"], r["n"], r["k"])
        if r.get("kind") == "stage" and r.get("verified") is True and r.get("time_ms"):
            if key not in fastest or r["time_ms"] < fastest[key]["time_ms"]:
                fastest[key] = r
    by_m: dict[int, list[tuple[tuple[int, int, int], str, float]]] = {}
    for key, r in sorted(fastest.items()):
        ref = (reference.of(r, doc["records"]) or {}).get("time_ms")
        if ref:
            by_m.setdefault(key[0], []).append((key, str(r["stage"]), ref / r["time_ms"]))
    rows = []
    for m, got in sorted(by_m.items()):
        worst = min(got, key=lambda g: g[2])
        wins: dict[str, int] = {}
        for _k, stage, _x in got:
            wins[stage] = wins.get(stage, 0) + 1
        stages = ", ".join(f"`{s}` {n}" for s, n in sorted(wins.items(), key=lambda w: -w[1]))
        rows.append([
            f"`{name}`", str(m), str(len(got)), f"{_geomean([x for _k, _s, x in got]):.3f}",
            f"{'x'.join(map(str, worst[0]))} {worst[2]:.2f}", stages,
        ])  # fmt: skip
    return rows


def fastest_table(names: str) -> str:
    """Per document (comma-separated) and M: the fastest verified stage of each shape against
    its reference (the geometric mean of reference time / its time), the worst shape, and which
    stages were the fastest how often."""
    from rooflinecli import results

    rows = [row for n in names.split(",") for row in _fastest(results.load(_path(n)), n)]
    head = ["document", "M", "shapes", "geomean", "worst", "fastest (shapes)"]
    return _md(head, "lrrrll", rows)


def best_table(names: str) -> str:
    """The summary of the named `--stages best` documents (comma-separated)."""
    from rooflinecli import results

    parts = names.split(",")
    return _best([results.load(_path(n)) for n in parts], parts)


def _pct(v: Any) -> str:
    return f"{100 * v:.1f}%" if isinstance(v, int | float) and math.isfinite(v) else "-"


def _token(docs: list[dict[str, Any]], labels: list[str]) -> str:
    from rooflinecli import names

    rows, verdicts = [], []
    for name, doc in zip(labels, docs, strict=True):
        recs = [r for r in doc["records"] if r.get("op") == "chain"]
        cublas = {r.get("batch"): r.get("time_ms") for r in recs if r.get("stage") == "cublas"}
        for r in recs:
            t, ref = r.get("time_ms"), cublas.get(r.get("batch"))
            if r.get("verified") is False:
                shown = "failed its check"
            elif t:
                shown = _num(1)(r.get("time_us_per_token"))
            else:
                shown = "absent"
            ratio = f"{ref / t:.3f}" if t and ref and r.get("stage") != "cublas" else "-"
            rows.append([
                f"`{name}`", str(r.get("dtype", "-")), str(r.get("batch", "-")),
                names.plain(str(r.get("stage"))), shown, _pct(r.get("read_roof_share")),
                _pct(r.get("datasheet_share")), ratio, _pct(r.get("gap_share")),
                _pct(r.get("tracing_overhead")), _pct(r.get("timeline_error")),
            ])  # fmt: skip
        read = ((doc.get("settings") or {}).get("read_roof") or {}).get("hbm_read_gbs")
        dtype = recs[0].get("dtype", "-") if recs else "-"
        for v in doc.get("verdicts") or []:
            value = v.get("value")
            if value is None:
                shown = "not measured"
            elif v.get("what") == "cublas_over_ours":
                shown = f"{value:.3f}"
            else:
                shown = _pct(value)
            ok = {True: "met", False: "**not met**", None: "**not measured**"}[v.get("ok")]
            verdicts.append(f"- {dtype} batch {v.get('batch')}: {names.plain(str(v.get('line')))}"
                            f": {shown}, {ok}")  # fmt: skip
        if read:
            verdicts.append(f"- {dtype}: read roof {read:,.0f} GB/s, `roofline calibrate` of the "
                            "same run")  # fmt: skip
    head = ["document", "dtype", "batch", "way", "µs per token", "of the read roof",
            "of the datasheet", "cuBLAS / this", "gaps", "tracing cost",
            "kernels + gaps vs token"]  # fmt: skip
    text = _md(head, "lrrlrrrrrrr", rows)
    return text + ("\n" + "\n".join(verdicts) + "\n" if verdicts else "")


def token_table(names: str) -> str:
    """The token table of the named chain documents (comma-separated)."""
    from rooflinecli import results

    parts = names.split(",")
    return _token([results.load(_path(n)) for n in parts], parts)


def show_markdown(name: str) -> str:
    """`roofline show NAME --format markdown`, as a user would see it."""
    from click.testing import CliRunner

    from rooflinecli.cli import cli

    path = _path(name)
    res = CliRunner().invoke(cli, ["show", str(path), "--format", "markdown"])
    if res.exit_code != 0:
        raise SystemExit(f"roofline show {name} failed: {res.output}")
    return res.output.rstrip("\n") + "\n"


def generated(text: str) -> str:
    """A page with every generated part (stage tables, samples, results tables) made anew."""

    def block(m: re.Match[str]) -> str:
        kind, names = m["kind"], m["names"]
        if kind == "best":
            body = best_table(names)
        elif kind == "fastest":
            body = fastest_table(names)
        elif kind == "token":
            body = token_table(names)
        else:
            body = show_markdown(names) if kind == "show" else results_table(names)
        return f"<!-- {kind}:{names}:begin (make docs) -->\n{body}<!-- {kind}:{names}:end -->"

    return BLOCK.sub(block, with_stage_tables(text))


CLI_REFERENCE = Path("docs") / "cli.md"


def pages(root: Path) -> list[Path]:
    """The pages whose generated parts `make docs` writes: README.md and docs/*.md, but the CLI
    reference (written whole by `render`)."""
    docs = sorted(p for p in (root / "docs").glob("*.md") if p != root / CLI_REFERENCE)
    return [root / "README.md", *docs]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    target = Path(args[0] if args else CLI_REFERENCE)
    wanted = {target: render()}
    for page in pages(Path(".")):
        if page != target:
            wanted[page] = generated(page.read_text())
    if check:
        stale = [str(p) for p, text in wanted.items() if p.read_text() != text]
        if stale:
            print(f"{', '.join(stale)} stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    from rooflinecli.files import write_atomic

    for p, text in wanted.items():
        if not p.is_file() or p.read_text() != text:  # a current page keeps its time
            write_atomic(p, text)  # through a symlink, keeping the file's mode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
