"""The test session's helper process (tests/conftest.py starts it): compiles kernels into the
session's compile cache and caches their nvdisasm listings there (sass.listings, the tool's own
listing cache), while the tests that need none of them run.

A process of its own, so that what a test changes for itself (environment, monkeypatched
functions, the umask) never reaches a build. It compiles in worker processes, not threads: NVRTC
runs one compile at a time within a process (two threads took as long as one, and about 15% more
CPU), so only processes build two kernels at once.

Reads two lines of JSON on stdin. The first comes before the tests are collected: {"path":
sys.path, "workers": n, "jobs": [{"id", "kind": "stage" | "attention" |
"calibration", "name", "params", "arch", "dtype", "head_dim" (attention), "weight"}]}. For a
whole-suite run its jobs are a guess at the first tier's builds (tests/tiers.py), which the
helper starts on while pytest collects (~4.5 s on one core otherwise idle). The second comes once
they are collected: {"jobs": [...], "order": [ids], "sass": [ids]}, the jobs the guess left out,
every id the tests need, in the order they need them, and those whose listing they read. What is
not started yet is built heaviest first ("weight", a rough measure of a build's time:
conftest.weight), so that no long build is left alone at the end with a core idle beside it; a
guessed job no test needs is dropped. Writes "done ID" on stdout when a job is over, built,
dropped or failed (the test that compiles it reports why), then "cpu SECONDS".
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import resource
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

BATCH = 14  # cubins a listing run waits for: 3-4 runs for the first tier's 40
BATCH_WAIT_S = 12.0  # at most this long after the first of them was built


def build(job: dict) -> tuple[str | None, float]:
    """In a worker process: the job's cubin (None when it does not build: the test that compiles
    it says why) and the CPU time its build took."""
    from rooflinecli.gpu import calibrate
    from rooflinecli.stages import attention, compiler
    from rooflinecli.stages import gemm as stages

    cpu = time.process_time()  # one build at a time in this process
    try:
        if job["kind"] == "stage":
            stage = stages.BY_NAME[job["name"]].with_params(job["params"])
            built = compiler.compile_stage(stage, job["arch"], job["dtype"])
        elif job["kind"] == "attention":
            built = attention.compile_stage(
                attention.ATTENTION_BY_NAME[job["name"]], job["arch"], job["dtype"],
                job["head_dim"], job["params"],
            )  # fmt: skip
        else:
            built = calibrate.compile_kernel(job["name"], job["arch"])
    except Exception:
        return None, time.process_time() - cpu
    return built.cubin_path, time.process_time() - cpu


def main() -> None:
    task = json.loads(sys.stdin.readline())
    if hasattr(os, "nice"):  # the tests keep their core (some time themselves); this takes the rest
        os.nice(10)
    sys.path[:] = task["path"]  # import rooflinecli from where the test session does
    from rooflinecli.gpu import calibrate  # noqa: F401
    from rooflinecli.stages import attention, compiler, sass  # noqa: F401 (the workers')

    lock = threading.RLock()  # finish() takes it, also from where it is held
    # cubins waiting for their listing: one nvdisasm run lists a batch (sass.listings, one run
    # here: the workers have the other cores), since each run costs about 0.45 s of CPU to start
    # whatever it disassembles
    waiting: queue.Queue[tuple[dict, str, float] | None] = queue.Queue()
    jobs = {job["id"]: job for job in task["jobs"]}
    # not yet handed to a worker, in this order: the heaviest first (conftest.weight)
    pending = sorted(jobs, key=lambda i: -jobs[i]["weight"])
    started: set[int] = set()
    held: list[tuple[int, str | None, float]] = []  # built before the tests' own list came
    final = threading.Event()  # the tests' list has come: what they need, what they read
    needed: set[int] = set()
    listed: set[int] = set()

    def finish(job: dict, cpu: float, why: str = "") -> None:
        what = " ".join(str(job[k]) for k in ("name", "arch", "dtype", "head_dim") if k in job)
        with lock:
            print(f"{what} {job.get('params') or ''}: {why or f'{cpu:.2f} s of CPU'}",
                  file=sys.stderr)  # fmt: skip
            print("done", job["id"], flush=True)

    def built(i: int, cubin: str | None, cpu: float) -> None:
        """A build is over: its listing is queued where a test reads it (called under lock)."""
        if not final.is_set():
            held.append((i, cubin, cpu))
        elif i in listed and cubin is not None:
            waiting.put((jobs[i], cubin, cpu))
        else:
            finish(jobs[i], cpu)

    def read_the_tests_list() -> None:
        """The second line: jobs the first left out, the ids the tests need in the order they
        need them, and those whose listing they read. Guessed jobs no test needs are dropped
        unless a worker has them already."""
        line = sys.stdin.readline()
        msg = json.loads(line) if line.strip() else {"jobs": [], "order": [], "sass": []}
        with lock:
            jobs.update((job["id"], job) for job in msg["jobs"])
            needed.update(msg["order"])
            listed.update(msg["sass"])
            dropped = [i for i in pending if i not in needed]
            heavy_first = sorted(msg["order"], key=lambda i: -jobs[i]["weight"])  # stable
            pending[:] = [i for i in heavy_first if i not in started]
            final.set()
            for item in held:
                built(*item)
            held.clear()
        for i in dropped:
            finish(jobs[i], 0.0, "no test needs it")

    def lister() -> None:
        """Lists the waiting cubins in batches of BATCH, or fewer where the first has waited
        BATCH_WAIT_S or the builds are over. Each nvdisasm run costs about 0.5 s of CPU to start
        (42 cubins: 3.5 s of CPU in one run, 6.4 s in runs of 7). A test that waits for a listing
        costs no CPU while builds go on: the builds have both cores then."""
        done = False
        while not done:
            first = waiting.get()
            if first is None:
                return
            batch = [first]
            until = time.monotonic() + BATCH_WAIT_S
            while len(batch) < BATCH:
                try:
                    item = waiting.get(timeout=max(0.0, until - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    done = True
                    break
                batch.append(item)
            with lock:
                print(f"listing {len(batch)} cubin(s) in one nvdisasm run", file=sys.stderr)
            try:  # into the session's cache (ROOFLINE_CACHE_DIR), where the tests find them
                sass.listings([cubin for _, cubin, _ in batch], workers=1)
            except Exception:
                pass  # the test that disassembles it says why
            for job, _, cpu in batch:
                finish(job, cpu)

    # forked workers inherit the imports above; forked (all at the first submit) before any
    # thread of ours starts
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(task["workers"], mp_context=context) as pool:
        pool.submit(int).result()
        threading.Thread(target=read_the_tests_list, daemon=True).start()
        listing = threading.Thread(target=lister)
        listing.start()
        running: dict[Future, int] = {}
        while True:
            with lock:
                while pending and len(running) < task["workers"]:
                    i = pending.pop(0)
                    started.add(i)
                    running[pool.submit(build, jobs[i])] = i
                if not running and final.is_set() and not pending:
                    break
            if not running:
                final.wait(0.5)
                continue
            # a timeout: the tests' list may have come meanwhile, with work for an idle worker
            for future in wait(running, timeout=0.5, return_when=FIRST_COMPLETED).done:
                i = running.pop(future)
                try:
                    cubin, cpu = future.result()
                except Exception:  # a worker died: the test that compiles it says why
                    cubin, cpu = None, 0.0
                with lock:
                    built(i, cubin, cpu)
    waiting.put(None)
    listing.join()
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    print("cpu", me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, flush=True)


if __name__ == "__main__":
    main()
