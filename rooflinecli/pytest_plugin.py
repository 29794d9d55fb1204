"""A pytest plugin: the `roofline_benchmark` fixture, registered by the `pytest11` entry point.

    def test_matmul(roofline_benchmark):
        rec = roofline_benchmark(lambda: cp.matmul(a, b, out=c), flops=2 * n**3,
                                 bytes=4 * 3 * n * n, shape=(n, n, n))

The fixture is rooflinecli.measure (same keywords; `name` defaults to the test's name): it times
the callable the way `roofline run` times a stage and returns the record. The session keeps every
record and, given `--roofline-output PATH` (or ROOFLINE_BENCHMARK_OUTPUT), ends by writing one
results document of them there (rooflinecli.document, under `--roofline-spec` or the measured
GPU's spec), which `roofline show`, `plot` and `gate` read. Importing this module imports neither
CuPy nor the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from rooflinecli import files

OUTPUT_ENV = "ROOFLINE_BENCHMARK_OUTPUT"
SPEC_ENV = "ROOFLINE_BENCHMARK_SPEC"
_RECORDS = pytest.StashKey[list[dict[str, Any]]]()
_WRITTEN = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roofline", "roofline benchmarks (the roofline_benchmark fixture)")
    group.addoption(
        "--roofline-output",
        metavar="PATH",
        default=None,
        help=f"write one results document of every roofline_benchmark record here "
        f"(default: ${OUTPUT_ENV})",
    )
    group.addoption(
        "--roofline-spec",
        metavar="NAME|PATH",
        default=None,
        help=f"GPU spec the document places the records under (default: ${SPEC_ENV}, else the "
        "spec of the GPU they were measured on)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RECORDS] = []


def _output(config: pytest.Config) -> str | None:
    return config.getoption("roofline_output") or os.environ.get(OUTPUT_ENV) or None


@pytest.fixture
def roofline_benchmark(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """measure() with the test's name as the default name; the session keeps the records."""
    records = request.config.stash[_RECORDS]

    def bench(fn: Callable[[], Any], *, flops: float, name: str | None = None, **kw: Any) -> Any:
        from rooflinecli.api import measure

        rec = measure(fn, flops=flops, name=name or request.node.name, **kw)
        rec["test"] = request.node.nodeid
        records.append(rec)
        return rec

    return bench


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    records = config.stash.get(_RECORDS, [])
    path = _output(config)
    if not records or not path:
        return
    from rooflinecli import api, results
    from rooflinecli.errors import RooflineError

    spec = config.getoption("roofline_spec") or os.environ.get(SPEC_ENV) or None
    try:
        doc = api.document(records, spec=spec, command="pytest roofline_benchmark")
        files.write_atomic(path, results.file_text(doc))
    except (RooflineError, ValueError) as exc:
        config.stash[_WRITTEN] = f"could not write {path}: {exc}"
        if session.exitstatus == 0:  # a CI job must not pass without the document it gates
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    config.stash[_WRITTEN] = f"wrote {path} ({len(records)} records)"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    records = config.stash.get(_RECORDS, [])
    if not records:
        return
    terminalreporter.section("roofline benchmark")
    for r in records:
        tf = r.get("tflops")
        speed = f"{tf:,.2f} TFLOP/s" if tf is not None else "no speed"
        terminalreporter.write_line(
            f"{r['stage']}: {r['time_ms']:.4f} ms median of {r['repeats']}, {speed}"
        )
    written = config.stash.get(_WRITTEN, None)
    terminalreporter.write_line(
        written or f"no document written: pass --roofline-output PATH (or set {OUTPUT_ENV})"
    )
