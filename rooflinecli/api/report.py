"""The report job: one HTML page of results documents, each on the roofs of its calibration."""

from __future__ import annotations

from typing import Any

from rooflinecli.api.common import calibration_for, load_calibration


def write_report(
    output: str,
    paths: list[str],
    docs: list[dict[str, Any]],
    calibration_path: str | None,
    result: Any = None,
    baseline: tuple[str, dict[str, Any]] | None = None,
    force: bool = False,
) -> int:
    """Write the page of `docs` (the first the current run of a gate `result` against
    `baseline`); returns its size in bytes."""
    from rooflinecli import files
    from rooflinecli.present import report

    given = None
    if calibration_path:  # read and checked once, against the first document's GPU
        given = load_calibration(calibration_path, docs[0])
    sources = [
        report.Source(p, d, calibration_for(d, given)) for p, d in zip(paths, docs, strict=True)
    ]
    base = None
    if baseline is not None:
        base = report.Source(baseline[0], baseline[1], calibration_for(baseline[1], given))
    data = report.render(sources, result, base).encode("utf-8")
    files.write_output(output, data, document=False, force=force)
    return len(data)
