"""A run or model document as `show`, `run gemm` and `run attention` print it: one table per
shape, each titled by its shape, GPU and roofs, the stages a sweep left out in one line, then
the terminal chart. Each function here builds the Report; rooflinecli.present.output writes it
in the --format asked for."""

from __future__ import annotations

from typing import Any

from rooflinecli.core import attention, chain, roofs
from rooflinecli.present import View, output, table


def title(doc: dict[str, Any], recs: list[dict[str, Any]]) -> str:
    """Heading of one shape's table: the shape, the GPU and the roof it is placed under."""
    spec, device, r0 = doc.get("spec") or {}, doc.get("device"), recs[0]
    where = (
        f"model on {spec.get('display_name', '?')} ({spec.get('name', '?')})"
        if device is None
        else f"on {device.get('name', '?')} (spec {spec.get('name', '?')})"
    )
    if r0.get("op") == "attention":
        text = f"Attention {attention.label(r0)} {r0['dtype']} {where}"
    elif r0.get("op") == "chain":
        text = f"Chain {r0.get('workload')} {r0['dtype']} {where}"
    else:
        text = f"GEMM {r0['m']}x{r0['n']}x{r0['k']} {r0['dtype']} {where}"
    per_row = roofs.per_row_roofs(recs)
    if per_row:
        return f"{text}: {per_row}"
    if r0.get("peak_tflops"):
        # a run can be placed against another roof set; a model always stands under the spec's
        shown = {**r0, "roof_set": (r0.get("roof_set") or "datasheet") if device else None}
        text += ": " + roofs.title(shown, spec.get("memory_bandwidth_gbs"))
    return text


def tables(doc: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The tables `show` prints (the report's page too): one per shape, each with its title."""
    shapes = list(dict.fromkeys(roofs.shape_key(r) for r in doc["records"]))
    out = []
    for shape in shapes:
        recs = [r for r in doc["records"] if roofs.shape_key(r) == shape]
        out.append((title(doc, recs), recs))
    return out


def columns_of(doc: dict[str, Any]) -> table.ColumnSet:
    recs = doc.get("records") or []
    if recs and all(isinstance(r.get("gpu"), dict) for r in recs):
        return table.with_gpu(_columns_of(doc))
    return _columns_of(doc)


def _columns_of(doc: dict[str, Any]) -> table.ColumnSet:
    if doc.get("device") is None:
        if doc.get("command") == "model attention":
            return table.ATTENTION_MODEL
        return table.MODEL
    if doc.get("command") in ("run llm", chain.COMMAND):  # GEMMs can share a shape: name them
        return table.LLM
    return table.RUN


def skipped_line(doc: dict[str, Any]) -> list[output.Part]:
    """The stages a sweep left out where they cannot run (rooflinecli.plan), in one line."""
    summary = table.skip_summary(doc.get("skipped"))
    return [output.Line(summary, gap=True)] if summary else []


def report(doc: dict[str, Any], view: View, draw: bool) -> output.Report:
    """A run or model document as `show` prints it: one table per shape, then the chart."""
    columns = columns_of(doc)
    table.select(columns, view)  # an unknown --columns name: one line, now
    parts: list[output.Part] = []
    for heading, recs in tables(doc):
        parts.append(output.Records({**doc, "records": recs}, columns, heading, view=view))
    parts += skipped_line(doc)
    parts += [output.Line(line) for line in chain_lines(doc)]
    if draw:
        parts.append(output.Chart(doc, gap=True))
    return output.of_document(doc, parts)


def chain_lines(doc: dict[str, Any]) -> list[str]:
    """Under a chain document's tables, per chain: the token time of each way, the layers run
    and the scale, whether the cuBLAS chain is a fair baseline, and the timeline's gap share."""
    from rooflinecli import names

    lines: list[str] = []
    chains = list(
        dict.fromkeys(r.get("workload") for r in doc["records"] if r.get("op") == "chain")
    )
    for workload in chains:
        recs = [
            r for r in doc["records"] if r.get("op") == "chain" and r.get("workload") == workload
        ]
        ways = []
        for r in recs:
            t = r.get("time_us_per_token")
            what = (
                f"{t:,.1f} us"
                if r.get("time_ms") and t
                else ("failed verification" if r.get("verified") is False else "absent")
            )
            share = r.get("read_roof_share")
            if share is not None and r.get("time_ms"):
                what += f", {100 * share:.1f}% of the read roof"
            gap = r.get("gap_share")
            if gap is not None:
                what += f" (gaps {100 * gap:.1f}%)"
            ways.append(f"{names.plain(str(r['stage']))} {what}")
        r0 = recs[0]
        text = f"{names.plain(str(workload))}: " + ", ".join(ways)
        if r0.get("layers") and r0.get("layers_run") != r0.get("layers"):
            text += (
                f"; {r0.get('layers_run')} of {r0.get('layers')} layers ran, "
                f"scaled x{r0.get('scale'):.3f}"
            )
        lines.append(text)
        lines += [line for r in recs if (line := _timeline_line(str(workload), r))]
        fair = next((r.get("fairness") for r in recs if r.get("fairness")), None)
        if fair:
            lines.append(f"{names.plain(str(workload))}: {names.plain(str(fair))}")
    read = (doc.get("settings") or {}).get("read_roof") or {}
    if chains and read.get("hbm_read_gbs"):
        lines.append(
            f"HBM read roof {read['hbm_read_gbs']:,.0f} GB/s "
            f"({names.plain(str(read.get('source')))})"
        )
    elif chains and read.get("why"):
        lines.append(f"HBM read roof: none ({names.plain(str(read['why']))})")
    for v in doc.get("verdicts") or []:
        value = v.get("value")
        shown = (
            "n/a"
            if value is None
            else (f"{100 * value:.1f}%" if v.get("what") != "cublas_over_ours" else f"{value:.3f}")
        )
        verdict = {True: "MET", False: "NOT MET", None: "NOT MEASURED"}[v.get("ok")]
        lines.append(
            f"target b{v.get('batch')}: {names.plain(str(v.get('line')))}: {shown}, {verdict}"
        )
    return lines


def _timeline_line(workload: str, r: dict[str, Any]) -> str | None:
    """A chain record's timeline in one line: the traced (or stamped) token, what it cost, the
    kernels (and their waits for input), the gaps and the tail, and how they add up."""
    from rooflinecli import names

    traced = r.get("traced_token_us")
    if not traced or not r.get("gemms"):
        return None
    kernels = sum(g.get("kernel_us") or 0.0 for g in r["gemms"])
    gaps = sum(g.get("gap_before_us") or 0.0 for g in r["gemms"])
    over = r.get("tracing_overhead")
    err = r.get("timeline_error")
    waits = [g["wait_us"] for g in r["gemms"] if g.get("wait_us") is not None]
    how = "stamped" if r.get("timeline_backend") == "globaltimer" else "traced"  # own stamps
    return (
        f"{names.plain(workload)} {names.plain(str(r['stage']))} timeline: "
        f"{how} token {traced:,.1f} us"
        + (f" ({100 * over:+.1f}% against un{how})" if over is not None else "")
        + f", kernels {kernels:,.1f} us"
        + (f" (waiting for input {sum(waits):,.1f} us)" if waits else "")
        + f", gaps {gaps:,.1f} us"
        + (f", last block {r['tail_us']:,.1f} us after the mean"
           if r.get("tail_us") is not None else "")
        + (f", kernels + gaps {100 * err:+.1f}% against the token" if err is not None else "")
    )  # fmt: skip


def pick_line(pick: Any) -> str:
    """What `--stages best` says under a shape's table: the pick, its class, its table."""
    via = "" if pick.entry_class == pick.shape_class else f", by the entry of {pick.entry_class}"
    if pick.wave_model:
        via += ", the wave model's candidate for this shape"
    return f"best: {pick.stage.name} (class {pick.shape_class}{via}; table {pick.table})"


def gemm_run(
    doc: dict[str, Any],
    shapes: list[tuple[int, int, int]],
    view: View,
    draw: bool,
    picks: dict[tuple[int, int, int], Any] | None = None,
) -> output.Report:
    """`run gemm`: a table per shape titled by the GPU and its roofs (with --stages best, the
    pick under it), its chart, the stages left out, and with several shapes TFLOP/s per stage
    and shape."""
    device, dtype = doc["device"], doc["records"][0]["dtype"]
    parts: list[output.Part] = []
    for shape in shapes:
        recs = [r for r in doc["records"] if (r["m"], r["n"], r["k"]) == shape]
        one = {**doc, "records": recs}
        roofs_text = roofs.per_row_roofs(recs) or roofs.title(recs[0])
        heading = (
            f"GEMM {shape[0]}x{shape[1]}x{shape[2]} {dtype} on {device['name']} "
            f"(spec {doc['spec']['name']}: {roofs_text})"
        )
        parts.append(output.Records(one, table.RUN, heading, view=view))
        if picks is not None:
            parts.append(output.Line(pick_line(picks[shape])))
        if draw:
            parts.append(output.Chart(one))
    parts += skipped_line(doc)
    if len(shapes) > 1:
        parts.append(output.Scaling(doc["records"]))
    return output.of_document(doc, parts)


def fleet_points(doc: dict[str, Any], per_gpu: bool) -> dict[str, Any]:
    """A fleet document as `plot` draws it: one point per stage and shape, the GPU of median
    time (default), or with `per_gpu` one point per GPU per stage, each named by its GPU. Any
    other document is as it is."""
    recs = doc.get("records") or []
    if not recs or not all(isinstance(r.get("gpu"), dict) for r in recs):
        return doc
    if per_gpu:
        out = [{**r, "stage": f"{r['stage']} on {r.get('gpu_label')}"} for r in recs]
        return {**doc, "records": out}
    rows: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in recs:
        key = (r.get("stage"), r.get("dtype"), roofs.shape_key(r), r.get("workload"))
        rows.setdefault(key, []).append(r)
    picked = []
    for group in rows.values():
        timed = sorted((r for r in group if isinstance(r.get("time_ms"), int | float)),
                       key=lambda r: float(r["time_ms"]))  # fmt: skip
        picked.append(timed[(len(timed) - 1) // 2] if timed else group[0])
    return {**doc, "records": picked}
