"""`roofline specs`: the GPU spec registry, with ridge points per precision."""

from __future__ import annotations

import json

import click

from rooflinecli.core import roofs, specs
from rooflinecli.options import format_option
from rooflinecli.present import table


@click.group("specs", invoke_without_command=True)
@format_option
@click.pass_context
def specs_group(ctx: click.Context, fmt: str) -> None:
    """List GPU specs: peaks (dense TFLOP/s) and ridge points (FLOP/byte) per precision."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_specs, fmt=fmt)


@specs_group.command("list")
@format_option
def list_specs(fmt: str) -> None:
    """List GPU specs with their ridge points per precision."""
    rows = []
    for spec in specs.registry().values():
        row: dict[str, object] = {
            "name": spec.name,
            "gpu": spec.display_name,
            "sms": spec.sm_count,
            "bandwidth_gbs": spec.memory_bandwidth_gbs,
            "l2_mib": spec.l2_cache_mib,
        }
        for key in specs.PEAK_KEYS:
            if key in spec.tflops:
                peak = spec.tflops[key]
                row[f"{key}_tflops"] = peak
                row[f"{key}_ridge"] = roofs.ridge_point(peak, spec.memory_bandwidth_gbs)
        rows.append(row)
    out = table.console()
    keys = [k for k in specs.PEAK_KEYS if any(f"{k}_tflops" in r for r in rows)]
    if fmt == "json":  # every row with every field, null where a GPU has no such peak
        fields = list(dict.fromkeys(f for r in rows for f in r))
        out.file.write(json.dumps([{f: r.get(f) for f in fields} for r in rows], indent=2) + "\n")
        return
    if fmt == "csv":
        out.file.write(table.csv_text(rows))
        return
    short = {k: k.replace("_tensor_dense", " TC") for k in keys}
    columns: list[table.Column] = [
        ("name", "name", str),
        ("gpu", "GPU", str),
        ("sms", "SMs", str),
        ("bandwidth_gbs", "GB/s", lambda v: f"{v:,.0f}"),
        ("l2_mib", "L2 MiB", lambda v: f"{v:g}"),
    ]
    cells = []
    for r in rows:
        line = dict(r)
        for k in keys:
            v = r.get(f"{k}_tflops")
            line[k] = "-" if v is None else f"{v:g} ({r[f'{k}_ridge']:.1f})"
        cells.append(line)
    columns += [(k, short[k], str) for k in keys]
    title = "GPU specs: dense peak TFLOP/s (ridge point in FLOP/byte = peak / bandwidth)"
    if fmt == "markdown":
        headers = [h for _, h, _ in columns]
        body = [[fmt_(c[f]) for f, _, fmt_ in columns] for c in cells]
        out.file.write(table.markdown_table(title, headers, [True] * len(headers), body))
        return
    # The name (what --spec takes) leads every table, whole; the GPU's name and each "peak
    # (ridge)" wrap at their spaces; what does not fit the console goes to a table of its own.
    table.print_fitted(
        out,
        table.Rows(cells),
        columns,
        title=title,
        caption="TC: Tensor Core, dense (sparsity figures are never used). int8 in TOP/s.",
        name_fields=frozenset(),
        prose_fields=frozenset({"gpu", *keys}),
        left_fields=("name", "gpu"),
    )


@specs_group.command("show")
@click.argument("name", metavar="NAME|PATH")
@format_option
def show(name: str, fmt: str) -> None:
    """Show one spec in full, with its ridge points."""
    spec = specs.resolve(name)
    out = table.console()
    data = spec.to_dict()
    if fmt == "json":
        ridges = {
            k: roofs.ridge_point(v, spec.memory_bandwidth_gbs) for k, v in spec.tflops.items()
        }
        out.file.write(json.dumps({**data, "ridge_points": ridges}, indent=2) + "\n")
        return
    rows: list[tuple[str, str]] = [(k, table.plain(v)) for k, v in data.items() if k != "tflops"]
    for key, peak in spec.tflops.items():
        ridge = roofs.ridge_point(peak, spec.memory_bandwidth_gbs)
        unit = "TOP/s" if key.startswith("int8") else "TFLOP/s"
        rows.append((f"tflops.{key}", f"{peak:g} {unit} (ridge {ridge:.1f} FLOP/byte)"))
    if fmt == "csv":
        import csv

        writer = csv.writer(out.file, lineterminator="\n")
        writer.writerow(["key", "value"])
        writer.writerows(rows)
        return
    title = f"{spec.display_name} ({spec.name})"
    if fmt == "markdown":
        table_rows = [[k, v] for k, v in rows]
        out.file.write(table.markdown_table(title, ["key", "value"], [True, True], table_rows))
        return
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_header=False)
    t.add_column("key")
    t.add_column("value")
    for k, v in rows:
        t.add_row(k, v)
    out.print(t)
