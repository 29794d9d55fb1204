"""Names are data everywhere: a catalogue of hostile names, and generated ones, through every
output the tool writes.

A stage, kernel, reference or device name comes from a document anyone can write. Each name of
the catalogue is put into a copy of a committed document (benchmarks/results/) and fed through
`show` (table, CSV, Markdown, JSON), `compare`, `gate` (terminal, --markdown, --junit), `plot`
(SVG, PNG, HTML) and a `profile app` document's rows. Real kernel names (C++ templates and
scopes, brackets, dollar signs) render as they are; only names with a control character, or
oversize ones, are refused where the document is read, in one line (exit 2). No output names a
Python exception. Generated names (hypothesis) go through the same renderers in process.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflinecli import names, paths, results
from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError
from rooflinecli.present import View, boxed, gate, table, terminal_chart

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
ENV = {"COLUMNS": "1000", "NO_COLOR": "1"}
LONG_OK = "void k<" + "float, " * 560 + "int>(float*)"  # 3,932 characters: a long template
# Names that render as they are: spreadsheet formulas, markup of every output, real kernels
RENDERED = [
    '=HYPERLINK("http://x")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)",
    "-2+3",
    "<script>alert(1)</script>",
    "a|b",
    r"$\frac{a}{$",
    "[/bold]",
    "[link=https://evil.example]cublas[/link]",
    "void gemm<128, 256>(float*)",
    "at::native::(anonymous namespace)::vectorized_elementwise_kernel<4, "
    "at::native::FillFunctor<float>, at::detail::Array<char*, 1>>",
    r"a\b [x] *y* _z_ `q` ``` ~~s~~ # &amp; -->",
    "naïve_∑_カーネル",
    LONG_OK,
]
# Names that are refused where the document is read (one line, exit 2)
REFUSED = {
    "a\nb": "U+000A",
    "\x1b[31mred": "U+001B",
    "bell\x07": "U+0007",
    "nul\x00": "U+0000",
    "tab\there": "U+0009",
    "rtl\u202eevil": "U+202E",
    "rlm\u200fevil": "U+200F",  # the right-to-left mark
    "alm\u061cevil": "U+061C",  # the Arabic letter mark
    "zw\u200djoin": "U+200D",  # the zero-width joiner
    "\ufeffbom": "U+FEFF",
    "lone \ud800 surrogate": "U+D800",
    "x" * 5000: "5,000 characters long (at most 4,096)",
}
# what must never appear in an output: a Python exception's or warning's name, or a traceback
EXCEPTION = re.compile(r"Traceback|\b[A-Z][A-Za-z]*(Error|Exception|Warning)\b")


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), env=ENV)


def no_exception(*texts: str) -> None:
    for text in texts:
        hit = EXCEPTION.search(text)
        assert hit is None, f"{hit.group()} in output: {text[:300]!r}"


def no_control(text: str) -> None:
    """Nothing a terminal would act on: no ESC, BEL, NUL, ... (line breaks are the output's)."""
    bad = re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)
    assert bad is None, f"control character {bad.group()!r} in {text[:200]!r}"


def run_doc(name: str, gpu: bool = True) -> dict[str, Any]:
    """gemm-fp32-4096-ladder.json.gz cut to two stages and the reference, the first stage and the
    reference (which the others are compared with) renamed, the GPU named `name` too (`gpu`)."""
    doc = paths.read_json((RESULTS / "gemm-fp32-4096-ladder.json.gz"), "results file")
    recs = doc["records"][:2] + doc["records"][-1:]
    recs[0]["stage"] = name
    recs[2]["stage"] = f"{name} (ref)"
    for r in recs[:2]:
        r["compared_with"] = recs[2]["stage"]
    doc["records"] = recs
    if gpu:
        doc["device"]["name"] = name
    return doc


def app_doc(name: str) -> dict[str, Any]:
    """A committed `profile app` document with its first kernel renamed."""
    doc = paths.read_json((RESULTS / "profile-app-cupy-matmul-fp16.json.gz"), "results file")
    r = doc["records"][0]
    grid = r["stage"][r["stage"].rindex(" [") :]
    r["kernel"], r["label"], r["stage"], r["name"] = name, name, name + grid, name + grid
    return doc


def write(path: Path, doc: dict[str, Any]) -> str:
    path.write_text(json.dumps(doc))  # as a hand-edited file would be (no results.dumps)
    return str(path)


def slower(doc: dict[str, Any], factor: float) -> dict[str, Any]:
    """`doc` with its first record `factor` times slower: times, repeats and speed together."""
    out = json.loads(json.dumps(doc))
    r = out["records"][0]
    for f in ("time_ms", "time_ms_min", "time_ms_max", "time_ms_stdev"):
        r[f] *= factor
    r["samples_ms"] = [t * factor for t in r["samples_ms"]]
    r["tflops"] /= factor
    return out


def table_lines_consistent(markdown: str) -> None:
    """Every Markdown table keeps its columns: each row has as many unescaped pipes as the
    header (a name's | or line break would add cells or end the table)."""
    count: int | None = None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            count = None
            continue
        pipes = len(re.findall(r"(?<!\\)\|", line))
        if count is None:
            count = pipes
        assert pipes == count, line


def csv_cells(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def safe_csv(text: str) -> None:
    """No text cell a spreadsheet would run (numbers written as numbers are fine)."""
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r") and cell != "-":
                float(cell)  # a number, or it is a formula


def shown(name: str) -> str:
    """How a name may be cut in a terminal table: a long one folds onto several lines."""
    return name if len(name) < 200 else name[:60]


# -- the catalogue, through every command -------------------------------------------------


@pytest.mark.parametrize("name", RENDERED, ids=lambda n: ascii(n)[:40])
@pytest.mark.parametrize("via_rich", [False, True], ids=["plain-stream", "rich"])
def test_show_renders_the_name_as_text(
    name: str, via_rich: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if via_rich:  # as on a terminal: rich draws every table (boxed writes the simple ones)
        monkeypatch.setattr(boxed, "colourless", lambda stream: False)
    path = write(tmp_path / "run.json", run_doc(name))
    r = invoke("show", path)
    assert r.exit_code == 0, r.stderr
    no_exception(r.stdout, r.stderr)
    no_control(r.stdout)
    assert shown(name) in r.stdout  # `[link=...]cublas[/link]` literally, not as `cublas`
    assert f"and 11% of {name} (ref)." in r.stdout or len(name) >= 200  # the verdict


@pytest.mark.parametrize("name", RENDERED, ids=lambda n: ascii(n)[:40])
def test_show_csv_markdown_json(name: str, tmp_path: Path) -> None:
    path = write(tmp_path / "run.json", run_doc(name))
    out = {f: invoke("show", path, "--format", f) for f in ("csv", "markdown", "json")}
    for r in out.values():
        assert r.exit_code == 0, r.stderr
        no_exception(r.stdout, r.stderr)
    cells = csv_cells(out["csv"].stdout)
    assert cells[0]["stage"] == names.csv_cell(name)  # neutralised, or as it is
    assert cells[0]["stage"].lstrip("'") == name
    safe_csv(out["csv"].stdout)
    md = out["markdown"].stdout
    table_lines_consistent(md)
    assert f"| {names.markdown(name)} |" in md
    assert "<script>" not in md and "[link=" not in md.replace("\\[link=", "")
    assert json.loads(out["json"].stdout)["records"][0]["stage"] == name


@pytest.mark.parametrize("name", RENDERED, ids=lambda n: ascii(n)[:40])
def test_compare_renders_the_name_as_text(name: str, tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", run_doc(name))
    b = write(tmp_path / "b.json", slower(run_doc(name), 1.1))
    for fmt in ("table", "csv", "markdown", "json"):
        r = invoke("compare", a, b, "--format", fmt)
        assert r.exit_code == 0, r.stderr
        no_exception(r.stdout, r.stderr)
        no_control(r.stdout)
        if fmt == "table":
            assert shown(name) in r.stdout
        elif fmt == "csv":
            assert csv_cells(r.stdout)[0]["stage"] == names.csv_cell(name)
            safe_csv(r.stdout)
        elif fmt == "markdown":
            table_lines_consistent(r.stdout)
            assert f"| {names.markdown(name)} |" in r.stdout and "<script>" not in r.stdout
        else:
            assert json.loads(r.stdout)["rows"][0]["stage"] == name


@pytest.mark.parametrize("name", RENDERED, ids=lambda n: ascii(n)[:40])
def test_gate_terminal_markdown_junit(name: str, tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", run_doc(name))
    cur = write(tmp_path / "cur.json", slower(run_doc(name), 1.1))
    junit, md = tmp_path / "junit.xml", tmp_path / "summary.md"
    r = invoke("gate", cur, "--baseline", base, "--junit", str(junit), "--markdown", str(md))
    assert r.exit_code == 1, r.stderr  # the renamed stage is 10% slower: the gate fails it
    no_exception(r.stdout, r.stderr)
    no_control(r.stdout + r.stderr)
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"error: gate failed, 1 of 3 checks: {name} 4096x4096x4096 fp32")
    assert shown(name) in r.stdout
    cases = ET.fromstring(junit.read_text()).iter("testcase")
    assert f"{name} 4096x4096x4096 fp32" in {c.get("name") for c in cases}
    summary = md.read_text()
    table_lines_consistent(summary)
    assert f"| {names.markdown(name)} |" in summary and "<script>" not in summary
    no_exception(summary, junit.read_text())
    same = invoke("gate", base, "--baseline", base, "--format", "markdown")
    assert same.exit_code == 0, same.stderr  # was MarkupError for `[/bold]`, even against itself
    table_lines_consistent(same.stdout)


def catalogue_doc() -> dict[str, Any]:
    """One run document whose stages carry every name of the catalogue (one plot draws all)."""
    doc = run_doc("naive", gpu=False)
    first = doc["records"][0]
    doc["records"] = [
        {**first, "stage": name, "m": 256 * (i + 1)} for i, name in enumerate(RENDERED)
    ]
    for r in doc["records"]:  # another shape: another time, and the speed it gives
        r["flops"] = 2 * r["m"] * r["n"] * r["k"]
        r["tflops"] = r["flops"] / (r["time_ms"] * 1e-3) / 1e12
        r["bytes_ideal"] = 4 * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"])
        r["ai_ideal"] = r["flops"] / r["bytes_ideal"]  # and the intensity
    return doc


@pytest.mark.filterwarnings("error")  # not even a missing glyph's warning
def test_plot_svg_draws_every_name_as_text(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = write(tmp_path / "run.json", catalogue_doc())
    svg = tmp_path / "roofline.svg"
    r = invoke("plot", path, "-o", str(svg))
    assert r.exit_code == 0, r.stderr  # was a mathtext ValueError for `$\frac{a}{$`
    no_exception(r.stdout, r.stderr)
    text = svg.read_text()
    ET.fromstring(text.encode())  # the SVG parses, whatever the names hold
    assert "<script>" not in text
    for name in RENDERED:  # matplotlib writes a text as paths, the string in a comment: escaped
        escaped = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        escaped = re.sub(r"-(?=-)", "- ", escaped)  # a comment holds no "--"
        assert escaped[:60] in text, name


def test_plot_png_and_html(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = write(tmp_path / "run.json", catalogue_doc())
    for suffix in ("png", "html"):
        r = invoke("plot", path, "-o", str(tmp_path / f"roofline.{suffix}"))
        assert r.exit_code == 0, r.stderr
        no_exception(r.stdout, r.stderr)
    page = (tmp_path / "roofline.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert (tmp_path / "roofline.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("name", RENDERED, ids=lambda n: ascii(n)[:40])
def test_profile_app_rows_render_the_kernel_as_text(name: str, tmp_path: Path) -> None:
    path = write(tmp_path / "app.json", app_doc(name))
    for fmt in ("table", "markdown", "csv"):
        r = invoke("show", path, "--format", fmt)
        assert r.exit_code == 0, r.stderr
        no_exception(r.stdout, r.stderr)
        no_control(r.stdout)
        if fmt == "table":
            assert shown(name) in r.stdout
        elif fmt == "markdown":
            table_lines_consistent(r.stdout)
            assert names.markdown(name)[:40] in r.stdout and "<script>" not in r.stdout
        else:
            assert csv_cells(r.stdout)[0]["kernel"] == names.csv_cell(name)


@pytest.mark.parametrize("name", list(REFUSED), ids=lambda n: ascii(n)[:30])
def test_control_characters_and_oversize_names_are_refused_in_one_line(
    name: str, tmp_path: Path
) -> None:
    why = REFUSED[name]
    path = write(tmp_path / "run.json", run_doc(name, gpu=False))
    commands = [
        ["show", path],
        ["show", path, "--format", "csv"],
        ["compare", path, path],
        ["gate", path, "--baseline", path, "--junit", str(tmp_path / "j.xml")],
        ["plot", path, "-o", str(tmp_path / "r.svg")],
        ["baseline", "save", path, str(tmp_path / "b.json")],
    ]
    for args in commands:
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.stdout)
        assert r.stdout == ""
        no_exception(r.stderr)
        line = r.stderr.rstrip("\n")
        assert "\n" not in line and line.isprintable(), repr(line)
        assert line.startswith(f"error: {path}: record 0")
        assert "'stage'" in line and why in line, line
    assert not (tmp_path / "j.xml").exists() and not (tmp_path / "b.json").exists()


@pytest.mark.parametrize(
    "where",
    ["device", "compared_with", "kernel", "workload"],
)
def test_every_name_field_is_checked(where: str, tmp_path: Path) -> None:
    doc = run_doc("naive")
    if where == "device":
        doc["device"]["name"] = "H200\x1b]8;;https://evil.example\x07"
    else:
        doc["records"][1][where] = "x\x1b[2J"
    r = invoke("show", write(tmp_path / "run.json", doc))
    assert r.exit_code == 2
    line = r.stderr.rstrip("\n")
    assert "\n" not in line and line.isprintable() and "U+001B" in line
    assert ("device.name" if where == "device" else f"(naive_xrow): {where!r}") in line


def test_prose_may_hold_line_breaks_but_not_escapes(tmp_path: Path) -> None:
    """An error message (a record's `error`) is prose: its line breaks are kept in the document
    and become spaces in every table; an ESC in it is refused like one in a name."""
    doc = run_doc("naive")
    gone = doc["records"][1]
    gone.update(verified=None, tflops=None, error="skipped: line one\nline two | <b>x</b>")
    path = write(tmp_path / "run.json", doc)
    md = invoke("gate", path, "--baseline", path, "--format", "markdown")
    assert md.exit_code == 0, md.stderr
    table_lines_consistent(md.stdout)
    assert "(skipped: line one line two \\| &lt;b>x&lt;/b>)" in md.stdout
    shown_ = invoke("show", path)
    assert shown_.exit_code == 0 and "line one line two | <b>x</b>" in shown_.stdout
    gone["error"] = "skipped: \x1b[31m"
    r = invoke("show", write(tmp_path / "bad.json", doc))
    assert r.exit_code == 2 and "'error' holds a control character (U+001B" in r.stderr


def test_a_spec_file_names_are_text_and_checked(tmp_path: Path) -> None:
    src = (Path(__file__).resolve().parent.parent / "specs" / "h100-sxm5.toml").read_text()
    hostile = src.replace('display_name = "', 'display_name = "[bold]$x$ <b> [/bold]', 1)
    spec = tmp_path / "gpu.toml"
    spec.write_text(hostile)
    for fmt in ("table", "markdown"):
        r = invoke("model", "gemm", "--m", "256", "--spec", str(spec), "--format", fmt)
        assert r.exit_code == 0, r.stderr
        no_exception(r.stdout)
    r = invoke("model", "gemm", "--m", "256", "--spec", str(spec))
    assert "[bold]$x$ <b> [/bold]" in r.stdout
    spec.write_text(src.replace('display_name = "', 'display_name = "\\u001b[31m', 1))
    r = invoke("model", "gemm", "--m", "256", "--spec", str(spec))
    assert r.exit_code == 2
    assert r.stderr == (
        "error: spec gpu.toml: display_name holds a control character (U+001B at position 1): "
        "a name is plain text\n"
    )


def test_a_programs_kernel_names_are_kept_not_refused() -> None:
    """`profile app`: a kernel name from the program with a control character gets U+FFFD for
    it; an oversize one is cut with its length and a checksum; the document reads back."""
    from rooflinecli.gpu import profile_app

    long = "void f<" + "int, " * 3000 + "int>()"
    rows = [
        {"kernel": "evil\x1b[2Jkernel", "grid": "(1, 1, 1)", "block": "(32, 1, 1)"},
        {"kernel": long, "grid": "(2, 1, 1)", "block": "(32, 1, 1)"},
        {"kernel": long[:-3] + "x>()", "grid": "(2, 1, 1)", "block": "(32, 1, 1)"},
    ]
    kernels = [k for k, _, _ in profile_app.group(rows)]
    assert kernels[0] == "evil\ufffd[2Jkernel"
    assert len(kernels[1]) <= names.MAX_NAME - 64 and kernels[1] != kernels[2]
    assert re.search(r"\.\.\. \(15,\d{3} characters, crc32 [0-9a-f]{8}\)$", kernels[1])
    for k in kernels:
        names.check(k + " [2x1x1]", "kernel")


# -- names.py itself ----------------------------------------------------------------------


def test_each_writer_on_the_catalogue() -> None:
    from rich.console import Console
    from rich.markup import render

    for name in RENDERED:
        assert names.check(name, "stage") == name
        assert names.plain(name) == name
        assert render(names.rich(name)).plain == name  # markup that prints the name as written
        con = Console(file=io.StringIO(), width=5000, color_system=None)
        con.print(names.rich_text(name))
        assert con.file.getvalue() == name + "\n"  # type: ignore[attr-defined]
        assert ET.fromstring(f"<a>{names.html(name)}</a>").text == name
        assert "\n" not in names.markdown(name) and "<" not in names.markdown(name)
        cell = names.csv_cell(name)
        assert cell == ("'" + name if name[0] in "=+-@" else name)
    assert names.csv_cell("-") == "-" and names.csv_cell("-1.5e3") == "-1.5e3"
    assert names.csv_cell("\tx") == "' x" and names.csv_cell("\r=1") == "' =1"
    assert names.xml("a\x1bb\x00c\ud800d\ufffee\nf") == "a\ufffdb\ufffdc\ufffdd\ufffde\nf"
    assert names.plain("a\x1b[31mb\x07\tc\nd") == "a\ufffd[31mb\ufffd c d"
    block = names.markdown_code("x ```` y\n")
    assert block.startswith("`````text\n") and block.endswith("\n`````\n")
    assert names.markdown_code_span("a`b") == "`` a`b ``" and names.markdown_code_span("p") == "`p`"
    for name, why in REFUSED.items():
        with pytest.raises(RooflineError, match=re.escape(why)):
            names.check(name, "stage")
        assert not names.is_name(name)


def test_mathtext_escaping_renders_the_dollars() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    fig = Figure()
    for name in RENDERED[:13]:
        t = fig.text(0, 0, names.mathtext(name))  # parsed for mathtext, and drawn as written
        assert t._preprocess_math(t.get_text()) == (name, False)  # type: ignore[attr-defined]


# -- generated names ----------------------------------------------------------------------

FRAGMENTS = [
    "[", "]", "[/", "[bold]", "[link=https://e.x]", "$", "\\", "|", "<", ">", "&", "=", "+",
    "-", "@", "\t", "\r", "\n", "\x1b", "\x07", "\x00", "`", "*", "_", "::", "<4, ", "-->",
    "]]>", "(anonymous namespace)", "#", "~~", "\u202e", "\ud800", "\ufffe", " ",
]  # fmt: skip
NAMES = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.text(st.characters(exclude_categories=()), max_size=4),
        st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8),
    ),
    min_size=1,
    max_size=12,
).map("".join)
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,  # the same names on every run: a failure reproduces
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _every_output(doc: dict[str, Any]) -> dict[str, str]:
    """Every format of a run document the way the commands write it, in process."""
    from rich.console import Console

    from rooflinecli.commands.gate import _markdown
    from rooflinecli.present import document, output

    out: dict[str, str] = {}
    title = document.title(doc, doc["records"])
    report = output.of_document(doc, [output.Records(doc, document.columns_of(doc), title,
                                                     view=View())])  # fmt: skip
    for fmt in ("table", "markdown", "csv", "json"):
        con = Console(file=io.StringIO(), width=1000, color_system=None, highlight=False)
        output.emit(report, fmt, out=con)
        out[fmt] = con.file.getvalue()  # type: ignore[attr-defined]
    out["chart"] = terminal_chart.render(doc)
    result = gate.evaluate(doc, doc)
    out["junit"] = gate.junit_xml(result)
    out["gate.md"] = _markdown(result, [c.row() for c in result.checks], "heading")
    con = Console(file=io.StringIO(), width=1000, color_system=None, highlight=False)
    rows = [c.row() for c in result.checks]
    part = output.Rows(rows, table.GATE_COLUMNS, title="gate", caption=result.summary())
    output.emit(output.of_rows(rows, table.GATE_COLUMNS, [part], None), "table", out=con)
    out["gate"] = con.file.getvalue()  # type: ignore[attr-defined]
    return out


@SETTINGS
@given(NAMES)
def test_generated_names_are_refused_or_rendered_as_text(name: str) -> None:
    doc = json.loads(results.dumps(run_doc("naive")))
    doc["records"][0]["stage"] = name
    doc = json.loads(json.dumps(doc))  # through JSON, as a file would carry it
    if not names.is_name(name):
        with pytest.raises(RooflineError) as err:
            results.validate(doc, "doc.json")
        message = err.value.message
        assert message.startswith("doc.json: record 0: 'stage' ") and message.isprintable()
        return
    results.validate(doc, "doc.json")
    out = _every_output(results.upgrade(doc))
    for text in out.values():
        no_exception(text)
        no_control(text)
    assert name in out["table"] and name in out["gate"] and name in out["chart"]
    assert json.loads(out["json"])["records"][0]["stage"] == name
    assert csv_cells(out["csv"])[0]["stage"] == names.csv_cell(name)
    safe_csv(out["csv"])
    for md in (out["markdown"], out["gate.md"]):
        table_lines_consistent(md)
        assert f"| {names.markdown(name)} |" in md
    case = next(ET.fromstring(out["junit"]).iter("testcase"))
    assert case.get("name") == names.xml(f"{name} 4096x4096x4096 fp32")


@settings(SETTINGS, max_examples=4)
@given(NAMES.filter(names.is_name))
def test_generated_names_plot(name: str) -> None:
    pytest.importorskip("matplotlib")
    from rooflinecli.present import image

    doc = run_doc("naive")
    doc["records"][0]["stage"] = name
    svg = image.render(doc, "svg").decode()
    ET.fromstring(svg.encode())


def test_every_format_character_is_refused_in_a_name_and_in_prose() -> None:
    """Unicode's category Cf (bidirectional marks such as U+200F and U+061C, the zero-width
    joiner, the byte order mark, tags): invisible, or moving the text around them, as U+202E."""
    import sys
    import unicodedata

    cf = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    assert len(cf) > 150
    assert [f"U+{ord(ch):04X}" for ch in cf if names.is_name(f"a{ch}b")] == []
    assert [f"U+{ord(ch):04X}" for ch in cf if names.is_text(f"a{ch}b")] == []
    with pytest.raises(RooflineError, match=r"^stage holds a control character \(U\+200F at"):
        names.check("naive\u200f", "stage")
