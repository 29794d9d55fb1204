"""A catalogue of extreme numbers through every command that reads a document, in process.

Each number of the catalogue (10**400, 2**63, 1e300, 1e-300, a denormal, -0, NaN, infinity, a
negative, and the edges a document may hold: 2**63-1, 1e30, 1e-30) is put into each numeric
field the tool reads of a committed document's record (its counts, times, speeds, shape,
repeats, launch geometry) and of its spec (peaks, clocks, bandwidth). A document is then either
refused where it is read, in one line in the tool's words (exit 2), or rendered by show,
compare, gate, report, plot, baseline save, merge and fleet in every --format: no output names
a Python exception or holds a traceback.

The refused ones are refused by every reader alike (results.load); the accepted ones of one
number go through the commands together, one record each, so the catalogue costs a few
documents per command, not hundreds.
"""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinecli import paths, results
from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
SOURCE = RESULTS / "gemm-fp32-4096-ladder.json.gz"
ENV = {"COLUMNS": "100", "NO_COLOR": "1"}
EXCEPTION = re.compile(r"Traceback|\b[A-Z][a-zA-Z]*(Error|Exception)\b")
FORMATS = ("table", "json", "csv", "markdown")

CATALOGUE: dict[str, Any] = {
    "10**400": 10**400,
    "2**63": 2**63,
    "2**63-1": 2**63 - 1,  # the largest whole number a document holds
    "1e300": 1e300,
    "1e30": 1e30,  # the largest size of any other number
    "1e-30": 1e-30,  # the smallest but 0
    "1e-300": 1e-300,
    "denormal": 5e-324,
    "-0": -0.0,
    "nan": math.nan,
    "inf": math.inf,
    "negative": -1.0,
}


def base() -> dict[str, Any]:
    doc = paths.read_json(SOURCE, "results file")
    doc["records"] = doc["records"][:1]
    return doc


def record_fields(rec: dict[str, Any]) -> list[tuple[str, ...]]:
    """Each number of the record the tool reads: its top-level numbers, a repeat, a launch
    dimension."""
    out: list[tuple[str, ...]] = [
        (k,) for k, v in rec.items() if type(v) in (int, float) and k not in ("alpha", "beta")
    ]
    for key in ("samples_ms", "reference_samples_ms", "grid", "block"):
        if isinstance(rec.get(key), list):
            out.append((key, "0"))
    return out


SPEC_FIELDS: list[tuple[str, ...]] = [
    ("memory_bandwidth_gbs",),
    ("sm_count",),
    ("boost_clock_mhz",),
    ("l2_cache_mib",),
    ("tflops", "fp32"),
    ("peak_clock_mhz", "fp32"),
]


def put(holder: Any, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        holder = holder[int(key) if isinstance(holder, list) else key]
    last = path[-1]
    holder[int(last) if isinstance(holder, list) else last] = value


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env=ENV)


def clean(args: list[str], r: Any) -> None:
    """One command's result: an exit code of the tool's, no exception's name, no traceback."""
    text = r.stdout + r.stderr
    hit = EXCEPTION.search(text)
    assert hit is None, (args, hit.group(), text[-400:])
    assert r.exit_code in (0, 1, 2, 3), (args, r.exit_code, text[-400:])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError((args, repr(r.exception)))


def commands(path: str, tmp: Path) -> list[list[str]]:
    """Every command that reads a document, in every --format (plot in each image kind)."""
    ok = str(SOURCE)
    out: list[list[str]] = []
    for fmt in FORMATS:
        out += [
            ["show", path, "--format", fmt],
            ["compare", ok, path, "--format", fmt],
            ["compare", path, ok, "--format", fmt],
            ["gate", path, "--baseline", ok, "--format", fmt],
            ["gate", ok, "--baseline", path, "--format", fmt],
            ["fleet", path, "--format", fmt],
        ]
    out += [
        ["show", path, "--wide", "--chart"],
        ["gate", path, "--min-pct-of-roof", "*=1", "--min-pct-of-reference", "*=1"],
        ["gate", path, "--baseline", ok, "--force", "--markdown", str(tmp / "g.md"),
         "--junit", str(tmp / "g.xml"), "--html", str(tmp / "g.html")],
        ["report", path, "-o", str(tmp / "r.html"), "--force"],
        ["report", path, "--baseline", ok, "-o", str(tmp / "r.html"), "--force"],
        ["baseline", "save", path, str(tmp / "b.json"), "--force"],
        ["merge", path, ok, "-o", str(tmp / "m.json"), "--force"],
    ]  # fmt: skip
    out += [["plot", path, "-o", str(tmp / f"p.{ext}"), "--force"] for ext in ("svg", "png")]
    return out


def _force_supported() -> bool:
    """Whether every writer takes --force (the one overwrite rule)."""
    return "--force" in invoke("gate", "--help").stdout


def variants() -> tuple[dict[str, list[dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    """Per number of the catalogue: the records that a document holding them is read with; and
    every document that is refused, with its label."""
    accepted: dict[str, list[dict[str, Any]]] = {name: [] for name in CATALOGUE}
    refused: list[tuple[str, dict[str, Any]]] = []
    doc = base()
    fields = [("records", "0", *f) for f in record_fields(doc["records"][0])]
    fields += [("spec", *f) for f in SPEC_FIELDS]
    for name, value in CATALOGUE.items():
        for i, path in enumerate(fields):
            one = copy.deepcopy(doc)
            put(one, path, value)
            label = f"{'.'.join(path)}={name}"
            try:
                results.validate(one, label)
            except RooflineError:
                refused.append((label, one))
                continue
            rec = one["records"][0]
            if path[0] == "records":
                rec["stage"] = f"v{i}"  # one identity each: one document holds them all
                accepted[name].append(rec)
            else:  # a spec that is read: a document of its own
                accepted.setdefault(label, []).append({"spec": one["spec"], **rec})
    return accepted, refused


ACCEPTED, REFUSED = variants()


def test_every_refused_document_is_one_line_in_the_tools_words(tmp_path: Path) -> None:
    assert len(REFUSED) > 100  # the catalogue reaches the readers' checks
    for label, doc in REFUSED:
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(doc))
        for args in (["show", str(path)], ["gate", str(path), "--baseline", str(SOURCE)]):
            r = invoke(*args)
            clean(args, r)
            assert r.exit_code == 2 and r.stderr.count("\n") == 1, (label, r.stderr)
            assert r.stderr.startswith("error: "), (label, r.stderr)


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_every_reader_renders_what_it_accepts(name: str, tmp_path: Path) -> None:
    if not _force_supported():
        pytest.fail("gate takes no --force: the writers share no overwrite rule")
    groups = [k for k in ACCEPTED if k == name or k.endswith(f"={name}")]
    for group in groups:
        recs = ACCEPTED[group]
        if not recs:
            continue
        doc = base()
        if "spec" in recs[0]:
            doc["spec"] = recs[0]["spec"]
            recs = [{k: v for k, v in recs[0].items() if k != "spec"}]
        doc["records"] = recs
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(doc))
        for args in commands(str(path), tmp_path):
            r = invoke(*args)
            clean(args, r)
            if args[0] in ("show", "compare", "report", "plot"):  # read, so drawn
                assert r.exit_code == 0, (group, args, r.stderr)
