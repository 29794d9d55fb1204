"""The results document: one versioned JSON file per run (or model). See docs/results-schema.md.

Every command that presents, compares or gates reads such a document and needs no GPU.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

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


# Types of the record fields the renderers compute with, checked on load (null is always
# allowed: a field that does not apply). Numbers are int or float, never bool.
TEXT_FIELDS = frozenset({"kind", "roof", "roof_set", "peak_key", "error", "workload", "gemm"})
NUMBER_FIELDS = frozenset(
    {f for f in RECORD_FIELDS if f not in {"stage", "dtype", "verified"} | TEXT_FIELDS}
    | {
        "sm_clock_mhz", "sm_clock_mhz_min", "sm_clock_mhz_max", "clock_samples", "power_w",
        "bandwidth_gbs", "ridge_point", "attainable_instruction_tflops", "time_us_per_token",
        "allowed_us_per_token", "batch", "count", "crossing_batch", "local_bytes", "blocks_per_sm",
        "ncu_time_ms", "tflops_ncu", "flops_hw", "flops_hw_ratio", "bytes_dram", "bytes_l2",
        "bytes_l1", "ai_dram", "ai_l2", "ai_l1",
    }
)  # fmt: skip
SHAPE_FIELDS = ("m", "n", "k")


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


STDOUT = "-"  # -o -: the document goes to standard output

# While a command writes a document to standard output (-o -), everything else it prints goes to
# standard error; this is the standard output the document is written to.
_claimed_stdout: TextIO | None = None


def claim_stdout() -> Callable[[], None]:
    """Keep standard output for the document (-o -): until the returned function is called,
    sys.stdout is standard error, so tables and messages do not mix into the document."""
    global _claimed_stdout
    if _claimed_stdout is not None:
        raise RooflineError("only one output can be - (standard output)")
    _claimed_stdout, sys.stdout = sys.stdout, sys.stderr

    def release() -> None:
        global _claimed_stdout
        if _claimed_stdout is not None:
            sys.stdout, _claimed_stdout = _claimed_stdout, None

    return release


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _resolved(path: str | Path) -> tuple[Path, os.stat_result | None]:
    """The file a write to `path` replaces (symlinks followed: the link itself stays) and its
    status, None when there is none yet."""
    p = Path(path)
    target = Path(os.path.realpath(p))
    try:
        return target, os.stat(target)
    except FileNotFoundError:
        return target, None
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror}") from None


def check_output(
    path: str | Path, *, force: bool = False, document: bool = True, make_folder: bool = False
) -> None:
    """Refuse, before any work, what write_output would refuse: anything but a regular file at
    the path (a device, FIFO, socket or folder is never touched), an existing file without
    --force (documents only), a file or folder we may not write."""
    if str(path) == STDOUT:
        return
    p = Path(path)
    target, st = _resolved(p)
    if st is not None:
        kind = next((what for test, what in _KINDS if test(st.st_mode)), None)
        if kind is not None or not stat.S_ISREG(st.st_mode):
            stream = document and not stat.S_ISDIR(st.st_mode)
            hint = f" (-o {STDOUT} writes to standard output)" if stream else ""
            raise RooflineError(f"cannot write {p}: it is {kind or 'not a regular file'}{hint}")
        if document and not force:
            raise RooflineError(f"{p} exists: pass --force to replace it")
        if not os.access(target, os.W_OK):
            raise RooflineError(f"cannot write {p}: permission denied")
    if make_folder:
        return
    folder = target.parent
    shown = p.parent if os.path.abspath(p) == str(target) else folder
    if not folder.is_dir():
        raise RooflineError(f"cannot write {p}: folder {shown} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RooflineError(f"cannot write {p}: folder {shown} is not writable")


def write_output(
    path: str | Path,
    data: str | bytes,
    *,
    force: bool = False,
    document: bool = True,
    make_folder: bool = False,
) -> None:
    """The one writer of every file a command writes (-o, baseline save, plot, gate reports).

    `-` writes to standard output. Otherwise the data goes to a temporary file beside the
    target, then is renamed onto it: never a half-written file. A symlink is written through
    (the link stays, its target is replaced); an existing file keeps its mode and, where
    permitted, its owner. Refused in one line (RooflineError), with nothing touched: a device,
    FIFO, socket or folder at the path, and, for a results document (`document`), an existing
    file without `force`.
    """
    if str(path) == STDOUT:
        out = _claimed_stdout or sys.stdout
        if isinstance(data, bytes):
            out.flush()
            out.buffer.write(data)
        else:
            out.write(data)
        out.flush()
        return
    check_output(path, force=force, document=document, make_folder=make_folder)
    p = Path(path)
    target, st = _resolved(p)
    if make_folder:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RooflineError(f"cannot create {target.parent}: {exc.strerror}") from None
    _replace(p, target, st, data, no_clobber=document and not force, sync=True)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Replace the file at `path` (through a symlink, keeping its mode) with `data`, atomically:
    for caches and tools; commands write through write_output."""
    p = Path(path)
    target, st = _resolved(p)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise RooflineError(f"cannot write {p}: not a regular file")
    if not target.parent.is_dir():
        raise RooflineError(f"cannot write {p}: folder {target.parent} does not exist")
    _replace(p, target, st, data, no_clobber=False, sync=False)


def _replace(
    p: Path,
    target: Path,
    st: os.stat_result | None,
    data: str | bytes,
    no_clobber: bool,
    sync: bool,
) -> None:
    """Temp file beside `target`, same mode (and owner where permitted) as the file it
    replaces, flushed to disk (`sync`), then renamed onto it (with `no_clobber`, linked: never
    over a file that appeared meanwhile)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror}") from None
    try:
        if st is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes 0600; a new file is an ordinary file
        else:
            mode = stat.S_IMODE(st.st_mode)
            _chown(fd, st)
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        if no_clobber:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise RooflineError(f"{p} exists: pass --force to replace it") from None
            except OSError:  # no hard links on this file system: the check above stands
                os.replace(tmp, target)
        else:
            os.replace(tmp, target)
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def _chown(fd: int, st: os.stat_result) -> None:
    """Give the new file the old one's owner and group, or just its group, where permitted."""
    for uid in (st.st_uid, -1):
        try:
            os.fchown(fd, uid, st.st_gid)
            return
        except OSError:
            continue


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
    if not isinstance(doc["spec"], dict):
        raise RooflineError(f"{where}: 'spec' must be an object")
    for i, rec in enumerate(doc["records"]):
        if not isinstance(rec, dict):
            raise RooflineError(f"{where}: record {i} is not an object")
        for key in ("stage", "dtype", "m", "n", "k"):
            if key not in rec:
                raise RooflineError(f"{where}: record {i} lacks {key!r}")
        _check_types(rec, f"{where}: record {i}")


def _check_types(rec: dict[str, Any], where: str) -> None:
    """Wrongly typed fields are one line naming the file, the record and the field."""
    name = rec.get("stage")
    if isinstance(name, str):
        where = f"{where} ({name})"

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
        if v is None:
            continue
        if key in NUMBER_FIELDS and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise bad(key, "a number or null")
        if key in TEXT_FIELDS and not isinstance(v, str):
            raise bad(key, "a string or null")
        if key == "verified" and not isinstance(v, bool):
            raise bad(key, "true, false or null")
