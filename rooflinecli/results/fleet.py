"""Fleet documents: records that name their GPU, and merging documents into one."""

from __future__ import annotations

from typing import Any

from rooflinecli.errors import RooflineError
from rooflinecli.results.provenance import environment
from rooflinecli.results.record import identity
from rooflinecli.results.schema import new_document

# ------------------------------------------------------------------------- fleet documents
# A fleet document is any results document whose records each name their GPU (`gpu`): the
# GPU's model, index on its host, UUID, serial, PCI bus id, power limit and clocks, the host and
# the rank. `merge` makes one from documents of single GPUs (a `--gpus` run's workers, a
# launcher's ranks) or of fleets.

GPU_FIELDS = ("index", "uuid", "serial", "pci_bus_id", "power_limit_w")


def gpu_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The `gpu` field of a single GPU's document's records: from its device and environment."""
    device = doc.get("device") or {}
    env = doc.get("environment") or {}
    launch = env.get("launch") or {}
    gpu: dict[str, Any] = {"name": device.get("name")}
    for f in GPU_FIELDS:
        gpu[f] = device.get(f)
    if gpu["serial"] is None:
        gpu["serial"] = "unknown"
    gpu["host"] = env.get("host")
    gpu["rank"] = launch.get("rank")
    gpu["local_rank"] = launch.get("local_rank")
    gpu["clock_sm_max_mhz"] = device.get("clock_sm_max_mhz")
    gpu["clock_sm_mhz_at_start"] = device.get("clock_sm_mhz_at_start")
    where = f"{gpu['host']}:" if gpu["host"] else ""
    which = gpu["index"] if gpu["index"] is not None else gpu["uuid"] or gpu["pci_bus_id"]
    if which is None and gpu["rank"] is not None:
        which = f"rank{gpu['rank']}"
    gpu["label"] = f"{where}{'gpu' if isinstance(which, int) else ''}{which}"
    return gpu


def _gpu_clocks(gpu: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    """The clocks its records saw, beside the GPU's identity."""
    seen = [r[f] for r in records for f in ("sm_clock_mhz_min", "sm_clock_mhz_max")
            if isinstance(r.get(f), int | float)]  # fmt: skip
    return {**gpu, "sm_clock_mhz_seen_min": min(seen, default=None),
            "sm_clock_mhz_seen_max": max(seen, default=None)}  # fmt: skip


def is_fleet(doc: dict[str, Any]) -> bool:
    recs = doc.get("records") or []
    return bool(recs) and all(isinstance(r.get("gpu"), dict) for r in recs)


def merge(docs: list[tuple[str, dict[str, Any]]], command: str = "merge") -> dict[str, Any]:
    """One fleet document of (source, document) pairs, each already loaded (and so upgraded to
    this schema). Records keep the GPU they ran on; a record of a single GPU's document takes its
    document's GPU. Two records of one GPU with one identity (the same document merged twice, a
    GPU measured twice) are refused in one line: a fleet holds one measurement a GPU and row."""
    if not docs:
        raise RooflineError("nothing to merge: give one or more results documents")
    records: list[dict[str, Any]] = []
    members: list[dict[str, Any]] = []
    seen: dict[tuple[Any, ...], str] = {}
    for source, doc in docs:
        if doc.get("device") is None:
            raise RooflineError(f"{source}: a model document (no GPU ran it): nothing to merge")
        own = gpu_of(doc)
        mine = [r for r in doc["records"] if isinstance(r, dict)]
        for rec in mine:
            gpu = rec["gpu"] if isinstance(rec.get("gpu"), dict) else _gpu_clocks(own, mine)
            key = (gpu.get("label"), gpu.get("uuid"), identity(rec))
            if key in seen:
                raise RooflineError(
                    f"{source}: {identity(rec).label} on {gpu.get('label')} is in "
                    f"{seen[key]} too: merge each GPU's measurement once"
                )
            seen[key] = source
            records.append({**rec, "gpu": gpu, "gpu_label": gpu.get("label")})
        members.append({"source": source, "schema": doc.get("schema"),
                        "command": doc.get("command"), "device": doc.get("device"),
                        "environment": doc.get("environment")})  # fmt: skip
    first = docs[0][1]
    models = sorted({str((r["gpu"] or {}).get("name")) for r in records})
    extra = {k: first[k] for k in ("command", "dtype") if k in first}
    return new_document(
        first["spec"],
        first["device"],
        records,
        **extra,
        fleet={"command": command, "members": members, "models": models,
               "gpus": len({r["gpu_label"] for r in records})},
        environment=environment(),
    )  # fmt: skip
