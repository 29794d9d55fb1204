"""Every GPU of a node at once: one worker process per GPU, pinned by CUDA_VISIBLE_DEVICES.

A worker runs the same command for one GPU and writes its own document into a folder; the
parent waits for all of them, says one line per GPU as each ends, and keeps what each wrote.
A worker that fails is reported with the GPU it ran on; the others' documents are kept.
Nothing here knows which command it fans out: the caller (rooflinecli.options.gpus_option)
gives each worker's command line (`fan_out`). Under a launcher without --gpus, `pin_rank` gives
this rank its GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from rooflinecli.errors import RooflineError


def parse_gpus(
    text: str, env: Mapping[str, str], host_count: Callable[[], int | None]
) -> list[str]:
    """--gpus all|0,2,5 as CUDA_VISIBLE_DEVICES values, one a worker. Indices count the GPUs
    this process may use: those CUDA_VISIBLE_DEVICES names where it is set (`--gpus 0,1` under
    CUDA_VISIBLE_DEVICES=4,5,6 runs on 4 and 5), else the host's."""
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if "CUDA_VISIBLE_DEVICES" in env and not visible:
        raise RooflineError("no CUDA device found (--gpus: CUDA_VISIBLE_DEVICES is empty)")
    if visible:
        pool = visible
    else:
        n = host_count()
        if not n:
            raise RooflineError(
                "no CUDA device found (--gpus: neither NVML nor nvidia-smi lists a GPU)"
            )
        pool = [str(i) for i in range(n)]
    if text.strip() == "all":
        return pool
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise RooflineError(f"--gpus: empty item in {text!r}")
    out = []
    for item in items:
        if not item.isdigit():
            raise RooflineError(f"--gpus: {item!r} is not a GPU index (write all or 0,2,5)")
        i = int(item)
        if i >= len(pool):
            raise RooflineError(f"--gpus: no GPU {i} ({len(pool)} visible: 0-{len(pool) - 1})")
        if pool[i] in out:
            raise RooflineError(f"--gpus: GPU {i} is named twice")
        out.append(pool[i])
    return out


class Outcome(NamedTuple):
    """One worker's end: the GPU it ran on, its exit status, its document's path (None where it
    wrote none), the last line it said on failure, its wall time."""

    gpu: str
    returncode: int
    path: Path | None
    error: str | None
    wall_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.path is not None


def _last_line(log: Path) -> str:
    try:
        lines = [x.strip() for x in log.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "no output"
    errors = [x for x in lines if x.lower().startswith("error")]
    return (errors or lines or ["no output"])[-1][:300]


def run_pool(
    gpus: list[str],
    folder: Path,
    argv: Callable[[str, Path], list[str]],
    say: Callable[[str], None] = lambda line: None,
    env: Mapping[str, str] | None = None,
    stdout_document: bool = False,
) -> list[Outcome]:
    """Start one worker per GPU at once (argv(gpu, document_path) its command line, with
    CUDA_VISIBLE_DEVICES=gpu), wait for all, and say one line per GPU as each ends. With
    `stdout_document` the worker prints its document instead of writing the path."""
    base = dict(os.environ if env is None else env)
    # CUDA numbers GPUs fastest first unless told otherwise; NVML and nvidia-smi by PCI bus:
    # in that order an index names the same GPU to both
    base.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    started: list[tuple[str, Path, Path, Any, float, Any]] = []
    for i, gpu in enumerate(gpus):
        doc = folder / f"gpu{i}.json"
        log = folder / f"gpu{i}.log"
        out_handle = open(doc if stdout_document else log, "wb")  # noqa: SIM115 (closed below)
        err_handle = open(log, "ab") if stdout_document else subprocess.STDOUT
        child_env = {**base, "CUDA_VISIBLE_DEVICES": gpu, "PYTHONUNBUFFERED": "1"}
        try:
            proc = subprocess.Popen(
                argv(gpu, doc), stdout=out_handle, stderr=err_handle, env=child_env,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except OSError as exc:
            out_handle.close()
            raise RooflineError(f"--gpus: cannot start a worker for GPU {gpu}: {exc}") from None
        started.append((gpu, doc, log, proc, time.monotonic(), (out_handle, err_handle)))
    outcomes: dict[str, Outcome] = {}
    try:
        while len(outcomes) < len(started):
            for gpu, doc, log, proc, t0, handles in started:
                if gpu in outcomes or proc.poll() is None:
                    continue
                for h in handles:
                    if hasattr(h, "close"):
                        h.close()
                wall = time.monotonic() - t0
                wrote = doc.is_file() and doc.stat().st_size > 0
                err = None if proc.returncode == 0 and wrote else _last_line(log)
                if proc.returncode == 0 and not wrote:
                    err = "wrote no document"
                outcomes[gpu] = Outcome(gpu, proc.returncode, doc if wrote else None, err, wall)
                if err is None:
                    say(f"GPU {gpu}: done in {wall:.1f} s")
                else:
                    say(f"GPU {gpu}: failed (exit {proc.returncode}) after {wall:.1f} s: {err}")
            time.sleep(0.05)
    finally:
        for gpu, _, _, proc, _, _ in started:
            if gpu not in outcomes and proc.poll() is None:
                proc.terminate()  # interrupted: our own workers only
                proc.wait()
    return [outcomes[g] for g, *_ in started]


def python_argv(args: list[str]) -> list[str]:
    """This tool run again in a fresh interpreter with `args`."""
    return [sys.executable, "-m", "rooflinecli", *args]


class Merged(NamedTuple):
    """The documents of a --gpus run merged (`document`, serialised as `data`), and each
    worker's end."""

    document: dict[str, Any]
    data: str
    outcomes: list[Outcome]
    kind: str

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    def fail(self) -> None:
        """GateFailure when a worker failed, or (results) a record failed its check."""
        from rooflinecli.errors import GateFailure

        bad = self.failed
        if bad:
            which = "; ".join(f"GPU {o.gpu} (exit {o.returncode}): {o.error}" for o in bad)
            raise GateFailure(f"{len(bad)} of {len(self.outcomes)} worker(s) failed: {which}")
        if self.kind != "calibration":
            wrong = sorted({f"{r['stage']} on {r.get('gpu_label')}"
                            for r in self.document["records"]
                            if r.get("verified") is False})  # fmt: skip
            if wrong:
                raise GateFailure(f"verification failed: {', '.join(wrong)}")


def fan_out(
    gpus_text: str, base: list[str], kind: str, has_output: bool, has_quiet: bool
) -> Merged:
    """--gpus: the command line `base` run once per GPU at once (a worker each, quietly, its
    document as JSON), one line per GPU on stderr as each ends, their documents merged:
    results.merge (records naming their GPU), or for `kind` "calibration" one per GPU."""
    import tempfile

    from rooflinecli import results
    from rooflinecli.gpu import device

    gpus = parse_gpus(gpus_text, os.environ, device.host_gpus)

    def argv(gpu: str, doc: Path) -> list[str]:
        extra = ["--quiet"] if has_quiet else []
        extra += ["--format", "json"]
        if has_output:
            extra += ["-o", str(doc), "--force"]
        cut = base.index("--") if "--" in base else len(base)
        return python_argv([*base[:cut], *extra, *base[cut:]])

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    say(f"{len(gpus)} GPU(s) at once: {', '.join(gpus)}")
    with tempfile.TemporaryDirectory(prefix="roofline-gpus-") as tmp:
        outcomes = run_pool(gpus, Path(tmp), argv, say, stdout_document=not has_output)
        loaded: list[tuple[str, dict[str, Any]]] = []
        for o in outcomes:
            if o.path is None:
                continue
            try:
                loaded.append((f"GPU {o.gpu}", _read_worker(o.path, kind)))
            except RooflineError as exc:
                failed = o._replace(returncode=o.returncode or 2, error=str(exc), path=None)
                outcomes = [failed if x.gpu == o.gpu else x for x in outcomes]
                say(f"GPU {o.gpu}: its document is unreadable: {exc}")
    bad = [o for o in outcomes if not o.ok]
    if not loaded:
        raise RooflineError(f"--gpus: every worker failed; GPU {bad[0].gpu}: {bad[0].error}")
    if kind == "calibration":
        merged: dict[str, Any] = {
            "command": "calibrate --gpus",
            "gpus": [{"gpu": results.gpu_of(d), **d} for _, d in loaded],
            "failed": [{"gpu": o.gpu, "error": o.error} for o in bad],
        }
    else:
        merged = results.merge(loaded, command=" ".join(["roofline", *base[:2]]))
        merged["fleet"]["failed"] = [{"gpu": o.gpu, "exit": o.returncode, "error": o.error}
                                     for o in bad]  # fmt: skip
        merged["fleet"]["wall_s"] = {o.gpu: round(o.wall_s, 2) for o in outcomes}
    return Merged(merged, results.dumps(merged), outcomes, kind)


def _read_worker(path: Any, kind: str) -> dict[str, Any]:
    from rooflinecli import paths, results

    if kind == "calibration":
        doc = paths.read_json(path, "calibration")
        if not isinstance(doc, dict):
            raise RooflineError(f"{path}: not a calibration")
        return doc
    return results.load(path)


def pin_rank() -> None:
    """Under a launcher that started several ranks on a node (srun, mpirun, torchrun), this
    rank takes its local rank's GPU (rooflinecli.core.ranks.device_for), before CUDA starts."""
    from rooflinecli.core import ranks

    place = ranks.discover(os.environ)
    if place is None:
        return
    sharing = place.local_world_size or place.world_size or 1
    if sharing > 1:
        os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # as NVML numbers them
        os.environ["CUDA_VISIBLE_DEVICES"] = ranks.device_for(
            place, os.environ.get("CUDA_VISIBLE_DEVICES")
        )
