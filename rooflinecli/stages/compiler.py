"""Compile stages with NVRTC (from PyPI, through cuda-bindings): no GPU, no driver needed.

One compile path for everything: the runner loads the very cubin whose resource report
(registers, shared memory, spills) this module parses. Every program gets -I kernels/include (the
PTX wrappers: ptx_sm80.cuh, one header per operation in sm90/ and sm70/, and ptx_sm90.cuh that
includes them all). Cubins are cached on disk, keyed by source, options, NVRTC version and the
content of every header under it, so a stage is compiled once.

Many builds at once (compile_many, precompile) run in worker processes, as many as there are
cores: NVRTC compiles one program at a time within a process (two threads take as long as one),
and a run's stages are otherwise compiled one after another while the other cores idle. Each
worker writes the cache; the parent reads what they built from it. A run builds in the
background (precompile(background=True)) while it times the stages already built: a compile
of a build under way there waits for it instead of building it a second time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rooflinecli import files
from rooflinecli.errors import RooflineError
from rooflinecli.paths import cache_dir, data_dir
from rooflinecli.stages.gemm import Stage, cannot_run

_ARCH_RE = re.compile(r"^sm_(\d{2,3})a?$")


def arch_for_cc(cc: str | tuple[int, int]) -> str:
    """The NVRTC target for a compute capability: the arch-specific 'a' target on Hopper."""
    major, minor = (int(x) for x in cc.split(".")) if isinstance(cc, str) else cc
    base = f"sm_{major}{minor}"
    return base + "a" if (major, minor) in ((9, 0), (10, 0)) else base


def cc_of_arch(arch: str) -> int:
    """sm_90a -> 90."""
    m = _ARCH_RE.match(arch)
    if not m:
        raise RooflineError(f"bad --arch {arch!r}: expected e.g. sm_80, sm_90a")
    return int(m.group(1))


@dataclass(frozen=True)
class Resources:
    registers: int
    smem_static_bytes: int
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes


@dataclass(frozen=True)
class Compiled:
    stage: str
    entry: str
    arch: str
    options: tuple[str, ...]
    cubin_path: str
    log: str
    # None when NVRTC gave no ptxas report (a compute-cache hit): read the loaded function then
    resources: Resources | None
    nvrtc_version: str


def _nvrtc():  # type: ignore[no-untyped-def]
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise RooflineError(
            "NVRTC is not installed: pip install 'roofline[compile]' "
            f"(cuda-bindings + nvidia-cuda-nvrtc) ({exc})"
        ) from None
    return nvrtc


def nvrtc_version() -> str:
    nvrtc = _nvrtc()
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as exc:  # the bindings load libnvrtc lazily: a missing library shows here
        raise RooflineError(
            f"NVRTC library not found: pip install nvidia-cuda-nvrtc ({exc})"
        ) from None
    return f"{major}.{minor}"


def _check(nvrtc, result, what: str) -> None:  # type: ignore[no-untyped-def]
    err = result[0] if isinstance(result, tuple) else result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RooflineError(f"NVRTC {what} failed: {err}")


def _program_log(nvrtc, prog) -> str:  # type: ignore[no-untyped-def]
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if size <= 1:  # empty (just the NUL); never hand NVRTC a shared 1-byte bytes object
        return ""
    buf = b" " * size  # a fresh bytes object of this length: NVRTC writes into it
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.decode(errors="replace").rstrip("\x00").strip()


def _program_cubin(nvrtc, prog) -> bytes:  # type: ignore[no-untyped-def]
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    buf = b"\0" * size
    _check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, buf), "cubin retrieval")
    return buf


def parse_ptxas(log: str, entry: str) -> Resources:
    """Registers, shared memory and spills of `entry` from ptxas -v output."""
    block = log
    marker = f"Function properties for {entry}"
    if marker in log:
        block = log[log.index(marker) :]
        nxt = block.find("Function properties for", len(marker))
        block = block if nxt < 0 else block[:nxt]

    def grab(pattern: str) -> int:
        m = re.search(pattern, block)
        return int(m.group(1)) if m else 0

    m = re.search(r"Used (\d+) registers", block)
    if not m:
        raise RooflineError(f"no register count for {entry} in the ptxas report")
    return Resources(
        registers=int(m.group(1)),
        smem_static_bytes=grab(r"(\d+) bytes smem"),
        stack_frame_bytes=grab(r"(\d+) bytes stack frame"),
        spill_store_bytes=grab(r"(\d+) bytes spill stores"),
        spill_load_bytes=grab(r"(\d+) bytes spill loads"),
    )


def source_of(stage: Stage) -> str:
    if stage.file is None:
        raise RooflineError(f"stage {stage.name} is a library call: nothing to compile")
    path = data_dir("kernels") / stage.file
    try:
        return path.read_text()
    except OSError as exc:
        raise RooflineError(f"cannot read kernel source {path}: {exc.strerror}") from None


def include_dir() -> Path:
    """kernels/include: the headers stages, user stages and calibration kernels include."""
    return data_dir("kernels") / "include"


def headers_digest() -> str:
    """SHA-256 over the path and content of every file under include_dir(), its subfolders
    (sm90/, sm70/, ...) too: a header edit recompiles everything (the cache key holds it)."""
    h = hashlib.sha256()
    root = include_dir()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(f"{p.relative_to(root).as_posix()}\0{p.stat().st_size}\0".encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _base_options(arch: str) -> tuple[str, ...]:
    cc_of_arch(arch)
    return (f"-arch={arch}", "-std=c++17", "-Xptxas=-v", "-lineinfo", f"-I{include_dir()}")


def options_for(stage: Stage, arch: str, dtype: str | None = None) -> tuple[str, ...]:
    return (*_base_options(arch), *stage.defines(dtype))


@dataclass(frozen=True)
class Job:
    """One NVRTC build: the source, the name it is compiled under, the kernel whose resources are
    read, the target and the options. Plain strings only, so a worker process can take it."""

    src: str
    filename: str
    label: str  # names the cache file
    name: str
    entry: str
    arch: str
    opts: tuple[str, ...]
    use_cache: bool = True

    @property
    def weight(self) -> int:
        """Roughly how long it builds: NVVM and ptxas spend their time on unrolled loops (the
        kernels with 23 or more `#pragma unroll`s take 2-5 s of CPU each, those with under 10
        under 1 s). The heaviest go first, so that none is left alone at the end."""
        return self.src.count("#pragma unroll")


def stage_job(stage: Stage, arch: str, dtype: str | None = None, use_cache: bool = True) -> Job:
    """The build of a stage for `arch` (e.g. sm_90a) and dtype (default: the stage's own)."""
    if stage.entry is None:
        raise RooflineError(f"stage {stage.name} is a library call: nothing to compile")
    dtype = dtype or stage.dtype
    if dtype not in stage.all_dtypes:
        raise RooflineError(f"stage {stage.name} does not build for {dtype}")
    return Job(
        source_of(stage),
        filename=str(stage.file),
        label=f"{stage.name}-{dtype}",
        name=stage.name,
        entry=stage.entry,
        arch=arch,
        opts=options_for(stage, arch, dtype),
        use_cache=use_cache,
    )


def source_job(
    src: str,
    name: str,
    entry: str,
    arch: str,
    defines: dict[str, int | str] | None = None,
    use_cache: bool = True,
) -> Job:
    """The build of CUDA source that is not a stage (calibration kernels): `name` labels the
    cache file, `entry` is the kernel whose resources are parsed."""
    defs = tuple(f"-D{k}={v}" for k, v in (defines or {}).items())
    opts = (*_base_options(arch), *defs)
    return Job(src, f"{name}.cu", name, name, entry, arch, opts, use_cache)


def util_job(
    file: str, name: str, entry: str, arch: str, defines: dict[str, int | str] | None = None
) -> Job:
    """The build of one of the kernels the tool runs around the stages (kernels/util/FILE: the
    runner's checks, the timer's hold and flush, the transpose), labelled `name` in the cache."""
    path = data_dir("kernels") / "util" / file
    try:
        src = path.read_text()
    except OSError as exc:
        raise RooflineError(f"cannot read kernel source {path}: {exc.strerror}") from None
    return source_job(src, name, entry, arch, defines)


def compile_stage(
    stage: Stage, arch: str, dtype: str | None = None, use_cache: bool = True
) -> Compiled:
    """Compile a stage for `arch` (e.g. sm_90a) and dtype to a cubin, or take it from the cache."""
    return _build(stage_job(stage, arch, dtype, use_cache))


def build(job: Job) -> Compiled:
    """A job's cubin: from the cache, from a background prebuild under way, or built here."""
    return _build(job)


def compile_source(
    src: str,
    name: str,
    entry: str,
    arch: str,
    defines: dict[str, int | str] | None = None,
    use_cache: bool = True,
) -> Compiled:
    """Compile CUDA source that is not a stage (calibration kernels) to a cubin, cached like a
    stage: `name` labels the cache file, `entry` is the kernel whose resources are parsed."""
    return _build(source_job(src, name, entry, arch, defines, use_cache))


def cache_key(src: str, opts: tuple[str, ...], version: str, filename: str, entry: str) -> str:
    """What a cached cubin depends on: source, options, NVRTC version, name, entry, headers."""
    parts = [src, opts, version, filename, entry, headers_digest()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _cubin_path(job: Job, version: str) -> Path:
    key = cache_key(job.src, job.opts, version, job.filename, job.entry)
    return cache_dir() / "kernels" / f"{job.label}-{job.arch}-{key[:24]}.cubin"


def _compiled(
    job: Job, cubin_path: Path, version: str, log: str, res: Resources | None
) -> Compiled:
    return Compiled(job.name, job.entry, job.arch, job.opts, str(cubin_path), log, res, version)


def _cached(job: Job, version: str) -> Compiled | None:
    """The job's build from the cache, None when it is not there (or is damaged)."""
    cubin_path = _cubin_path(job, version)
    meta_path = cubin_path.with_suffix(".json")
    if not (job.use_cache and cubin_path.is_file() and meta_path.is_file()):
        return None
    try:
        meta = json.loads(meta_path.read_text())
        res = meta["resources"]
        return _compiled(job, cubin_path, version, meta["log"], Resources(**res) if res else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged cache entry is rebuilt


# builds under way in a background prebuild (Prebuild): set once each is over
_pending: dict[Job, threading.Event] = {}


def _build(job: Job, wait: bool = True) -> Compiled:
    """NVRTC to a cubin in the cache (keyed by source, options, NVRTC version and headers).
    With `wait`, a build under way in a background prebuild is waited for and taken from the
    cache; one that failed there is built here, where its error is raised."""
    under_way = _pending.get(job) if wait else None
    if under_way is not None:
        under_way.wait()
    version = nvrtc_version()
    hit = _cached(job, version)
    if hit is not None:
        return hit
    cubin_path = _cubin_path(job, version)
    filename, arch = job.filename, job.arch
    nvrtc = _nvrtc()
    # NVRTC 13.0 keeps its own compute cache; a cache hit returns an empty ptxas log and we
    # would lose the resource report. Our cache above makes NVRTC's unnecessary.
    os.environ.setdefault("CUDA_CACHE_DISABLE", "1")
    err, prog = nvrtc.nvrtcCreateProgram(job.src.encode(), filename.encode(), 0, [], [])
    _check(nvrtc, err, "program creation")
    try:
        enc = [o.encode() for o in job.opts]
        result = nvrtc.nvrtcCompileProgram(prog, len(enc), enc)
        log = _program_log(nvrtc, prog)
        if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            first = next((ln for ln in log.splitlines() if "error" in ln), log[:300])
            raise RooflineError(f"{filename} does not compile for {arch}: {first.strip()}")
        cubin = _program_cubin(nvrtc, prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)

    resources = parse_ptxas(log, job.entry) if "registers" in log else None
    cubin_path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(cubin_path, cubin)
    meta = {"log": log, "resources": asdict(resources) if resources else None}
    files.write_atomic(cubin_path.with_suffix(".json"), json.dumps(meta))
    return _compiled(job, cubin_path, version, log, resources)


def cores() -> int:
    """The processors this process may run on (its affinity, where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _work(job: Job) -> Compiled | str:
    """In a worker process: the build, or the one line that says why it failed (an exception
    travels back as text: the parent makes it a RooflineError again)."""
    try:
        return _build(job, wait=False)
    except RooflineError as exc:
        return exc.message


def _worker_start() -> None:
    """A worker leaves Ctrl-C to the parent, which stops it (_stop): no traceback of its own."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool: Any) -> None:
    """End the workers of a pool now, their builds unfinished (the cache holds only whole
    files: each is written to a temporary file and renamed)."""
    if pool is None:
        return
    pool.shutdown(wait=False, cancel_futures=True)
    # the executor has no public way to end a running call; its processes are these
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _context():  # type: ignore[no-untyped-def]
    """How workers start: forked where that is safe and cheapest (a process with one thread,
    no CUDA loaded: the fork copies no lock another thread holds), else spawned (a fresh
    interpreter: about 0.25 s to import this module and NVRTC)."""
    import multiprocessing
    import threading

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1 and "cupy" not in sys.modules:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


Done = Callable[[int, "Compiled | RooflineError"], None]


def compile_many(
    jobs: Sequence[Job],
    workers: int | None = None,
    done: Done | None = None,
    first: int = 0,
    stop: threading.Event | None = None,
) -> list[Compiled | RooflineError]:
    """Every job built, or the RooflineError that says why it does not build, in the jobs'
    order. What the cache holds is taken from it; the rest is built in up to `workers` worker
    processes (default: one per core), the heaviest first, or here when one process would do
    (one build, one core). `done(i, result)` is called here as each job is over, in the order
    they finish. `first`: that many of the jobs, in their order, start before the heaviest (a
    run needs its first stages first). `stop` set: the builds under way are abandoned and
    what is left is not built (the jobs left have None)."""
    out: list[Compiled | RooflineError | None] = [None] * len(jobs)

    def finish(i: int, result: Compiled | RooflineError) -> None:
        out[i] = result
        if done is not None:
            done(i, result)

    if not jobs:
        return []
    try:
        version = nvrtc_version()
    except RooflineError as exc:  # no NVRTC: every job says so
        for i in range(len(jobs)):
            finish(i, exc)
        return list(out)  # type: ignore[arg-type]
    todo: dict[Job, list[int]] = {}  # the same build asked for twice is built once
    for i, job in enumerate(jobs):
        hit = _cached(job, version)
        if hit is not None:
            finish(i, hit)
        else:
            todo.setdefault(job, []).append(i)

    def settle(job: Job, result: Compiled | str) -> None:
        got = RooflineError(result) if isinstance(result, str) else result
        for i in todo[job]:
            finish(i, got)

    needed = list(dict.fromkeys(job for job in jobs[:first] if job in todo))
    order = needed + sorted((j for j in todo if j not in needed), key=lambda j: -j.weight)
    n = min(len(order), workers or cores())
    if n <= 1:
        for job in order:
            if stop is not None and stop.is_set():
                break
            settle(job, _work(job))
        return list(out)  # type: ignore[arg-type]
    left = _build_in_pool(order, n, settle, stop)
    if left is None:  # stopped
        return list(out)  # type: ignore[arg-type]
    for job in left:  # here, where a failure says why in the usual way
        if stop is not None and stop.is_set():
            break
        settle(job, _work(job))
    return list(out)  # type: ignore[arg-type]


def _build_in_pool(
    order: list[Job],
    n: int,
    settle: Callable[[Job, Compiled | str], None],
    stop: threading.Event | None,
) -> list[Job] | None:
    """compile_many's builds in `n` worker processes, in `order`, each settled as it finishes:
    the jobs left to build here (a worker died, none could start, one failed unforeseen), or
    None when `stop` was set."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    left = list(order)
    try:
        pool = ProcessPoolExecutor(n, mp_context=_context(), initializer=_worker_start)
    except OSError:  # no processes to be had here: one after another
        pool = None
    try:
        if pool is not None:
            running = {pool.submit(_work, job): job for job in order}
            while running:
                if stop is not None and stop.is_set():
                    _stop(pool)
                    return None
                tick = None if stop is None else 0.1
                finished, _ = wait(running, timeout=tick, return_when=FIRST_COMPLETED)
                for future in finished:
                    job = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        raise
                    except Exception:  # unforeseen, in a worker: built again here, below
                        continue
                    left.remove(job)
                    settle(job, result)
    except (BrokenProcessPool, OSError, RuntimeError):
        # a worker died (out of memory, a signal), or none can start (a script that imports
        # this without a __main__ guard, under spawn): what is left is built here, below
        pass
    except BaseException:  # Ctrl-C: the builds under way are abandoned, not waited for
        _stop(pool)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return left


def compile_stages(
    stages: Sequence[Stage], arch: str, dtype: str | None = None
) -> list[Compiled | RooflineError]:
    """compile_stage() of each stage, built at once (compile_many): each its build or the
    RooflineError that says why it has none."""
    jobs: list[Job] = []
    out: list[Compiled | RooflineError | None] = []
    for stage in stages:
        try:
            jobs.append(stage_job(stage, arch, dtype))
            out.append(None)
        except RooflineError as exc:
            out.append(exc)
    built = iter(compile_many(jobs))
    return [next(built) if r is None else r for r in out]


class Prebuild:
    """Builds under way in a background thread (precompile(background=True)). While it runs, a
    compile (_build) of one of its jobs waits for that job instead of building it again.
    `stop()` abandons what is left (Ctrl-C, an error) and waits for the thread."""

    def __init__(self, jobs: Sequence[Job], first: int) -> None:
        self._stop = threading.Event()
        self._events: dict[Job, threading.Event] = {}
        for job in jobs:
            if job not in _pending:  # one already under way elsewhere is waited for there
                self._events[job] = _pending[job] = threading.Event()
        self._jobs = list(jobs)
        self._thread = threading.Thread(
            target=self._run, args=(first,), name="roofline-prebuild", daemon=True
        )
        self._thread.start()

    def _run(self, first: int) -> None:
        def settled(i: int, _result: object) -> None:
            event = self._events.pop(self._jobs[i], None)
            if event is not None:
                _pending.pop(self._jobs[i], None)
                event.set()

        try:
            compile_many(self._jobs, done=settled, first=first, stop=self._stop)
        except BaseException:  # noqa: BLE001 - whatever it was, the run builds what it needs
            pass
        finally:
            for job, event in list(self._events.items()):
                _pending.pop(job, None)
                event.set()
            self._events.clear()

    def stop(self) -> None:
        """Abandon the builds not over yet and wait for the thread."""
        self._stop.set()
        self._thread.join()

    def join(self) -> None:
        """Wait until every build is over."""
        self._thread.join()


def precompile(
    stages: Iterable[Stage],
    arch: str,
    dtype: str,
    shapes: Iterable[tuple[int, int, int]] = (),
    jobs: Iterable[Job] = (),
    background: bool = False,
) -> Prebuild | None:
    """Build at once, in parallel, every stage of a plan the cache lacks (and `jobs`), so that
    the compile_stage calls of the run that follows find them: library calls, stages the
    target cannot run (gemm.cannot_run) and stages that refuse every one of `shapes` are left
    out. A warm-up only: a build that fails here fails again, with its message, where the run
    compiles it. With `background`, the builds run behind the caller, `jobs` and the first
    stage first (the order a run needs them), and the Prebuild is returned: the caller stops it
    when it is done."""
    shapes = list(shapes)
    wanted = list(jobs)
    ahead = len(wanted) + 1
    for stage in stages:
        if stage.reference:
            continue
        stage = stage.for_arch(arch)
        if cannot_run(stage, arch) or (shapes and all(stage.refuses(*s) for s in shapes)):
            continue
        try:
            wanted.append(stage_job(stage, arch, dtype))
        except RooflineError:
            continue  # the run says why, where it compiles it
    if not background:
        compile_many(wanted)
        return None
    try:
        version = nvrtc_version()
    except RooflineError:
        return None  # the run says so, where it compiles
    todo = [job for job in wanted if _cached(job, version) is None]
    if not todo:
        return None
    return Prebuild(todo, first=min(ahead, len(todo)))
