"""The results document: one versioned JSON file per run (or model). See docs/results-schema.md.

Every command that presents, compares or gates reads such a document and needs no GPU.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rooflinecli import __version__
from rooflinecli.errors import RooflineError

SCHEMA = "roofline.results/1"

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


@dataclass(frozen=True)
class Identity:
    """What a record measures: the key that pairs records across documents (gate, compare,
    baseline). Two records of one document must not share it."""

    stage: str  # the stage, or the name given to measure()
    dtype: str
    shape: tuple[int, int, int] | None  # (M, N, K); None for a measure() record without one
    workload: str | None = None  # `run llm`: preset:gemm:bBATCH (two weight GEMMs share shapes)

    @property
    def shape_text(self) -> str:
        return "x".join(str(d) for d in self.shape) if self.shape else "-"

    @property
    def label(self) -> str:
        """stage MxNxK dtype [workload]: how messages name the record."""
        parts = [self.stage] + ([self.shape_text] if self.shape else []) + [self.dtype]
        return " ".join(parts + ([self.workload] if self.workload else []))


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
    m, n, k = (_dim(record.get(d)) for d in ("m", "n", "k"))
    shape: tuple[int, int, int] | None = None
    if m is not None and n is not None and k is not None:
        shape = (m, n, k)
    elif (m, n, k) != (None, None, None):
        raise RooflineError(f"record {record.get('stage')!r}: give all of m, n and k, or none")
    workload = record.get("workload")
    if not isinstance(workload, str) or not workload:
        parts = [record.get(f) for f in ("preset", "gemm", "batch")]
        workload = f"{parts[0]}:{parts[1]}:b{parts[2]}" if None not in parts else None
    return Identity(str(record["stage"]), str(record.get("dtype")), shape, workload)


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
    return json.dumps(_clean(doc), indent=2) + "\n"


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write to a temporary file beside `path`, then rename: never a half-written file."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise RooflineError(f"cannot write {p}: folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; our files are ordinary files
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, p)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise RooflineError(f"cannot write {p}: {exc.strerror}") from None


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a results document; one-line RooflineError on anything malformed."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise RooflineError(f"results file {p} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RooflineError(f"cannot read {p}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise RooflineError(f"{p} is not JSON: {exc.msg} at line {exc.lineno}") from None
    validate(doc, str(p))
    return doc


def validate(doc: Any, where: str = "document") -> None:
    if not isinstance(doc, dict):
        raise RooflineError(f"{where}: not a results document (expected a JSON object)")
    schema = doc.get("schema")
    if not isinstance(schema, str) or not schema.startswith("roofline.results/"):
        raise RooflineError(f"{where}: not a roofline results document (schema {schema!r})")
    if schema != SCHEMA:
        raise RooflineError(f"{where}: schema {schema} is not supported (this tool reads {SCHEMA})")
    for key in ("tool_version", "created", "spec", "records"):
        if key not in doc:
            raise RooflineError(f"{where}: missing {key!r}")
    if not isinstance(doc["records"], list):
        raise RooflineError(f"{where}: 'records' must be a list")
    if doc.get("device") is not None and not isinstance(doc["device"], dict):
        raise RooflineError(f"{where}: 'device' must be an object or null")
    for i, rec in enumerate(doc["records"]):
        if not isinstance(rec, dict):
            raise RooflineError(f"{where}: record {i} is not an object")
        for key in ("stage", "dtype", "m", "n", "k"):
            if key not in rec:
                raise RooflineError(f"{where}: record {i} lacks {key!r}")
