"""The results document: one versioned JSON file per run (or model). See docs/results-schema.md.

Every command that presents, compares or gates reads such a document and needs no GPU.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from rooflinecli import __version__, doc_check, names, paths
from rooflinecli.core import reference, roof_keys, roofs
from rooflinecli.errors import RooflineError

SCHEMA = "roofline.results/2"
# /2: records keep every repeat (samples_ms), name the reference they were timed beside
# (compared_with, reference_time_ms) and the roof they stand under (math_instruction, roof_key,
# peak_clock_mhz). /1 documents are read too: results.upgrade fills in what it can.
READABLE = ("roofline.results/1", SCHEMA)

# A token's chain (op "chain", `run llm --chain`): a record per way of running it, its version
# in chain_version. Its time is the token's (the median replay, scaled where fewer layers ran:
# scale, layers_run); flops and bytes_ideal are the token's; `gemms` lists every GEMM (name,
# m, n, k, stage, reads) with, where a timeline traced a replayed token, kernel_us and
# gap_before_us; the record's traced_token_us, tracing_overhead and gap_share go with them
# (tracing_overhead: the traced token, its kernels' span, against the untraced median;
# tracing_event_overhead: the traced replay's event time, with the tracer's start delay, against
# it). A way whose one kernel runs every GEMM (kernels_per_token) has no per-GEMM times.
CHAIN_VERSION = "roofline.chain/1"
CHAIN_GEMM_FIELDS = ("name", "m", "n", "k", "stage")
CHAIN_GEMM_TIMES = ("kernel_us", "gap_before_us")

# Fields every record carries (null where a field does not apply), in table order.
RECORD_FIELDS: tuple[str, ...] = (
    "stage",
    "kind",
    "dtype",
    "m",
    "n",
    "k",
    "alpha",
    "beta",
    "flops",
    "bytes_ideal",
    "ai_ideal",
    "ai_instruction",
    "ai_global",
    "ai_shared",
    "time_ms",
    "time_ms_min",
    "time_ms_max",
    "time_ms_stdev",
    "repeats",
    "tflops",
    "roof",
    "roof_set",
    "peak_tflops",
    "attainable_tflops",
    "pct_of_roof",
    "pct_of_peak",
    "pct_of_reference",
    "verified",
    "rel_error",
    "max_rel_error",
    "registers",
    "smem_bytes",
    "spill_bytes",
    "occupancy_pct",
    "error",
)


# Types of the record fields the renderers compute with, checked on load (null is always
# allowed: a field that does not apply). Numbers are int or float, never bool.
TEXT_FIELDS = frozenset(
    {"kind", "roof", "roof_set", "peak_key", "error", "workload", "gemm", "op", "scores_dtype",
     "chain_version", "scale_rule", "timeline_reason", "fairness"}
)  # fmt: skip
NUMBER_FIELDS = frozenset(
    {f for f in RECORD_FIELDS if f not in {"stage", "dtype", "verified"} | TEXT_FIELDS}
    | {
        "sm_clock_mhz", "sm_clock_mhz_min", "sm_clock_mhz_max", "clock_samples", "power_w",
        "bandwidth_gbs", "ridge_point", "attainable_instruction_tflops", "time_us_per_token",
        "allowed_us_per_token", "batch", "count", "crossing_batch", "local_bytes", "blocks_per_sm",
        "ncu_time_ms", "tflops_ncu", "flops_hw", "flops_hw_ratio", "bytes_dram", "bytes_l2",
        "bytes_l1", "ai_dram", "ai_l2", "ai_l1", "noise_pct",
        # attention (op "attention"): the shape, and the fused and unfused byte counts
        "heads", "kv_heads", "seq", "head_dim", "bytes_fused", "bytes_unfused", "ai_fused",
        "ai_unfused", "pct_of_torch_flash", "pct_of_torch_cudnn",
        # a chain (op "chain")
        "gemm_count", "layers", "layers_run", "token_bytes", "weight_bytes", "traced_token_us",
        "tracing_overhead", "gap_share", "reference_time_ms", "cublas_over_torch",
    }
)  # fmt: skip
SHAPE_FIELDS = ("m", "n", "k")

# Record fields that name what a record is or where it stands (tables, charts, the gate's
# checks show them): names.check refuses a control character (a tab or newline too) or an
# oversize one. Every other string of a document is prose (an error, a note) and may hold tabs
# and line breaks, but no other control character (names.check_text).
NAME_FIELDS = (
    "stage", "dtype", "kind", "name", "label", "kernel", "workload", "gemm", "preset", "op",
    "compared_with", "roof", "roof_set", "roof_key", "peak_key", "math_instruction", "pipe",
    "work", "binding_level", "scores_dtype", "b_layout", "device_name", "gpu_label",
)  # fmt: skip
_NAMES = frozenset(NAME_FIELDS)
# ... and the document's own names (titles show them): (object, field)
DOCUMENT_NAMES = (
    ("spec", "name"), ("spec", "display_name"), ("device", "name"), ("preset", "name"),
    ("preset", "display_name"), ("tune", "stage"),
)  # fmt: skip
# Numbers a record may hold below zero (the GEMM's scalars, signed relative differences); every
# other number of a record is a time, a speed, a count, a size or a ratio: finite and >= 0
SIGNED_FIELDS = frozenset({"alpha", "beta", "scale", "tracing_overhead", "timeline_error",
                           "tracing_event_overhead", "tracing_start_delay_us"})  # fmt: skip
# repeats in ms: each a positive finite number
SAMPLE_FIELDS = ("samples_ms", "reference_samples_ms")
# How far a stored tflops or time_ms may lie from what its flops and samples give: rounding (the
# tool writes full precision; samples are rounded to 1e-6 ms), never a changed measurement
CONSISTENT_RTOL = 0.005
SAMPLE_ROUNDING_MS = 1e-6


def new_document(
    spec: dict[str, Any], device: dict[str, Any] | None, records: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "spec": spec,
        "device": device,
    }
    doc.update(extra)
    doc["records"] = [complete_record(r) for r in records]
    return doc


def complete_record(record: dict[str, Any]) -> dict[str, Any]:
    """Every field present (null where it does not apply); known fields first, extras after."""
    out = {f: record.get(f) for f in RECORD_FIELDS}
    for key, val in record.items():
        if key not in out:
            out[key] = val
    return out


# --------------------------------------------------------------------------- a run's record
# The runner (rooflinecli.gpu.loop) builds each record of a run as a RunRecord, part by part as
# the stage is launched, checked and timed, and writes it as the document's dict once, with
# written(): here, where the schema is.


class Check(NamedTuple):
    """What comparing one output with the reference found."""

    ok: bool
    rel_error: float  # relative Frobenius error
    max_rel_error: float  # largest element's error / the reference's largest element


class Repeats(NamedTuple):
    """Timed repeats of one launch: every sample, the SM clock over them, how they were queued,
    and with a noise target (--max-noise) the noise reached."""

    samples_ms: list[float]
    clock: dict[str, Any]  # rooflinecli.gpu.nvml's summary: {} without NVML
    method: str | None  # timing_method
    noise_pct: float | None = None
    noise_target_met: bool | None = None


class Pairing(NamedTuple):
    """The references a stage was timed beside: the first one's samples of the same rounds and,
    where the kind names each reference (attention), every verified one's median."""

    compared_with: str
    reference_time_ms: float | None  # None when that reference failed its check
    reference_samples_ms: list[float]
    timing: str
    medians: tuple[tuple[str, float], ...] = ()  # (reference, median ms)


class RunRecord:
    """One stage, or one library reference, at one shape of a run. `model` is the record before
    anything ran (work, bytes, the roof: rooflinecli.core); the rest is what the run found, set
    part by part by the runner loop. to_dict() writes it with the fields in the order the
    documents have always had them. (A plain class: a dataclass would cost every command about
    1 ms of start-up to create, as rooflinecli.present.View says.)"""

    __slots__ = (
        "model", "checked", "about", "launch", "occupancy_pct", "blocks_per_sm", "verified",
        "error", "first", "conversion_ms", "repeats", "last", "time_ms", "paired", "timing",
    )  # fmt: skip

    def __init__(
        self, model: dict[str, Any], checked: dict[str, Any], about: dict[str, Any] | None = None
    ) -> None:
        self.model = model
        self.checked = checked  # how its output is checked: tolerances (attention: what, scale)
        self.about = about or {}  # a library reference: what it is
        self.launch: dict[str, Any] | None = None  # registers, shared memory, grid, block, ...
        self.occupancy_pct: float | None = None
        self.blocks_per_sm: int | None = None
        self.verified: bool | None = None  # None: skipped
        self.error: str | None = None
        self.first: Check | None = None  # the first launch's output
        self.conversion_ms: float | None = None  # a B layout conversion alone (charged)
        self.repeats: Repeats | None = None  # a reference's: every repeat of the shape, pooled
        self.last: Check | None = None  # the last timed launch's output
        self.time_ms: float | None = None  # the median placed on the roofline; None: no speed
        self.paired: Pairing | None = None
        self.timing: str | None = None  # a reference's note on its pooled repeats

    @property
    def reference(self) -> bool:
        return self.model.get("kind") == "reference"

    def skip(self, why: str) -> None:
        """Skipped: it cannot run here (no speed, not verified either way)."""
        self.verified, self.error = None, f"skipped: {why}"

    def fail(self, why: str) -> None:
        """Failed: a wrong result, an error or a launch failure is never reported as fast."""
        self.verified, self.error, self.time_ms = False, why, None

    def to_dict(self) -> dict[str, Any]:
        """The record as the document holds it (before complete_record and the reference
        ratios): a stage's timing fields as they were found, a reference's after its pooled
        samples."""
        from rooflinecli.core import roofs

        out = dict(self.model)
        out.update(self.checked)
        out.update(self.about)
        if self.launch is not None:
            out.update(self.launch)
        if self.occupancy_pct is not None:
            out.update(occupancy_pct=self.occupancy_pct, blocks_per_sm=self.blocks_per_sm)
        out["verified"] = self.verified
        if self.first is not None:
            out.update(rel_error=self.first.rel_error, max_rel_error=self.first.max_rel_error)
        if self.conversion_ms is not None:
            out["conversion_ms"] = self.conversion_ms
        rep = self.repeats
        if self.reference:
            if rep is not None:
                out.update(rep.clock)
            self._last_into(out)
            if rep is not None and self.time_ms is not None:
                out.update(_summary(rep.samples_ms))
                out.update(timing=self.timing, timing_method=rep.method)
                if rep.noise_target_met is not None:
                    out.update(noise_pct=rep.noise_pct, noise_target_met=rep.noise_target_met)
        else:
            if rep is not None:
                out.update(rep.clock, timing_method=rep.method)
                if rep.noise_target_met is not None:
                    out.update(noise_pct=rep.noise_pct, noise_target_met=rep.noise_target_met)
            self._last_into(out)
            if rep is not None and self.time_ms is not None:
                out.update(_summary(rep.samples_ms))
        roofs.place(out, self.time_ms)
        if self.paired is not None and self.time_ms is not None:
            p = self.paired
            for name, median in p.medians:
                out[f"pct_of_{name}"] = 100.0 * median / self.time_ms
                out[f"{name}_time_ms"] = median
            out.update(
                compared_with=p.compared_with,
                reference_time_ms=p.reference_time_ms,
                reference_samples_ms=[round(x, 6) for x in p.reference_samples_ms],
                timing=p.timing,
            )
        if not self.verified:  # a wrong result is never reported as fast
            out.update(tflops=None, pct_of_roof=None, pct_of_peak=None)
        return out

    def _last_into(self, out: dict[str, Any]) -> None:
        """The last timed launch's check, and what went wrong up to there (in that order)."""
        if self.last is not None:
            out.update(
                rel_error_last=self.last.rel_error, max_rel_error_last=self.last.max_rel_error
            )
        if self.error is not None:
            out["error"] = self.error


def _summary(samples: list[float]) -> dict[str, Any]:
    """A launch's samples as record fields besides the median (time_ms, which placing sets):
    the spread and every sample (`samples_ms`, in launch order, what the gate decides from)."""
    import statistics

    return {
        "time_ms_min": min(samples),
        "time_ms_max": max(samples),
        "time_ms_stdev": statistics.stdev(samples) if len(samples) > 1 else 0.0,
        "repeats": len(samples),
        "samples_ms": [round(x, 6) for x in samples],
    }


def written(records: Iterable[RunRecord]) -> list[dict[str, Any]]:
    """The records of one shape as the document holds them: each one's fields, and each one's
    ratio to the reference it is held to (rooflinecli.core.reference.add_ratios)."""
    out = [r.to_dict() for r in records]
    reference.add_ratios(out)
    return out


class Identity(NamedTuple):
    """What a record measures: the key that pairs records across documents (gate, compare,
    baseline). Two records of one document must not share it. (A NamedTuple, as
    rooflinecli.present.View says why.)"""

    stage: str  # the stage, or the name given to measure()
    dtype: str
    # (M, N, K); attention: ("attention", B, H, H_kv, N, D, causal); None for a measure()
    # record without one
    shape: tuple[Any, ...] | None
    workload: str | None = None  # `run llm`: preset:gemm:bBATCH (two weight GEMMs share shapes)
    gpu: str | None = None  # a fleet document's record: the GPU it ran on (its gpu_label)

    @property
    def shape_text(self) -> str:
        if self.shape and self.shape[0] == "attention":
            from rooflinecli.core import attention

            return attention.label(dict(zip(attention.SHAPE_FIELDS, self.shape[1:], strict=True)))
        return "x".join(str(d) for d in self.shape) if self.shape else "-"

    @property
    def label(self) -> str:
        """stage MxNxK dtype [workload]: how messages name the record."""
        parts = [self.stage] + ([self.shape_text] if self.shape else []) + [self.dtype]
        parts += [self.workload] if self.workload else []
        return " ".join(parts + ([f"on {self.gpu}"] if self.gpu else []))


def _dim(value: Any) -> int | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
    ):
        raise RooflineError(f"m, n and k must be whole numbers or null, got {value!r}")
    return int(value)


def identity(record: dict[str, Any]) -> Identity:
    """The record's identity: GEMM stages by (stage, dtype, M, N, K); `run llm` records also by
    their workload (preset, weight GEMM, batch); measure() records by name and dtype (and shape
    when given). RooflineError for m, n, k that are not whole numbers."""
    workload = record.get("workload")
    if record.get("op") == "attention":
        key = roofs.shape_key(record)
        for f, v in zip(roofs.ATTENTION_SHAPE[:-1], key[1:-1], strict=True):
            if _dim(v) is None:
                raise RooflineError(f"record {record.get('stage')!r}: attention without {f}")
        return Identity(str(record["stage"]), str(record.get("dtype")), key, None, _gpu(record))
    m, n, k = (_dim(record.get(d)) for d in ("m", "n", "k"))
    shape: tuple[Any, ...] | None = None
    if m is not None and n is not None and k is not None:
        shape = (m, n, k)
    elif (m, n, k) != (None, None, None):
        raise RooflineError(f"record {record.get('stage')!r}: give all of m, n and k, or none")
    if not isinstance(workload, str) or not workload:
        parts = [record.get(f) for f in ("preset", "gemm", "batch")]
        workload = f"{parts[0]}:{parts[1]}:b{parts[2]}" if None not in parts else None
    return Identity(str(record["stage"]), str(record.get("dtype")), shape, workload, _gpu(record))


def _gpu(record: dict[str, Any]) -> str | None:
    label = record.get("gpu_label")
    return str(label) if label is not None else None


def _clean(obj: Any) -> Any:
    """NaN/inf are not JSON: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return _clean(obj.item())
    return obj


def dumps(doc: dict[str, Any]) -> str:
    import json  # here: `model` into a table writes no JSON, and json compiles 6 regexes

    return json.dumps(_clean(doc), indent=2) + "\n"


def file_text(doc: dict[str, Any]) -> str:
    """A document as a file holds it: dumps' layout, but a list of numbers (every timing
    sample) on one line, a third of the bytes. The same JSON value as dumps."""
    return _layout(_clean(doc), "") + "\n"


def _layout(obj: Any, indent: str) -> str:
    import json

    inner = indent + "  "
    if isinstance(obj, dict) and obj:
        items = [f"{inner}{json.dumps(str(k))}: {_layout(v, inner)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(obj, list) and any(isinstance(v, dict | list) for v in obj):
        return "[\n" + ",\n".join(inner + _layout(v, inner) for v in obj) + "\n" + indent + "]"
    return json.dumps(obj)


# What records that do not describe themselves leave out, by stage name as they give it: the math
# instruction (which compute roof places them) and why a stage can be slower
# than the one before it. Frozen data, not today's registry: a later rename changes nothing here.
_LEGACY_MATH = {
    **dict.fromkeys(
        ("naive_xcol", "naive_xrow", "thread_tile_4x4", "thread_tile_8x8", "smem_tile",
         "blocktile_1d", "blocktile_2d", "vectorized", "warptile", "double_buffer", "multistage"),
        "FFMA",
    ),
    **dict.fromkeys(("mma_sync", "mma_ldmatrix", "mma_multistage", "mma_tma_ws"), "HMMA"),
    **dict.fromkeys(("wgmma_tma", "wgmma_ws", "wgmma_persistent"), "HGMMA"),
    **dict.fromkeys(("cublas", "cublas_hgemm"), "library"),
}  # fmt: skip
_LEGACY_SLOWER = {
    "naive_xrow": "the seed's point: a warp's 32 A addresses are K*4 bytes apart, so each load "
    "touches 32 sectors instead of 2; same instructions, ~8x the memory traffic",
    "thread_tile_8x8": "64 accumulators + 16 operands need ~140 registers: one block of 256 "
    "threads per SM (12.5% occupancy), too few warps to hide global loads (exercise 3)",
    "smem_tile": "one result per thread: every FMA still loads 2 floats, now from shared memory "
    "(0.25 FLOP/B there) plus barriers; the register tile of the stage before reuses each load "
    "4x. Chapter 11 restarts the ladder from here with register tiles on top",
    "wgmma_ws": "on small shapes its 128x256 tiles are too few to fill 132 SMs (1000^3: 32 "
    "tiles); a persistent grid or smaller tiles would fix it",
}


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """Fill in what older records did not say about themselves (in place): the math
    instruction of a known stage (a tune variant `stage@P=V` is its stage's) and its why-note,
    and the reference a ratio was taken against (core.reference.name_missing). Records of
    unknown stages are left as they are."""
    records = doc.get("records")
    if isinstance(records, list):
        reference.name_missing([r for r in records if isinstance(r, dict)])
    for rec in doc.get("records", []):
        if not isinstance(rec, dict) or rec.get("kind") not in ("stage", "reference"):
            continue
        base = str(rec.get("stage", "")).split("@")[0]
        if "math_instruction" not in rec and base in _LEGACY_MATH:
            rec["math_instruction"] = _LEGACY_MATH[base]
        if "slower_because" not in rec and base in _LEGACY_SLOWER:
            rec["slower_because"] = _LEGACY_SLOWER[base]
        # a record's peak label follows the roof it was placed under (its figures are kept)
        if rec.get("peak_key") is not None:
            rec["peak_key"] = roof_keys.label_of_placed(
                rec.get("dtype"), rec.get("peak_key"), rec.get("roof_key")
            )
    return doc


def git_commit() -> str | None:
    """The tool's commit: ROOFLINE_COMMIT (set where the checkout has no .git), else git."""
    if os.environ.get("ROOFLINE_COMMIT"):
        return os.environ["ROOFLINE_COMMIT"]
    import shutil
    import subprocess

    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists() or not shutil.which("git"):
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def environment() -> dict[str, Any]:
    """Where a document was made: the tool's commit, Python, the host, and under a launcher
    (srun, mpirun, torchrun) the rank (rooflinecli.core.ranks)."""
    import platform

    from rooflinecli.core import ranks

    out: dict[str, Any] = {
        "commit": git_commit(), "python": platform.python_version(), "host": platform.node()
    }  # fmt: skip
    place = ranks.discover(os.environ)
    if place is not None:
        out["launch"] = place._asdict()
    return out


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


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a results document; one-line RooflineError on anything malformed."""
    p = Path(path)
    doc = paths.read_json(p, "results file")  # a regular file of at most 256 MiB
    validate(doc, str(p))
    return upgrade(doc)


def validate(doc: Any, where: str = "document") -> None:
    if not isinstance(doc, dict):
        raise RooflineError(f"{where}: not a results document (expected a JSON object)")
    schema = doc.get("schema")
    if not isinstance(schema, str) or not schema.startswith("roofline.results/"):
        raise RooflineError(f"{where}: not a roofline results document (schema {schema!r})")
    if schema not in READABLE:
        raise RooflineError(
            f"{where}: schema {schema} is not supported (this tool reads {', '.join(READABLE)})"
        )
    for key in ("tool_version", "created", "spec", "records"):
        if key not in doc:
            raise RooflineError(f"{where}: missing {key!r}")
    if not isinstance(doc["records"], list):
        raise RooflineError(f"{where}: 'records' must be a list")
    if doc.get("device") is not None and not isinstance(doc["device"], dict):
        raise RooflineError(f"{where}: 'device' must be an object or null")
    if not isinstance(doc["spec"], dict):
        raise RooflineError(f"{where}: 'spec' must be an object")
    doc_check.numbers(doc, where)  # whole numbers within 64 bits, before any becomes a float
    _check_document_names(doc, where)
    keys: set[str] = set()  # the field names seen: each checked once, not once a record
    for i, rec in enumerate(doc["records"]):
        if not isinstance(rec, dict):
            raise RooflineError(f"{where}: record {i} is not an object")
        for key in ("stage", "dtype", "m", "n", "k"):
            if key not in rec:
                raise RooflineError(f"{where}: record {i} lacks {key!r}")
        if not rec.keys() <= keys:
            for key in rec.keys() - keys:
                names.check_text(key, f"{where}: record {i}: a field's name")
            keys |= rec.keys()
        _check_types(rec, f"{where}: record {i}")
        if rec.get("op") == "chain":
            _check_chain(rec, f"{where}: record {i}")
    doc_check.document(doc, where)  # the spec's ranges; each record agrees with itself


def _short(name: str, limit: int = 60) -> str:
    """A name as an error message quotes it: at most `limit` characters."""
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _check_document_names(doc: dict[str, Any], where: str) -> None:
    """The document's own names (the GPU's, the spec's, ...) and everything else outside its
    records (notes, the program's command line): names are names, other strings prose, numbers
    finite; one line for what is not."""
    for obj, field in DOCUMENT_NAMES:
        holder = doc.get(obj)
        if isinstance(holder, dict) and isinstance(holder.get(field), str):
            names.check(holder[field], f"{where}: {obj}.{field}")
    _check_nested({k: v for k, v in doc.items() if k != "records"}, f"{where}: ")


def _name_error(rec: dict[str, Any], key: str, record: str) -> RooflineError:
    """The one line for a record's name that is none, naming the record by its stage."""
    stage = rec.get("stage")
    if key != "stage" and isinstance(stage, str):
        record = f"{record} ({_short(stage)})"
    return RooflineError(f"{record}: {key!r} {names.problem(rec[key])}")


def _check_types(rec: dict[str, Any], where: str) -> None:
    """Wrongly typed fields, numbers that are not finite or below zero, control characters in
    prose: one line naming the file, the record and the field. One pass over the record's
    fields, the common case in a few comparisons each (a document may hold 100,000 records)."""
    record, name = where, rec.get("stage")
    if isinstance(name, str):
        if not names.is_name(name):
            raise _name_error(rec, "stage", record)
        where = f"{record} ({_short(name)})"

    def bad(key: str, want: str) -> RooflineError:
        got = repr(rec[key])
        got = got if len(got) <= 40 else got[:37] + "..."
        return RooflineError(f"{where}: {key!r} must be {want}, got {got}")

    for key in ("stage", "dtype"):
        if not isinstance(rec[key], str):
            raise bad(key, "a string")
    for key in SHAPE_FIELDS:
        v = rec[key]
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise bad(key, "a whole number of at least 1 or null")
    for key, v in rec.items():
        kind = type(v)
        if v is None:
            continue
        if kind is float or kind is int:
            if key in TEXT_FIELDS:
                raise bad(key, "a string or null")
            if key == "verified":
                raise bad(key, "true, false or null")
            if not 0 <= v < math.inf:  # NaN, infinity or below zero
                _check_number(v, key, where)
        elif kind is str:
            if key in NUMBER_FIELDS:
                raise bad(key, "a number or null")
            if key == "verified":
                raise bad(key, "true, false or null")
            if key in _NAMES:
                if not names.is_name(v):
                    raise _name_error(rec, key, record)
            elif not names.is_text(v):
                names.check_text(v, f"{where}: {key!r}")
        elif kind is bool:
            if key in NUMBER_FIELDS:
                raise bad(key, "a number or null")
            if key in TEXT_FIELDS:
                raise bad(key, "a string or null")
        else:
            if key in NUMBER_FIELDS:
                raise bad(key, "a number or null")
            if key in TEXT_FIELDS:
                raise bad(key, "a string or null")
            if key == "verified":
                raise bad(key, "true, false or null")
            if key in SAMPLE_FIELDS:
                _check_samples(v, key, where)
            else:
                _check_nested(v, f"{where}: {key}")
    _check_consistent(rec, where)


def _check_chain(rec: dict[str, Any], where: str) -> None:
    """A chain record: its version is one this tool reads, and each of its GEMMs names its
    shape and stage (kernel_us and gap_before_us, where present, are times)."""
    if rec.get("chain_version") != CHAIN_VERSION:
        raise RooflineError(
            f"{where}: chain_version {rec.get('chain_version')!r} is not supported "
            f"(this tool reads {CHAIN_VERSION})"
        )
    gemms = rec.get("gemms")
    if not isinstance(gemms, list) or not gemms:
        raise RooflineError(f"{where}: a chain record lists its GEMMs ('gemms')")
    for j, g in enumerate(gemms):
        if not isinstance(g, dict) or any(f not in g for f in CHAIN_GEMM_FIELDS):
            raise RooflineError(f"{where}: gemms[{j}] must give {', '.join(CHAIN_GEMM_FIELDS)}")
        for f in ("m", "n", "k"):
            v = g[f]
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise RooflineError(f"{where}: gemms[{j}].{f} must be a whole number >= 1")
        for f in CHAIN_GEMM_TIMES:
            v = g.get(f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v < 0):
                raise RooflineError(f"{where}: gemms[{j}].{f} must be a time in us (>= 0)")


def _json_number(v: float) -> str:
    """A number as JSON (Python's reader's) spells it: NaN, Infinity, -Infinity, or %g."""
    if math.isnan(v):
        return "NaN"
    return ("-Infinity" if v < 0 else "Infinity") if math.isinf(v) else f"{v:g}"


def _check_number(v: float, key: str, where: str) -> None:
    """A record's number: finite; at least 0 unless it is one of SIGNED_FIELDS. (JSON has no
    NaN or Infinity, but Python's reader takes them, and 1e999 reads as infinity.)"""
    if not math.isfinite(v):
        raise RooflineError(
            f"{where}: {key!r} is {_json_number(v)}: a time, a speed or a count is a finite number"
        )
    if v < 0 and key not in SIGNED_FIELDS:
        raise RooflineError(
            f"{where}: {key!r} is {_json_number(v)}: a time, a speed or a count is at least 0"
        )


def _check_samples(v: Any, key: str, where: str) -> None:
    """Repeats: a list of positive finite times in ms."""
    if not isinstance(v, list) or not v:
        raise RooflineError(f"{where}: {key!r} must be a non-empty list of times in ms")
    for j, x in enumerate(v):
        if type(x) is not float and type(x) is not int or not 0 < x < math.inf:
            got = _json_number(x) if type(x) in (int, float) else repr(x)[:40]
            raise RooflineError(
                f"{where}: {key}[{j}] is {got}: each repeat is a positive finite time in ms"
            )


def _check_nested(value: Any, where: str) -> None:
    """A record's object or list (counters, roof levels, params): its strings are prose, its
    numbers finite. `where` ends in the field's path, e.g. "record 3 (naive): roof_levels"."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for k, x in items:
        if type(k) is str and not names.is_text(k):
            names.check_text(k, f"{where.rstrip(': ')}: a key")
        kind = type(x)
        if kind is float or kind is str or kind is dict or kind is list:
            at = (
                f"{where}[{k}]"
                if type(k) is int
                else f"{where}{'' if where[-1:] == ' ' else '.'}{k}"
            )
            if kind is float:
                if not -math.inf < x < math.inf:
                    raise RooflineError(f"{at} is {_json_number(x)}: a number here is finite")
            elif kind is str:
                if not names.is_text(x):
                    names.check_text(x, at)
            else:
                _check_nested(x, at)


def _check_consistent(rec: dict[str, Any], where: str) -> None:
    """A record's time is the median of its repeats, and its TFLOP/s its FLOPs over that time,
    within rounding (CONSISTENT_RTOL): a document whose stored speed its own samples contradict
    (edited by hand, or made by another tool) is refused, never gated or shown as it claims."""
    import statistics

    t = rec.get("time_ms")
    samples = rec.get("samples_ms")
    if isinstance(t, int | float) and isinstance(samples, list) and samples:
        med = statistics.median(samples)
        if abs(t - med) > CONSISTENT_RTOL * med + SAMPLE_ROUNDING_MS:
            raise RooflineError(
                f"{where}: 'time_ms' {t:.6g} is not the median of its samples_ms ({med:.6g}): "
                "the samples contradict the stored time"
            )
    tf, flops = rec.get("tflops"), rec.get("flops")
    if (
        isinstance(tf, int | float)
        and isinstance(flops, int | float)
        and isinstance(t, int | float)
    ):
        if t > 0 and flops > 0:
            implied = flops / t / 1e9  # inf, never a division by 0, for a time of 5e-324
            if abs(tf - implied) > CONSISTENT_RTOL * implied:
                raise RooflineError(
                    f"{where}: 'tflops' {tf:.6g} is not its flops over its time_ms "
                    f"({implied:.6g} TFLOP/s): the times contradict the stored speed"
                )
