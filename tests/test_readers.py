"""The one reader (rooflinecli.paths.read_bytes and its kin) and every reader built on it: only
a regular file, within its size limit, and every foreseeable problem (a list where an object
belongs, a number longer than Python converts, nesting deeper than it parses, a cache folder
that is a file) is one line in the tool's words naming the file, never a Python exception."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import children
import pytest

from rooflinecli import paths, results
from rooflinecli.cli import cli
from rooflinecli.core import llm, specs
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import calibrate
from rooflinecli.stages import dispatch
from rooflinecli.stages.userstage import Formula, FormulaError, load_user_stage

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "benchmarks" / "results" / "gemm-fp32-4096-interleaved.json.gz"
CAL = ROOT / "benchmarks" / "calibration" / "h200-2026-12-01.json"
EXCEPTION_NAMES = ("Error:", "Exception", "Traceback", "MemoryError", "ValueError")


def _special(tmp_path: Path, kind: str) -> Path:
    """A path that is not a regular file: /dev/zero, a link to it, a FIFO, a folder."""
    if kind == "dev-zero":
        return Path("/dev/zero")
    p = tmp_path / f"special-{kind}"
    if kind == "link-to-dev-zero":
        p.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "folder":
        p.mkdir()
    return p


KINDS = {
    "dev-zero": "a character device",
    "link-to-dev-zero": "a character device",
    "fifo": "a FIFO",
    "folder": "a folder",
}

# every reader of a file a user names, with what it calls the file
READERS = {
    "results": (results.load, "results file"),
    "calibration": (calibrate.read_calibration, "calibration file"),
    "spec": (specs.load_spec_file, "spec file"),
    "preset": (llm.resolve, "preset file"),
    "stage": (load_user_stage, "stage file"),
    "dispatch": (dispatch.load_toml, "tune table"),
}


@pytest.fixture
def alarm():
    """A test that reads in this process fails after 30 s instead of hanging (on a FIFO)."""

    def ring(signum, frame):
        raise TimeoutError("the read blocked: a FIFO was opened as an ordinary file")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_what_is_not_a_regular_file(tmp_path, alarm, reader, kind):
    load, what = READERS[reader]
    path = _special(tmp_path, kind)
    with pytest.raises(RooflineError) as got:
        load(str(path))
    assert got.value.message == f"cannot read {what} {path}: it is {KINDS[kind]}"


def _run_with_timeout(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The program itself, in a child that is killed if it hangs (a FIFO read would)."""
    code = "import sys; from rooflinecli.cli import main; sys.argv[0] = 'roofline'; main()"
    return children.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", "ROOFLINE_DEBUG": ""},
    )


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["show", "{}"], "results file"),
        (["model", "gemm", "--m", "64", "--spec", "{}"], "spec file"),
        (["show", str(DOC), "--roofs", "measured", "--calibration", "{}"], "calibration file"),
    ],
)
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-to-dev-zero"])
def test_the_program_never_hangs_on_a_fifo_nor_reads_dev_zero(tmp_path, args, what, kind):
    """A FIFO with no writer would block an ordinary open for ever, /dev/zero would be read
    until memory ran out: each is one line and exit 2, at once (the child is killed at 60 s)."""
    path = _special(tmp_path, kind)
    out = _run_with_timeout([a.replace("{}", str(path)) for a in args])
    assert out.returncode == 2, out.stderr
    assert out.stderr == f"error: cannot read {what} {path}: it is {KINDS[kind]}\n"


@pytest.mark.parametrize(
    ("reader", "limit"),
    [("results", paths.LIMITS["document"]), ("spec", paths.LIMITS["toml"])],
)
def test_a_file_past_its_kinds_limit_is_refused_unread(tmp_path, reader, limit):
    load, what = READERS[reader]
    big = tmp_path / "big.toml"
    with big.open("wb") as fh:
        fh.truncate(limit + 1)  # sparse: no disk used, and never read
    with pytest.raises(RooflineError) as got:
        load(str(big))
    assert got.value.message.startswith(f"{what} {big} is ")
    assert "larger than a" in got.value.message and f"({limit / (1 << 20):,.1f} MiB)" in (
        got.value.message
    )


def test_the_limits_are_the_stated_ones():
    assert paths.LIMITS == {"document": 256 << 20, "toml": 1 << 20, "source": 16 << 20}


def test_read_bytes_reads_a_regular_file_whole(tmp_path):
    p = tmp_path / "f.bin"
    data = os.urandom(3 << 20)  # more than one read's worth is never the question: whole
    p.write_bytes(data)
    assert paths.read_bytes(p, "file", 4 << 20) == data
    with pytest.raises(RooflineError, match="larger than a file may be"):
        paths.read_bytes(p, "file", 1 << 20)


def test_text_that_is_not_utf8_is_one_line(tmp_path):
    p = tmp_path / "doc.json"
    p.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(RooflineError, match=r"results file .* is not JSON: not UTF-8 text"):
        results.load(p)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(RooflineError, match=r"^results file .*nope.json not found$"):
        results.load(tmp_path / "nope.json")


# --------------------------------------------------------------------------- foreseeable errors


def _cli_line(runner, args, exit_code=2):
    r = runner.invoke(cli, args)
    assert r.exit_code == exit_code, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert not any(name in lines[0] for name in EXCEPTION_NAMES), lines[0]
    return lines[0]


@pytest.mark.parametrize("body", ["[1, 2]", '"text"', "3", "null"])
def test_calibration_that_is_no_object_is_one_line(runner, tmp_path, body):
    cal = tmp_path / "cal.json"
    cal.write_text(body)
    for args in (
        ["show", str(DOC), "--roofs", "measured", "--calibration", str(cal)],
        ["plot", str(DOC), "--calibration", str(cal), "-o", str(tmp_path / "x.png")],
    ):
        line = _cli_line(runner, args)
        assert line.startswith(f"error: {cal} is not a calibration document")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda c: c["measurements"].update(hbm_read_gbs="fast"), "measurements.hbm_read_gbs"),
        (lambda c: c["measurements"].update(l2_read_gbs=-1), "measurements.l2_read_gbs"),
        (lambda c: c["device"].update(sm_count=[132]), "device.sm_count"),
        (lambda c: c.update(device=[1]), "'device'"),
        (lambda c: c.update(measurements=[]), "has no measurements"),
    ],
)
def test_calibration_fields_are_checked_with_the_field_named(tmp_path, change, field):
    cal = json.loads(CAL.read_text())
    change(cal)
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(cal))
    with pytest.raises(RooflineError, match=f"^{p}.*{field}".replace("(", r"\(")):
        calibrate.read_calibration(p)


def test_a_committed_calibration_reads(runner):
    r = runner.invoke(cli, ["show", str(DOC), "--roofs", "measured", "--calibration", str(CAL)])
    assert r.exit_code == 0, r.output


def test_a_cache_folder_that_is_a_file_is_one_line(runner, tmp_path, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("")
    for root, shown in ((afile, ""), (afile / "sub", f" ({afile} is not a folder)")):
        monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(root))
        with pytest.raises(RooflineError) as got:
            paths.cache_dir()
        assert got.value.message == (
            f"ROOFLINE_CACHE_DIR={root}: not a folder{shown}; point it at a folder"
        )
        line = _cli_line(runner, ["inspect", "gemm", "--stage", "naive_xcol"])
        assert line == f"error: {got.value.message}"


def test_a_cache_folder_yet_to_be_made_is_fine(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "new" / "cache"))
    assert paths.cache_dir() == tmp_path / "new" / "cache"


def _with_m(text: str) -> str:
    """The committed document with its first record's m replaced by a 5,000-digit integer."""
    at = text.index('"m": 4096')
    return text[:at] + '"m": ' + "7" * 5000 + text[at + len('"m": 4096') :]


def test_a_5000_digit_integer_in_a_document_names_the_field(runner, tmp_path):
    p = tmp_path / "big.json"
    p.write_text(_with_m(gzip.decompress(DOC.read_bytes()).decode()))
    limit = sys.get_int_max_str_digits()
    message = (
        f"results file {p}: a whole number has more than {limit:,} digits (field 'm'): "
        "no real count is that long"
    )
    with pytest.raises(RooflineError) as got:
        results.load(p)
    assert got.value.message == message
    assert _cli_line(runner, ["show", str(p)]).startswith(f"error: {message}")


def test_a_5000_digit_integer_in_a_toml_file_is_one_line(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text((ROOT / "specs" / "h200-sxm.toml").read_text() + f"\nx = {'9' * 5000}\n")
    with pytest.raises(RooflineError, match=rf"^spec file {spec}: a whole number has more"):
        specs.load_spec_file(spec)


def test_deeply_nested_json_is_one_line(runner, tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RooflineError, match=r"is nested too deeply to read"):
        results.load(p)
    line = _cli_line(runner, ["show", str(p)])
    assert line.startswith(f"error: results file {p} is nested too deeply to read")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1" * 400, "holds a number of 400 digits: a number in a formula is at most 1e30"),
        ("1" * 400 + "*M", "holds a number of 400 digits"),
        ("1e400*M", "holds a number past float's range"),
        ("2e31", r"holds 2e\+31"),
        ("(" * 150 + "M" + ")" * 150, None),  # deep but parseable: fine
        ("(" * 240 + "M" + ")" * 240, "nested too deeply|is not a valid expression"),
    ],
)
def test_formula_literals_and_nesting_are_the_tools_words(text, why):
    if why is None:
        assert Formula(text)(128, 256, 512) == 128
        return
    with pytest.raises(FormulaError, match=why):
        Formula(text)(128, 256, 512)


def test_a_stage_file_with_a_400_digit_formula_is_one_line(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(
        'extern "C" __global__ void k(int M, int N, int K, float alpha, const float* A, '
        "const float* B, float beta, float* C) {}\n"
    )
    toml = tmp_path / "k.toml"
    toml.write_text(
        'name = "k"\nsource = "k.cu"\nentry = "k"\ndtype = "fp32"\nthreads = [16, 16]\n'
        f'tile = [16, 16]\nflops = "{"9" * 400}"\n'
    )
    with pytest.raises(RooflineError) as got:
        load_user_stage(toml)
    assert got.value.message == (
        f"stage file {toml}: flops formula holds a number of 400 digits: a number in a formula "
        "is at most 1e30"
    )


def test_a_stage_source_that_is_a_fifo_is_refused(tmp_path, alarm):
    os.mkfifo(tmp_path / "k.cu")
    toml = tmp_path / "k.toml"
    toml.write_text(
        'name = "k"\nsource = "k.cu"\nentry = "k"\ndtype = "fp32"\nthreads = [16, 16]\n'
        "tile = [16, 16]\n"
    )
    with pytest.raises(RooflineError) as got:
        load_user_stage(toml)
    fifo = (tmp_path / "k.cu").resolve()
    assert got.value.message == f"stage file {toml}: cannot read source {fifo}: it is a FIFO"


def test_a_gzip_document_reads_as_its_json_and_writes_the_same_bytes_each_time(tmp_path):
    """A committed document (.json.gz) holds the JSON the tool wrote; written again under a .gz
    name it compresses to the same bytes (no time stamp), and a plain name stays plain."""
    doc = results.load(DOC)
    text = gzip.decompress(DOC.read_bytes()).decode()
    assert doc["records"] == results.load(_plain(tmp_path, text))["records"]
    from rooflinecli import files

    a, b, plain = tmp_path / "a.json.gz", tmp_path / "b.json.gz", tmp_path / "c.json"
    for p in (a, b, plain):
        files.write_atomic(p, text)
    assert a.read_bytes() == b.read_bytes() and a.read_bytes()[:2] == b"\x1f\x8b"
    assert plain.read_text() == text and gzip.decompress(a.read_bytes()).decode() == text


def _plain(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "plain.json"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "data, says",
    [
        (gzip.compress(b'{"schema": 1}')[:-9], "is not valid gzip: it ends mid-stream"),
        (b"\x1f\x8b" + b"x" * 40, "is not valid gzip: Error -3"),
        (gzip.compress(b"[" * 10 + b"]" * 10) + b"junk", "is not valid gzip"),
        (gzip.compress(b" " * (2 << 20)), "inflates past 1.0 MiB"),
    ],
    ids=["truncated", "garbage", "trailing-junk", "bomb"],
)
def test_a_broken_or_oversized_gzip_file_is_one_line(tmp_path, data, says):
    p = tmp_path / "d.json.gz"
    p.write_bytes(data)
    with pytest.raises(RooflineError) as got:
        paths.read_json(p, "results file", limit=1 << 20)
    assert got.value.message.startswith(f"results file {p} ") and says in got.value.message
