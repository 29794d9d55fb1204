"""The results document: one versioned JSON file per run (or model). See docs/results-schema.md.

Every command that presents, compares or gates reads such a document and needs no GPU. The
package holds it in parts, each name importable from here:

- `schema`: the version, the fields a record carries and their types, a new document;
- `record`: a run's record, typed until `written()` makes it the document's dict, and the
  identity of a record;
- `text`: a document as JSON text (`dumps`, `file_text`);
- `validate`: reading a document (`load`, `validate`);
- `upgrade`: what older documents did not say, filled in on load;
- `provenance`: where a document was made (`environment`, `git_commit`);
- `fleet`: records that name their GPU, and `merge`.
"""

from __future__ import annotations

from rooflinecli.errors import RooflineError
from rooflinecli.results.fleet import GPU_FIELDS, gpu_of, is_fleet, merge
from rooflinecli.results.provenance import environment, git_commit
from rooflinecli.results.record import (
    Check,
    Identity,
    Pairing,
    Repeats,
    RunRecord,
    _summary,
    identity,
    written,
)
from rooflinecli.results.schema import (
    CHAIN_GEMM_FIELDS,
    CHAIN_GEMM_TIMES,
    CHAIN_VERSION,
    CONSISTENT_RTOL,
    DOCUMENT_NAMES,
    NAME_FIELDS,
    NUMBER_FIELDS,
    READABLE,
    RECORD_FIELDS,
    SAMPLE_FIELDS,
    SAMPLE_ROUNDING_MS,
    SCHEMA,
    SHAPE_FIELDS,
    SIGNED_FIELDS,
    TEXT_FIELDS,
    complete_record,
    new_document,
)
from rooflinecli.results.text import dumps, file_text
from rooflinecli.results.upgrade import upgrade
from rooflinecli.results.validate import _check_consistent, _check_number, load, validate

__all__ = [
    "CHAIN_GEMM_FIELDS", "CHAIN_GEMM_TIMES", "CHAIN_VERSION", "CONSISTENT_RTOL",
    "DOCUMENT_NAMES", "GPU_FIELDS", "NAME_FIELDS", "NUMBER_FIELDS", "READABLE", "RECORD_FIELDS",
    "SAMPLE_FIELDS", "SAMPLE_ROUNDING_MS", "SCHEMA", "SHAPE_FIELDS", "SIGNED_FIELDS",
    "TEXT_FIELDS", "Check", "Identity", "Pairing", "Repeats", "RooflineError", "RunRecord",
    "_check_consistent", "_check_number", "_summary", "complete_record", "dumps",
    "environment", "file_text", "git_commit", "gpu_of", "identity", "is_fleet", "load", "merge",
    "new_document", "upgrade", "validate", "written",
]  # fmt: skip
