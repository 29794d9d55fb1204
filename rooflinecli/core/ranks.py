"""Where a process stands among the ranks a launcher started, and the GPU it takes.

Slurm's `srun`, Open MPI's `mpirun` and PyTorch's `torchrun` each start one process per rank
and tell it its place through the environment; nothing here starts a process or talks to
another host. `discover` reads the place, `device_for` says which GPU a rank takes (its local
rank, among the GPUs CUDA_VISIBLE_DEVICES already leaves it), and `expand` names a rank's
document (`-o results/{host}-{rank}.json`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import NamedTuple

from rooflinecli.errors import RooflineError


class Place(NamedTuple):
    """A rank's place: which launcher said so, the global and node-local rank and sizes."""

    launcher: str  # "slurm", "openmpi" or "torchrun"
    rank: int
    local_rank: int
    world_size: int | None = None
    local_world_size: int | None = None
    node: int | None = None


# (launcher, rank, local rank, world size, local world size, node): the variables each sets
LAUNCHERS = (
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK"),
    ("torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK"),
    ("slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE",
     "SLURM_NODEID"),
)  # fmt: skip
# torchrun and mpirun run inside Slurm allocations too: their variables are looked for first,
# since srun's describe the job step that started the launcher, not this process


def _int(env: Mapping[str, str], name: str | None) -> int | None:
    if not name or name not in env:
        return None
    text = env[name].strip()
    # SLURM_NTASKS_PER_NODE may read "4(x2)"; its first figure is this node's count
    head = text.split("(")[0].split(",")[0]
    if not head.isdigit():
        raise RooflineError(f"{name}={text!r} is not a whole number")
    return int(head)


def _loose(env: Mapping[str, str], name: str) -> int | None:
    """A size or node number: None where the launcher wrote what this does not read."""
    try:
        return _int(env, name)
    except RooflineError:
        return None


def discover(env: Mapping[str, str]) -> Place | None:
    """The place the launcher's variables give, or None outside a launcher."""
    for launcher, rank, local, size, local_size, node in LAUNCHERS:
        r = _int(env, rank)
        if r is None:
            continue
        lr = _int(env, local)
        if lr is None:
            if launcher == "slurm" and _int(env, "SLURM_NTASKS") not in (None, 1):
                raise RooflineError("SLURM_PROCID is set without SLURM_LOCALID")
            lr = 0 if launcher == "slurm" else r
        return Place(launcher, r, lr, _loose(env, size), _loose(env, local_size), _loose(env, node))
    return None


def device_for(place: Place, visible: str | None) -> str:
    """The CUDA_VISIBLE_DEVICES value of a rank: its local rank's GPU among those already
    visible (all of the node's when none is set). A launcher that gave the rank one GPU
    (`srun --gpus-per-task=1`) has chosen already: that one is kept."""
    if visible is not None and visible.strip():
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        if len(ids) == 1:
            return ids[0]
        if place.local_rank >= len(ids):
            raise RooflineError(
                f"local rank {place.local_rank} has no GPU: CUDA_VISIBLE_DEVICES={visible} "
                f"names {len(ids)}"
            )
        return ids[place.local_rank]
    return str(place.local_rank)


PLACEHOLDERS = ("host", "rank", "local_rank")


def fields(text: str) -> list[str]:
    """The placeholders of an output name ('{host}-{rank}.json' -> ['host', 'rank']); one line
    for an unknown one or a brace that opens none."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise RooflineError(f"--output {text!r}: {exc} (write {{{{ for a brace)") from None
    found = []
    for _, name, spec, conv in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS or spec or conv:
            raise RooflineError(
                f"--output {text!r}: unknown placeholder {{{name}}}; "
                f"placeholders: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
            )
        found.append(name)
    return found


def expand(text: str, place: Place | None, host: str) -> str:
    """An output name with its placeholders filled in; {rank} and {local_rank} need a
    launcher ({host} alone does not)."""
    wanted = fields(text)
    if not wanted:
        return text
    if place is None and ("rank" in wanted or "local_rank" in wanted):
        raise RooflineError(
            f"--output {text!r}: {{rank}} needs a launcher (srun, mpirun or torchrun); "
            "none set its variables"
        )
    values = {"host": safe_host(host)}
    if place is not None:
        values |= {"rank": str(place.rank), "local_rank": str(place.local_rank)}
    return text.format(**values)


def safe_host(host: str) -> str:
    """A host name as part of a file name: letters, digits, '-', '_' and '.' kept, anything
    else (a '/', a space) as '_'."""
    out = "".join(c if c.isalnum() or c in "-_." else "_" for c in host)
    return out.strip(".") or "host"
