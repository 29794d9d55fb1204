"""Files a command writes: through symlinks, keeping mode and owner, `-o -`, never over a device,
FIFO, socket or folder, never over a results document without --force, and refused before any
GPU work."""

import json
import os
import socket
import stat
import sys
from contextlib import contextmanager

import children
import pytest

from rooflinecli import files, paths, results
from rooflinecli.cli import cli
from rooflinecli.errors import RooflineError

MODEL = ["model", "gemm", "--m", "64", "--spec", "h100-sxm5", "--format", "csv"]


def _one_line(r, exit_code=2):
    assert r.exit_code == exit_code, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.output
    return lines[0]


def _doc_m(path):
    return paths.read_json(path, "results file")["records"][0]["m"]


def test_new_document_is_an_ordinary_file(runner, tmp_path):
    out = tmp_path / "m.json"
    r = runner.invoke(cli, [*MODEL, "-o", str(out)])
    assert r.exit_code == 0, r.output
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    assert _doc_m(out) == 64
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temp file left


def test_existing_document_needs_force(runner, tmp_path):
    out = tmp_path / "m.json"
    out.write_text("precious")
    line = _one_line(runner.invoke(cli, [*MODEL, "-o", str(out)]))
    assert line == f"error: {out} exists: pass --force to replace it"
    assert out.read_text() == "precious"
    r = runner.invoke(cli, [*MODEL, "-o", str(out), "--force"])
    assert r.exit_code == 0, r.output
    assert _doc_m(out) == 64
    r = runner.invoke(cli, [*MODEL, "--m", "32", "-o", str(out), "-f"])
    assert r.exit_code == 0, r.output
    assert _doc_m(out) == 32


def test_symlink_is_written_through_and_mode_kept(runner, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "m.json"
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    r = runner.invoke(cli, [*MODEL, "-o", str(link), "--force"])
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert _doc_m(target) == 64
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in real.iterdir()) == ["m.json"]


def test_dangling_symlink_creates_its_target(runner, tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "new.json")
    r = runner.invoke(cli, [*MODEL, "-o", str(link)])
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and _doc_m(tmp_path / "new.json") == 64


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_owner_is_kept(runner, tmp_path):
    out = tmp_path / "m.json"
    out.write_text("old")
    os.chown(out, 12345, 23456)
    r = runner.invoke(cli, [*MODEL, "-o", str(out), "--force"])
    assert r.exit_code == 0, r.output
    st = out.stat()
    assert (st.st_uid, st.st_gid) == (12345, 23456)


def test_read_only_file_is_refused(runner, tmp_path, monkeypatch):
    out = tmp_path / "m.json"
    out.write_text("old")
    monkeypatch.setattr(os, "access", lambda path, mode: str(path) != str(out))
    line = _one_line(runner.invoke(cli, [*MODEL, "-o", str(out), "--force"]))
    assert line == f"error: cannot write {out}: permission denied"
    assert out.read_text() == "old"


def test_dash_writes_the_document_to_stdout(runner):
    r = runner.invoke(cli, ["model", "gemm", "--m", "64", "--spec", "h100-sxm5", "-o", "-"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # the document alone: the table went to standard error
    assert doc["schema"] == results.SCHEMA and doc["records"][0]["m"] == 64
    assert "GEMM 64x64x64 fp32, model on NVIDIA H100 SXM5" in r.stderr
    assert sys.stdout is not None and files._claimed_stdout is None  # released


def _special(kind, tmp_path):
    if kind == "character device":
        return "/dev/null"
    path = tmp_path / kind.replace(" ", "_")
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    elif kind == "folder":
        path.mkdir()
    return str(path)


@pytest.mark.parametrize("kind", ["character device", "FIFO", "socket", "folder"])
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_special_files_are_refused_and_never_touched(runner, tmp_path, kind, force):
    path = _special(kind, tmp_path)
    before = os.stat(path)
    line = _one_line(runner.invoke(cli, [*MODEL, "-o", path, *force]))
    assert line.startswith(f"error: cannot write {path}: it is a {kind}")
    after = os.stat(path)
    assert (after.st_ino, after.st_mode, after.st_mtime_ns) == (
        before.st_ino,
        before.st_mode,
        before.st_mtime_ns,
    )


def test_symlink_to_a_device_is_refused(runner, tmp_path):
    link = tmp_path / "full.json"
    link.symlink_to("/dev/full")
    line = _one_line(runner.invoke(cli, [*MODEL, "-o", str(link), "--force"]))
    assert line == (
        f"error: cannot write {link}: it is a character device (-o - writes to standard output)"
    )
    assert link.is_symlink()


NO_GPU_COMMANDS = [
    ["run", "gemm", "--m", "64"],
    ["run", "llm", "--batch", "1"],
    ["tune", "gemm", "--stage", "double_buffer"],
    ["profile", "gemm", "--m", "64"],
    ["model", "gemm", "--m", "64"],
    ["model", "llm"],
]


@pytest.mark.parametrize("args", NO_GPU_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_output_is_checked_before_any_work(runner, tmp_path, monkeypatch, args):
    monkeypatch.setitem(sys.modules, "cupy", None)  # a GPU run would fail: no CUDA device
    out = tmp_path / "r.json"
    out.write_text("precious")
    line = _one_line(runner.invoke(cli, [*args, "-o", str(out)]))
    assert line == f"error: {out} exists: pass --force to replace it"
    line = _one_line(runner.invoke(cli, [*args, "-o", "/dev/full", "--force"]))
    assert line.startswith("error: cannot write /dev/full: it is a character device")
    assert out.read_text() == "precious"


def test_plot_and_gate_outputs_refuse_devices_first(runner, tmp_path):
    folder = tmp_path / "r.png"
    folder.mkdir()
    line = _one_line(runner.invoke(cli, ["plot", "missing.json", "-o", str(folder)]))
    assert line == f"error: cannot write {folder}: it is a folder"
    fifo = tmp_path / "junit.xml"
    os.mkfifo(fifo)
    line = _one_line(runner.invoke(cli, ["gate", "missing.json", "--junit", str(fifo)]))
    assert line == f"error: cannot write {fifo}: it is a FIFO"


def test_no_clobber_even_when_a_file_appears_after_the_check(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    out.write_text("appeared meanwhile")
    monkeypatch.setattr(files, "check_output", lambda *a, **k: None)
    with pytest.raises(RooflineError, match="exists: pass --force"):
        files.write_output(out, "new")
    assert out.read_text() == "appeared meanwhile"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_write_atomic_refuses_a_device(tmp_path):
    with pytest.raises(RooflineError, match="not a regular file"):
        files.write_atomic("/dev/null", "x")


# --------------------------------------------------------------------------- temporary files

# A child that writes 1 MB through the writer and stops in the middle (in fsync, once the data
# is in its temporary file), saying so, until it is killed; it leaves by itself after 60 s or
# as soon as the test process is gone, whichever comes first.
STOPS_MID_WRITE = r"""
import os, sys, time
from rooflinecli import files
parent = os.getppid()
def stop(fd):
    print("writing", flush=True)
    until = time.monotonic() + 60
    while os.getppid() == parent and time.monotonic() < until:
        time.sleep(0.05)
    os._exit(3)
os.fsync = stop
files.write_output(sys.argv[1], "x" * 1_000_000, force=True)
"""


def _temps(folder, name="baseline.json"):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}.roofline-tmp-"))


@contextmanager
def _stopped_mid_write(target):
    """The child above, stopped mid-write (tests/children.py: default signal actions, and
    killed when the test ends whatever happened)."""
    import subprocess

    args = [sys.executable, "-c", STOPS_MID_WRITE, str(target)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL, "text": True}
    with children.started(args, **pipes) as child:
        assert child.stdout is not None and child.stdout.readline() == "writing\n"
        yield child


def test_sigkill_leaves_a_named_temporary_file_that_the_next_write_removes(tmp_path):
    import signal

    target = tmp_path / "baseline.json"
    with _stopped_mid_write(target) as child:
        assert _temps(tmp_path) == [f".baseline.json.roofline-tmp-{child.pid}"]
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    (left,) = _temps(tmp_path)  # a dead process's file: nothing removed it
    assert (tmp_path / left).stat().st_size == 1_000_000 and not target.exists()
    files.write_output(target, "new", force=True)  # the next write beside it cleans it
    assert _temps(tmp_path) == [] and target.read_text() == "new"


@pytest.fixture(params=["default", "ignored"])
def inherited(request):
    """The signal state the suite runs under: a terminal's (default actions), or a background
    job's (`make test &`: SIGINT and SIGQUIT ignored) with SIGHUP ignored too (nohup)."""
    import signal

    if request.param == "default":
        yield request.param
        return
    names = ("SIGINT", "SIGQUIT", "SIGHUP")
    before = {name: signal.signal(getattr(signal, name), signal.SIG_IGN) for name in names}
    try:
        yield request.param
    finally:
        for name, handler in before.items():
            signal.signal(getattr(signal, name), handler)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_mid_write_removes_the_temporary_file_at_once(tmp_path, signame, inherited):
    import signal

    target = tmp_path / "baseline.json"
    with _stopped_mid_write(target) as child:
        child.send_signal(getattr(signal, signame))
        rc = child.wait(timeout=60)
    assert _temps(tmp_path) == [] and not target.exists()
    # the signal still ends the process, as it would have without the writer (SIGINT through
    # KeyboardInterrupt, which unwound through the writer's `finally`)
    assert rc == -getattr(signal, signame)


def test_a_child_stopped_mid_write_is_gone_when_its_test_fails(tmp_path):
    target = tmp_path / "baseline.json"
    with pytest.raises(RuntimeError, match="a test that fails"):
        with _stopped_mid_write(target) as child:
            pid = child.pid
            assert children.alive(pid)
            raise RuntimeError("a test that fails while its child waits")
    assert not children.alive(pid)


def test_a_live_process_temporary_file_is_left_alone(tmp_path):
    import signal

    target = tmp_path / "baseline.json"
    with _stopped_mid_write(target) as child:
        files.write_output(target, "mine", force=True)  # beside a write still under way
        assert _temps(tmp_path) == [f".baseline.json.roofline-tmp-{child.pid}"]
        assert target.read_text() == "mine"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)


def test_stale_files_of_other_targets_and_other_names_are_left_alone(tmp_path):
    target = tmp_path / "a.json"
    dead = 2**22 + 12345  # past pid_max's default: no such process
    keep = [
        f".b.json.roofline-tmp-{dead}",  # another target's
        f".a.json.roofline-tmp-{dead}.bak",  # not a name the writer makes
        ".a.json.12345.tmp",  # someone else's naming
    ]
    for name in [*keep, f".a.json.roofline-tmp-{dead}", f".a.json.roofline-tmp-{dead}-2"]:
        (tmp_path / name).write_text("stale")
    files.write_atomic(target, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*keep, "a.json"])


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    def boom(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(RooflineError, match="Input/output error"):
        files.write_output(tmp_path / "r.json", "data")
    assert list(tmp_path.iterdir()) == []
