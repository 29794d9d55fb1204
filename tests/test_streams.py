"""The program's standard streams as a shell leaves them: closed (`>&-`), a full disk
(`> /dev/full`), a reader that leaves (`| head -1`), a COLUMNS that is no width. Each ends in one
line in the tool's words and exit 2, or, for the reader that left, quietly; never a Python
exception. Run as real processes: these are file descriptors, which CliRunner does not have."""

from __future__ import annotations

import os
import subprocess
import sys

import children
import pytest

from rooflinecli.present import table

MODEL = ["model", "gemm", "--m", "64", "--spec", "h200-sxm"]
PROGRAM = "import sys; from rooflinecli.cli import main; sys.argv[0] = 'roofline'; main()"


def _roofline(args, env=None, stdout=subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    full_env.pop("ROOFLINE_DEBUG", None)
    return children.run(
        [sys.executable, "-c", PROGRAM, *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env=full_env,
    )


def _closed_stdout(args):
    """`roofline ARGS >&-`: the child starts with descriptor 1 closed."""
    read, write = os.pipe()
    proc = subprocess.run(
        [sys.executable, "-c", f"import os; os.close(1); os.execv({sys.executable!r}, "
         f"[{sys.executable!r}, '-c', {PROGRAM!r}, *{args!r}])"],
        stderr=write, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    os.close(write)
    with os.fdopen(read) as fh:
        return proc.returncode, fh.read()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (MODEL, "error: cannot write to standard output: it is closed\n"),
        (["--help"], "error: cannot write to standard output: it is closed\n"),
        (
            [*MODEL, "-o", "-"],
            "error: cannot write the document to standard output (-o -): it is closed\n",
        ),
    ],
)
def test_closed_stdout_is_one_line(args, message):
    rc, err = _closed_stdout(args)
    assert (rc, err) == (2, message)


def test_closed_stdout_with_the_document_to_a_file_writes_it_then_says_so(tmp_path):
    out = tmp_path / "m.json"
    rc, err = _closed_stdout([*MODEL, "-o", str(out)])
    assert (rc, err) == (2, "error: cannot write to standard output: it is closed\n")
    assert out.is_file() and '"records"' in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize(
    "args", [MODEL, [*MODEL, "--format", "json"], [*MODEL, "-o", "-"], ["--help"]]
)
def test_a_full_disk_is_one_line(args):
    with open("/dev/full", "w") as full:
        out = _roofline(args, stdout=full)
    assert out.returncode == 2
    assert out.stderr == "error: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("args", [MODEL, [*MODEL, "--format", "json"], [*MODEL, "-o", "-"]])
def test_a_reader_that_leaves_is_no_error(args):
    """`roofline ... | head -1`: the reader closes the pipe after one line; exit 0 and nothing
    said of it (with -o - the table goes to standard error, as always)."""
    with children.started(
        [sys.executable, "-c", PROGRAM, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"},
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 0, err
    assert first and b"rror" not in err and b"Broken" not in err
    assert err == b"" or args[-2:] == ["-o", "-"]


@pytest.mark.parametrize("columns", ["abc", "", "-5", "0", "1e9", "99999999999999999999"])
def test_a_bad_columns_is_ignored(columns):
    out = _roofline(MODEL, env={"COLUMNS": columns})
    assert out.returncode == 0, out.stderr
    assert out.stderr == "" and "naive_xcol" in out.stdout


@pytest.mark.parametrize(
    ("columns", "width"),
    [("abc", 80), ("", 80), ("19", 80), ("79", 80), ("120", 120), ("80", 80), ("10001", 80)],
)
def test_the_width_off_a_terminal(monkeypatch, columns, width):
    monkeypatch.setenv("COLUMNS", columns)
    assert table._width() == width
