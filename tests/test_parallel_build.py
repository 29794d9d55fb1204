"""Many builds at once: compiler.compile_many builds what the cache lacks in worker processes and
takes the rest from the cache; precompile builds a run's plan before the run; sass.listings
caches nvdisasm's listings by the cubin's bytes and the nvdisasm that read them."""

from __future__ import annotations

import os
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from rooflinecli.errors import RooflineError
from rooflinecli.stages import compiler, sass
from rooflinecli.stages import gemm as stages

# A kernel that builds in a fraction of a second; each N is another program (another cubin).
TINY = 'extern "C" __global__ void tiny(float* x) { x[threadIdx.x] = N; }\n'
BROKEN = 'extern "C" __global__ void tiny(float* x) { x[0] = undeclared; }\n'


def tiny_job(n: int, src: str = TINY) -> compiler.Job:
    return compiler.source_job(src, f"tiny{n}", "tiny", "sm_80", {"N": n})


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A compile cache of the test's own: every build here starts cold."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    try:
        compiler.nvrtc_version()
    except RooflineError as exc:
        pytest.skip(str(exc))
    return tmp_path / "cache"


class NoPool:
    """In place of ProcessPoolExecutor where no pool may be started."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("a process pool was started")


def test_builds_in_workers_in_the_jobs_order_with_each_failure_as_its_error(cache):
    jobs = [tiny_job(1), tiny_job(2, BROKEN), tiny_job(3)]
    done: list[int] = []
    got = compiler.compile_many(jobs, workers=2, done=lambda i, result: done.append(i))
    assert sorted(done) == [0, 1, 2]
    assert isinstance(got[0], compiler.Compiled) and isinstance(got[2], compiler.Compiled)
    assert [Path(got[i].cubin_path).name.split("-")[0] for i in (0, 2)] == ["tiny1", "tiny3"]
    assert all(Path(got[i].cubin_path).is_file() for i in (0, 2))
    assert got[0].resources is not None and got[0].resources.registers > 0
    assert isinstance(got[1], RooflineError)
    assert "tiny2.cu does not compile for sm_80" in got[1].message
    # what the workers wrote is what compile_source finds: the same cubin, from the cache
    again = compiler.compile_source(TINY, "tiny1", "tiny", "sm_80", {"N": 1})
    assert again.cubin_path == got[0].cubin_path and again.resources == got[0].resources


def test_the_builds_run_in_the_worker_processes(cache, monkeypatch):
    import multiprocessing

    # spawned workers import the compiler afresh: a build in this process would fail here
    monkeypatch.setattr(compiler, "_context", lambda: multiprocessing.get_context("spawn"))

    def not_here(job):
        raise AssertionError(f"{job.label} built in the parent")

    monkeypatch.setattr(compiler, "_build", not_here)
    got = compiler.compile_many([tiny_job(1), tiny_job(2)], workers=2)
    assert all(isinstance(r, compiler.Compiled) for r in got), got


def test_workers_are_forked_only_where_no_thread_or_cuda_could_hold_a_lock(monkeypatch):
    import sys
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert compiler._context().get_start_method() == "spawn"
    finally:
        stop.set()
        other.join()
    monkeypatch.setitem(sys.modules, "cupy", object())
    assert compiler._context().get_start_method() == "spawn"


def test_all_in_the_cache_starts_no_pool(cache, monkeypatch):
    jobs = [tiny_job(1), tiny_job(2)]
    first = compiler.compile_many(jobs, workers=2)
    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", NoPool)
    assert compiler.compile_many(jobs, workers=2) == first


def test_one_build_or_one_core_builds_here(cache, monkeypatch):
    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", NoPool)
    (one,) = compiler.compile_many([tiny_job(1)], workers=8)
    assert isinstance(one, compiler.Compiled)
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    else:
        monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert compiler.cores() == 1
    two = compiler.compile_many([tiny_job(2), tiny_job(3)])
    assert all(isinstance(r, compiler.Compiled) for r in two)


def test_the_same_build_asked_twice_is_built_once(cache, monkeypatch):
    built: list[str] = []
    real = compiler._work

    def work(job):
        built.append(job.label)
        return real(job)

    monkeypatch.setattr(compiler, "_work", work)
    got = compiler.compile_many([tiny_job(1), tiny_job(1)], workers=1)
    assert built == ["tiny1"] and got[0] == got[1]


def test_a_broken_pool_leaves_the_builds_to_this_process(cache, monkeypatch):
    import concurrent.futures

    class Broken:
        def __init__(self, *args, **kwargs):
            pass

        def submit(self, *args, **kwargs):
            raise BrokenProcessPool("a worker died")

        def shutdown(self, *args, **kwargs):
            pass

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Broken)
    got = compiler.compile_many([tiny_job(1), tiny_job(2, BROKEN)], workers=2)
    assert isinstance(got[0], compiler.Compiled) and Path(got[0].cubin_path).is_file()
    assert isinstance(got[1], RooflineError) and "does not compile" in got[1].message


def test_no_nvrtc_is_every_job_s_error(monkeypatch):
    def missing():
        raise RooflineError("NVRTC is not installed")

    monkeypatch.setattr(compiler, "nvrtc_version", missing)
    got = compiler.compile_many([tiny_job(1), tiny_job(2)])
    assert [r.message for r in got] == ["NVRTC is not installed"] * 2  # type: ignore[union-attr]
    assert compiler.compile_many([]) == []


def test_heavier_builds_go_first():
    light, heavy = tiny_job(1), tiny_job(2, "#pragma unroll\n#pragma unroll\n" + TINY)
    assert heavy.weight == 2 and light.weight == 0
    assert sorted([light, heavy], key=lambda j: -j.weight)[0] is heavy


def test_the_plan_leaves_out_library_calls_old_targets_and_refused_shapes(monkeypatch):
    asked: list[list[str]] = []
    monkeypatch.setattr(
        compiler, "compile_many", lambda jobs, **kw: asked.append([j.label for j in jobs]) or []
    )
    names = ("cublas", "mma_sync", "wgmma_ws", "gemv_naive", "naive_xcol")
    plan = [stages.BY_NAME[n] for n in names]
    compiler.precompile(plan, "sm_80", "fp16", [(4096, 4096, 4096)])
    # cublas: a library call; wgmma_ws: Hopper only; gemv_naive: a decode stage (M = 1..64);
    # naive_xcol: no fp16 build (the run says so where it compiles it)
    assert asked == [["mma_sync-fp16"]]
    compiler.precompile(plan, "sm_90a", "fp16", [(16, 4096, 4096)])
    assert asked[-1] == ["mma_sync-fp16", "wgmma_ws-fp16", "gemv_naive-fp16"]
    extra = tiny_job(1)
    compiler.precompile([], "sm_90a", "fp16", jobs=[extra])
    assert asked[-1] == ["tiny1"]


def test_the_first_jobs_a_run_needs_start_before_the_heaviest(cache):
    light, heavy = tiny_job(4), tiny_job(5, "#pragma unroll\n" + TINY)
    done: list[int] = []
    compiler.compile_many([light, heavy], workers=1, done=lambda i, r: done.append(i))
    assert done == [1, 0]  # heaviest first
    light, heavy = tiny_job(6), tiny_job(7, "#pragma unroll\n" + TINY)
    done.clear()
    compiler.compile_many([light, heavy], workers=1, first=1, done=lambda i, r: done.append(i))
    assert done == [0, 1]  # the one needed first, then the rest


def test_a_build_under_way_in_the_background_is_waited_for_not_built_again(cache, monkeypatch):
    monkeypatch.setattr(compiler, "cores", lambda: 2)  # the builds go to worker processes

    def built_here(*args):
        raise AssertionError("built a second time in the run's own process")

    jobs = [tiny_job(21), tiny_job(22)]
    pre = compiler.precompile([], "sm_80", "fp32", jobs=jobs, background=True)
    assert pre is not None
    monkeypatch.setattr(compiler, "_program_cubin", built_here)
    got = compiler.build(jobs[1])  # waits for the worker's build, then reads the cache
    assert Path(got.cubin_path).is_file() and got.resources is not None
    pre.join()
    assert not compiler._pending
    pre.stop()  # once over, stopping is a no-op
    # everything is in the cache now: nothing left to build in the background
    assert compiler.precompile([], "sm_80", "fp32", jobs=jobs, background=True) is None


def test_a_stopped_prebuild_leaves_the_rest_to_the_run(cache):
    jobs = [tiny_job(30 + i) for i in range(6)]
    pre = compiler.precompile([], "sm_80", "fp32", jobs=jobs, background=True)
    assert pre is not None
    pre.stop()
    assert not compiler._pending  # nobody waits on an abandoned build
    got = compiler.build(jobs[-1])  # built here if the prebuild had not got to it
    assert Path(got.cubin_path).is_file()


def test_a_failed_background_build_fails_again_in_the_run_with_its_message(cache):
    broken = tiny_job(40, BROKEN)
    pre = compiler.precompile([], "sm_80", "fp32", jobs=[broken], background=True)
    assert pre is not None
    with pytest.raises(RooflineError, match="tiny40.cu does not compile for sm_80"):
        compiler.build(broken)
    pre.stop()


def test_a_stage_list_is_built_at_once_each_with_its_result(cache):
    ok, library = stages.BY_NAME["naive_xcol"], stages.BY_NAME["cublas"]
    got = compiler.compile_stages([library, ok], "sm_80", "fp32")
    assert isinstance(got[0], RooflineError) and "library call" in got[0].message
    assert isinstance(got[1], compiler.Compiled) and got[1].stage == "naive_xcol"


# --------------------------------------------------------------------------- listing cache


@pytest.fixture
def fake_tool(tmp_path, monkeypatch):
    """Cubins of made-up bytes, an nvdisasm of our own (only its identity counts here), and the
    runs the listing code would start, counted."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    exe = tmp_path / "nvdisasm"
    exe.write_text("#!/bin/sh\nexit 1\n")
    exe.chmod(0o755)
    runs: list[list[str]] = []

    def one(cubin, nvdisasm=None):
        runs.append([Path(cubin).name])
        return f"listing of {Path(cubin).read_bytes().decode()}\n"

    def many(cubins, nvdisasm=None):
        runs.append([Path(c).name for c in cubins])
        return [f"listing of {Path(c).read_bytes().decode()}\n" for c in cubins]

    monkeypatch.setattr(sass, "disassemble", one)
    monkeypatch.setattr(sass, "disassemble_many", many)

    def cubin(name: str, content: str) -> Path:
        p = tmp_path / name
        p.write_text(content)
        return p

    return exe, runs, cubin


def test_a_listing_is_read_once_then_from_the_cache(fake_tool, tmp_path):
    exe, runs, cubin = fake_tool
    a = cubin("a.cubin", "A")
    assert sass.listing(a, exe) == "listing of A\n"
    assert sass.listing(a, exe) == "listing of A\n"
    assert runs == [["a.cubin"]]
    # the key is the bytes: the same bytes elsewhere are found, other bytes are listed anew
    assert sass.listing(cubin("copy.cubin", "A"), exe) == "listing of A\n"
    a.write_text("A2")
    assert sass.listing(a, exe) == "listing of A2\n"
    assert len(runs) == 2
    # another nvdisasm (an upgrade, a stand-in) lists it again
    other = tmp_path / "nvdisasm2"
    other.write_bytes(exe.read_bytes() + b"# other\n")
    other.chmod(0o755)
    sass.listing(a, other)
    assert len(runs) == 3
    kept = sorted(p.name for p in (tmp_path / "cache" / "sass").iterdir())
    assert len(kept) == 3 and all(name.endswith(".sass") for name in kept)  # no temp files


def test_the_missing_listings_are_dealt_out_to_parallel_runs(fake_tool):
    exe, runs, cubin = fake_tool
    paths = [cubin(f"c{i}.cubin", "x" * (i + 1)) for i in range(5)]
    sass.listing(paths[0], exe)  # cached already
    runs.clear()
    seen: list[int] = []
    texts = sass.listings(paths, exe, workers=2, done=seen.append)
    assert texts == [f"listing of {'x' * (i + 1)}\n" for i in range(5)]
    assert sorted(seen) == [0, 1, 2, 3, 4]
    assert len(runs) == 2 and sorted(sum(runs, [])) == [f"c{i}.cubin" for i in range(1, 5)]
    runs.clear()
    assert sass.listings(paths, exe, workers=2) == texts and runs == []


def test_a_cache_that_cannot_be_written_costs_only_the_time(fake_tool, tmp_path):
    exe, runs, cubin = fake_tool
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "sass").write_text("")  # where the listings would go: a file
    a = cubin("a.cubin", "A")
    assert sass.listing(a, exe) == sass.listing(a, exe) == "listing of A\n"
    assert len(runs) == 2
