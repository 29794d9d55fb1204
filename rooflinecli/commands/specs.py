"""`roofline specs`: the GPU spec registry, with ridge points per precision."""

from __future__ import annotations

import click

from rooflinecli import names
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
    import pandas as pd

    df = pd.DataFrame(rows)
    out = table.console()
    if fmt == "json":
        out.file.write(df.to_json(orient="records", indent=2) + "\n")
        return
    if fmt == "csv":
        out.file.write(table.csv_text(rows))
        return
    keys = [k for k in specs.PEAK_KEYS if f"{k}_tflops" in df.columns]
    short = {k: k.replace("_tensor_dense", " TC") for k in keys}
    headers = ["name", "GPU", "SMs", "GB/s", "L2 MiB", *[short[k] for k in keys]]
    cells = []
    for _, r in df.iterrows():
        line = [
            str(r["name"]),
            str(r["gpu"]),
            table.integer(r["sms"]),  # "-" where no vendor source gives it
            f"{r['bandwidth_gbs']:,.0f}",
            "-" if pd.isna(r["l2_mib"]) else f"{r['l2_mib']:g}",
        ]
        for k in keys:
            v = r.get(f"{k}_tflops")
            line.append("-" if pd.isna(v) else f"{v:g} ({r[f'{k}_ridge']:.1f})")
        cells.append(line)
    title = "GPU specs: dense peak TFLOP/s (ridge point in FLOP/byte = peak / bandwidth)"
    if fmt == "markdown":
        out.file.write(table.markdown_table(title, headers, [True] * len(headers), cells))
        return
    from rich.table import Table

    t = Table(
        title=title,
        caption="TC: Tensor Core, dense (sparsity figures are never used). int8 in TOP/s.",
        caption_justify="left",
        title_justify="left",
    )
    for h in headers:
        t.add_column(h, justify="left" if h in ("name", "GPU") else "right")
    for line in cells:
        t.add_row(*map(names.rich_text, line))  # a spec's names are text, never markup
    out.print(t)


@specs_group.command("show")
@click.argument("name", metavar="NAME|PATH")
@format_option
def show(name: str, fmt: str) -> None:
    """Show one spec in full, with its ridge points."""
    spec = specs.resolve(name)
    out = table.console()
    data = spec.to_dict()
    if fmt == "json":
        import json

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
        writer.writerows([names.csv_cell(k), names.csv_cell(v)] for k, v in rows)
        return
    title = f"{spec.display_name} ({spec.name})"
    if fmt == "markdown":
        table_rows = [[k, v] for k, v in rows]
        out.file.write(table.markdown_table(title, ["key", "value"], [True, True], table_rows))
        return
    from rich.table import Table

    t = Table(title=names.rich_text(title), title_justify="left", show_header=False)
    t.add_column("key")
    t.add_column("value")
    for k, v in rows:
        t.add_row(names.rich_text(k), names.rich_text(v))
    out.print(t)
