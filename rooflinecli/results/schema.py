"""The results document's schema: its version, the fields a record carries and their types,
and a new document with every record complete (docs/results-schema.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rooflinecli import __version__

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
# it). A way whose one kernel runs every GEMM (kernels_per_token) has per-GEMM times only from
# its blocks' own stamps (timeline_backend "globaltimer": per GEMM the blocks' mean kernel_us,
# gap_before_us and wait_us, the wait for its input; tracing_overhead is the stamping build's
# median over the plain build's, both replayed in the same rounds: stamped_samples_ms and
# unstamped_samples_ms).
CHAIN_VERSION = "roofline.chain/1"
CHAIN_GEMM_FIELDS = ("name", "m", "n", "k", "stage")
CHAIN_GEMM_TIMES = ("kernel_us", "gap_before_us", "wait_us")

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
        "wait_share", "tail_us", "stamp_resolution_ns", "stamped_blocks",
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
SAMPLE_FIELDS = ("samples_ms", "reference_samples_ms", "stamped_samples_ms", "unstamped_samples_ms")
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
