"""The merged document of a --gpus run, shown as `show` shows it; a calibration per GPU as rows
of roofs."""

from __future__ import annotations

from typing import Any

from rooflinecli.present import View, document, output, table


def present(merged: dict[str, Any], kind: str, fmt: str) -> None:
    """Emit the merged document of `kind` ("results" or "calibration") in `fmt`."""
    if kind == "calibration":
        _calibrations(merged, fmt)
        return
    if table.is_app(merged) or not merged["records"]:
        n = merged["fleet"]["gpus"]
        output.emit(output.of_document(merged, [output.Line(f"{n} GPU(s) merged")]), fmt)
        return
    output.emit(document.report(merged, View(), False), fmt)


def _calibrations(merged: dict[str, Any], fmt: str) -> None:
    rows = []
    for item in merged["gpus"]:
        for key, m in sorted((item.get("measurements") or {}).items()):
            vals = m if isinstance(m, dict) else {"value": m}
            rows.append({"gpu": item["gpu"].get("label"), "roof": key,
                         **{k: v for k, v in vals.items()
                            if isinstance(v, int | float | str)}})  # fmt: skip
    cols = sorted({k for r in rows for k in r} - {"gpu", "roof"})

    def cell(v: Any) -> str:  # measured roofs to four significant figures, as elsewhere
        return f"{v:,.4g}" if isinstance(v, float) else str(v)

    columns: list[table.Column] = [("gpu", "GPU", str), ("roof", "roof", str)]
    columns += [(c, c, cell) for c in cols]
    title = f"Calibration of {len(merged['gpus'])} GPU(s)"
    output.emit(output.of_rows(rows, columns, [output.Rows(rows, columns, title=title)],
                               merged), fmt)  # fmt: skip
