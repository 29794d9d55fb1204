"""Reading a document: its shape, types, names and numbers checked, one line for what is wrong."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rooflinecli import doc_check, names, paths
from rooflinecli.errors import RooflineError
from rooflinecli.results.schema import (
    _NAMES,
    CHAIN_GEMM_FIELDS,
    CHAIN_GEMM_TIMES,
    CHAIN_VERSION,
    CONSISTENT_RTOL,
    DOCUMENT_NAMES,
    NUMBER_FIELDS,
    READABLE,
    SAMPLE_FIELDS,
    SAMPLE_ROUNDING_MS,
    SHAPE_FIELDS,
    SIGNED_FIELDS,
    TEXT_FIELDS,
)
from rooflinecli.results.upgrade import upgrade


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
