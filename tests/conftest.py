"""Shared set-up: a CLI runner, one compile cache per test session, and the kernels the suite
compiles, each built once, in a helper process, while the tests that need none of them run.

Compiling is most of the suite's time: NVRTC, and nvdisasm (~0.5 s of start-up a cubin). A test
marked `prebuild(...)` names what it compiles (and disassembles). A helper process
(tests/_prebuild.py) builds what the selected tests name, the heaviest builds first, in as many
worker processes as there are cores, into the session's compile cache, and caches their
listings there (the tool's own listing cache). Where the whole suite runs (`make test`), it
starts before collection on a guess at the first tier's builds (tiers.first_tier_builds), since
collecting takes ~4.5 s of one core, and is told what the tests really need once they are
collected. A marked test waits for its kernels, then makes its usual calls
(compiler.compile_stage, sass.analyze_cubin, the CLI), which find them there. Prebuilding is
only a warm-up: a kernel that fails to build in the helper fails again, with its message, in
the test that compiles it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

# The tool imports NumPy, pandas and rich on first use; pytester's in-process runs
# (test_pytest_plugin) put sys.modules back as they found it, after which NumPy's extension
# cannot load again and rich's classes would be loaded twice: load them before any test runs.
import numpy  # noqa: F401
import pandas  # noqa: F401
import pytest
import rich.console  # noqa: F401
import rich.table  # noqa: F401
from click.testing import CliRunner
from skips import skip_summary

from rooflinecli.paths import data_dir
from rooflinecli.stages import attention, compiler, sass
from rooflinecli.stages import gemm as stages

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
HELPER = Path(__file__).with_name("_prebuild.py")
FAKE_NCU = Path(__file__).parent / "fixtures" / "ncu" / "fake_ncu.py"
WAIT_S = 600  # for one kernel; past that the test compiles it itself


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "prebuild(*kernels, arch='sm_90a', dtype=None, sass=False, head_dim=None, params=None): "
        "kernels the test compiles (registry stages, attention stages for a head_dim, with "
        "params overriding their config's, or names of calibration kernels) for arch and dtype "
        "(None: the stage's own), disassembled when sass=True; built for the session in a "
        "helper process",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that compile nothing first; then those marked prebuild, each after the last of
    its builds in the order the tests first name them, ties in their own order. The helper
    builds while the former run (the heaviest builds first: `weight`); then each marked test
    runs as soon as its kernels are built, rather than all the compile checks first and the SASS
    checks of the same kernels after the last build, on one core, while the other idles."""
    place: dict[tuple[Any, ...], int] = {}
    last: dict[str, int] = {}
    for item in items:
        last[item.nodeid] = -1
        for mark in item.iter_markers("prebuild"):
            for kernel in mark.args:
                key = _describe(kernel, mark.kwargs.get("arch", "sm_90a"), mark.kwargs)[0]
                last[item.nodeid] = max(last[item.nodeid], place.setdefault(key, len(place)))
    items.sort(key=lambda item: last[item.nodeid])


def weight(kernel: object) -> int:
    """A kernel's likely build time, roughly: the `#pragma unroll`s in its source. NVVM and
    ptxas spend their time on unrolled loops: the first tier's kernels with 23 or more take 2-5 s
    of CPU each, those with under 10 take under 1 s. The helper builds the heaviest first, so
    that none is left alone at the end with a core idle beside it."""
    if isinstance(kernel, str):
        from rooflinecli.gpu.calibrate import kernel_source

        source = kernel_source(kernel)
    else:
        file = kernel.file  # type: ignore[attr-defined]  # a stage or an attention stage
        source = (data_dir("kernels") / file).read_text()
    return source.count("#pragma unroll")


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env=ENV)


class Prebuilt:
    """The helper process, the jobs it was given and those it has finished."""

    def __init__(self, cache: Path, workers: int) -> None:
        self.cache, self.workers = cache, workers
        self.jobs: list[dict[str, Any]] = []
        self.ids: dict[tuple[Any, ...], int] = {}
        self.done: list[threading.Event] = []
        self.needed: list[int] = []  # what the collected tests name, in the order they need it
        self.sassed: set[int] = set()
        self.sent = 0  # jobs the helper has been told of
        self.guessed = 0  # of which a guess, before collection
        self.proc: subprocess.Popen[str] | None = None
        self.reader: threading.Thread | None = None
        self.stopped_early = False
        self.started = self.finished = 0.0
        self.cpu: float | None = None

    def _ids(self, mark: pytest.Mark, add: bool = False) -> list[int]:
        unknown = set(mark.kwargs) - {"arch", "dtype", "sass", "head_dim", "params"}
        assert not unknown, f"prebuild takes arch, dtype, sass, head_dim and params, not {unknown}"
        arch = mark.kwargs.get("arch", "sm_90a")
        out = []
        for kernel in mark.args:
            key, job = _describe(kernel, arch, mark.kwargs)
            if key not in self.ids:
                if not add:
                    continue  # no selected test asked for it: whoever needs it compiles it
                self.ids[key] = len(self.jobs)
                self.jobs.append({**job, "id": len(self.jobs), "weight": weight(kernel)})
                self.done.append(threading.Event())
            out.append(self.ids[key])
        return out

    def start(self, guess: Iterable[tuple[object, dict[str, Any]]] = ()) -> None:
        """The helper, on the guessed builds (tiers.first_tier_builds) while pytest collects."""
        for kernel, kwargs in guess:
            self._ids(pytest.mark.prebuild(kernel, **kwargs).mark, add=True)
            self.guessed = len(self.jobs)
        task = {"path": sys.path, "workers": self.workers, "jobs": self.jobs}
        self.sent = len(self.jobs)
        self.started = time.perf_counter()
        with open(self.cache.parent / "prebuild.log", "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(HELPER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, text=True, process_group=0,  # a process group of its own: see _kill
            )  # fmt: skip
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()
        self.reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self.reader.start()

    def collected(self, items: Iterable[pytest.Item]) -> None:
        """What the selected tests name, in their order: the helper's second line."""
        for item in items:
            for mark in item.iter_markers("prebuild"):
                ids = self._ids(mark, add=True)
                self.needed += [i for i in ids if i not in self.needed]
                if mark.kwargs.get("sass", False):
                    self.sassed.update(ids)
        if not self.needed and self.proc is None:
            return
        if self.proc is None:
            self.start()
        assert self.proc is not None and self.proc.stdin
        msg = {"jobs": self.jobs[self.sent :], "order": self.needed, "sass": sorted(self.sassed)}
        self.sent = len(self.jobs)
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.close()

    def _read(self, out: IO[str]) -> None:
        for line in out:
            word, _, value = line.partition(" ")
            if word == "done":
                self.done[int(value)].set()
            elif word == "cpu":
                self.cpu = float(value)
        self.finished = time.perf_counter()
        for event in self.done:  # the helper is gone: nobody waits for it any longer
            event.set()

    def wait(self, *marks: pytest.Mark | pytest.MarkDecorator) -> None:
        """Until the helper is done with what these prebuild marks name."""
        for mark in marks:
            for i in self._ids(mark if isinstance(mark, pytest.Mark) else mark.mark):
                self.done[i].wait(WAIT_S)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()  # never told what the tests need (collection failed)
        if not all(self.done[i].is_set() for i in self.needed):
            self.stopped_early = True  # the session ended first (-x, ^C, a skipped test)
            self._kill()
        try:
            self.proc.wait(10)  # done: it reports its CPU time and exits
        except subprocess.TimeoutExpired:
            self._kill()
            self.proc.wait()
        if self.reader is not None:
            self.reader.join(10)
        assert self.proc.stdout
        if self.reader is None or not self.reader.is_alive():  # else close() would wait for it
            self.proc.stdout.close()

    def _kill(self) -> None:
        """The helper, its worker processes and their nvdisasm runs: its process group. A worker
        left running holds the helper's stdout open, and the reader would wait for it."""
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # all gone already

    def summary(self) -> str | None:
        if self.proc is None:
            return None
        if self.stopped_early:
            return "prebuild helper stopped: the session ended before it"
        if self.proc.returncode:
            return (
                f"prebuild helper exited with {self.proc.returncode}: "
                f"see {self.cache.parent / 'prebuild.log'}"
            )
        cpu = f", {self.cpu:.1f} s of CPU" if self.cpu is not None else ""
        took = self.finished - self.started
        guessed = ""
        if self.guessed:
            missed = sum(i >= self.guessed for i in self.needed)
            dropped = len(self.jobs) - len(self.needed)
            guessed = f"; started on a guess of {self.guessed}: {missed} more needed, {dropped} not"
        return (
            f"prebuilt {len(self.needed)} kernels ({len(self.sassed)} disassembled) on "
            f"{self.workers} worker processes of a helper: {took:.1f} s{cpu}{guessed}"
        )


def _describe(kernel: object, arch: str, kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict]:
    """(what identifies the cubin, the helper's job) for a registry stage, an attention stage or
    a calibration kernel."""
    dtype = kwargs.get("dtype")
    if isinstance(kernel, attention.AttentionStage):
        assert attention.ATTENTION_BY_NAME.get(kernel.name) is kernel, kernel.name
        head_dim, params = kwargs["head_dim"], dict(kwargs.get("params") or {})
        assert dtype in kernel.dtypes and head_dim in kernel.configs, (kernel.name, dtype, head_dim)
        defines = {**kernel.defines(dtype, head_dim), **params}
        key = ("attention", kernel.file, arch, tuple(defines.items()))
        return key, {"kind": "attention", "name": kernel.name, "params": params, "arch": arch,
                     "dtype": dtype, "head_dim": head_dim}  # fmt: skip
    assert "head_dim" not in kwargs and "params" not in kwargs, "head_dim, params: attention only"
    if isinstance(kernel, str):
        from rooflinecli.gpu.calibrate import KERNELS

        assert kernel in KERNELS, f"{kernel}: not a calibration kernel"
        return ("calibration", kernel, arch), {"kind": "calibration", "name": kernel,
                                               "arch": arch, "dtype": None}  # fmt: skip
    assert isinstance(kernel, stages.Stage), kernel
    base = stages.BY_NAME.get(kernel.name)
    assert base is not None and base.file == kernel.file, f"{kernel.name}: not a registry stage"
    params = {k: v for k, v in kernel.params.items() if base.params.get(k) != v}
    dtype = dtype or kernel.dtype
    key = ("stage", kernel.file, kernel.entry, compiler.options_for(kernel, arch, dtype))
    return key, {"kind": "stage", "name": kernel.name, "params": params, "arch": arch,
                 "dtype": dtype}  # fmt: skip


class Listings:
    """nvdisasm once per cubin of the session's cache: the listing the helper (or a test before)
    left in the tool's listing cache (sass.cached_listing), else nvdisasm's, cached there."""

    def __init__(self, prebuilt: Prebuilt) -> None:
        self.cache = prebuilt.cache.resolve()
        self.disassemble_now = sass.disassemble

    def disassemble(self, cubin: str | Path, nvdisasm: Path | None = None) -> str:
        path = Path(cubin).resolve()
        if not path.is_file() or not path.is_relative_to(self.cache):
            return self.disassemble_now(cubin, nvdisasm)
        exe = nvdisasm or sass.find_nvdisasm()  # as disassemble() would: the env var, the wheel
        text = sass.cached_listing(path, exe)
        if text is None:
            text = self.disassemble_now(cubin, exe)
            sass.store_listing(path, text, exe)
        return text


_PREBUILT = pytest.StashKey[tuple[Prebuilt, pytest.MonkeyPatch]]()
_SUMMARY = pytest.StashKey[str | None]()


def _whole_suite(config: pytest.Config) -> bool:
    """A run of the test paths as configured, by tier (`make test`, plain pytest): the guess at
    its builds is worth starting before collection; a narrower run collects what it needs."""
    return (
        config.args_source == pytest.Config.ArgsSource.TESTPATHS
        and not config.option.keyword
        and config.option.markexpr in ("", "not matrix")
        and not config.option.collectonly
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    """The session's compile cache (never the user's), and the helper that fills it, started
    before collection on a guess where the whole first tier runs (tiers.first_tier_builds)."""
    config = session.config
    cache = config._tmp_path_factory.getbasetemp() / "cache"  # the tmp_path_factory fixture's
    cache.mkdir(exist_ok=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mp = pytest.MonkeyPatch()
    mp.setenv("ROOFLINE_CACHE_DIR", str(cache))
    pre = Prebuilt(cache, max(2, min(8, cores or 2)))
    config.stash[_PREBUILT] = (pre, mp)
    if _whole_suite(config):
        from tiers import first_tier_builds

        pre.start(first_tier_builds())


def pytest_collection_finish(session: pytest.Session) -> None:
    if not session.config.option.collectonly:  # nothing will run
        session.config.stash[_PREBUILT][0].collected(session.items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    pre, mp = session.config.stash[_PREBUILT]
    pre.stop()
    mp.undo()
    session.config.stash[_SUMMARY] = pre.summary()


@pytest.fixture(scope="session", autouse=True)
def prebuilt(request: pytest.FixtureRequest) -> Iterator[Prebuilt]:
    """The session's helper, and its listings in place of nvdisasm's own runs."""
    pre = request.config.stash[_PREBUILT][0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sass, "disassemble", Listings(pre).disassemble)
        yield pre


@pytest.fixture(scope="session")
def session_cache(prebuilt: Prebuilt) -> Path:
    return prebuilt.cache


@pytest.fixture(scope="session")
def ncu_stand_in(tmp_path_factory) -> Path:
    """An executable that runs tests/fixtures/ncu/fake_ncu.py (ROOFLINE_NCU points at it) with
    this interpreter and without `site` (it needs only the standard library). Its own shebang
    finds whatever python3 is first on PATH: a pyenv shim there is a shell script that costs
    about 0.2 s a start, and one `profile app` run starts ncu four times; this costs 0.03 s."""
    exe = tmp_path_factory.mktemp("ncu") / "ncu"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "{FAKE_NCU}" "$@"\n')
    exe.chmod(0o755)
    return exe


@pytest.fixture(autouse=True)
def _cache(request: pytest.FixtureRequest, prebuilt: Prebuilt, monkeypatch) -> None:
    """Each test starts with the session's cache, whatever the one before it set, holding what
    its prebuild marks name."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(prebuilt.cache))
    prebuilt.wait(*request.node.iter_markers("prebuild"))


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """Under -q a skipped test prints no 's' in the progress line (about 200 of them said
    nothing a reader could act on): the summary says how many, and why, in one line
    (pytest_terminal_summary), and -rs lists each. An expected failure keeps its mark."""
    if report.skipped and config.get_verbosity() <= 0 and not hasattr(report, "wasxfail"):
        return "skipped", "", "SKIPPED"
    return None


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    line = config.stash.get(_SUMMARY, None)
    if line:
        terminalreporter.write_line(line)
    line = skip_summary(terminalreporter.stats.get("skipped", []))
    if line:  # -rs lists each skipped test with its reason; this is one line for all of them
        terminalreporter.write_line(line)
