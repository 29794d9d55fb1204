"""`roofline specs`: the GPU spec registry, with ridge points per precision."""

from __future__ import annotations

import json

import click

from rooflinecli.commands import examples
from rooflinecli.core import roofs, specs
from rooflinecli.options import format_option
from rooflinecli.present import output, table


@click.group("specs", invoke_without_command=True)
@format_option
@click.pass_context
def specs_group(ctx: click.Context, fmt: str) -> None:
    """List GPU specs: peaks (dense TFLOP/s) and ridge points (FLOP/byte) per precision."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_specs, fmt=fmt)


@specs_group.command(
    "list", epilog=examples("roofline specs list", "roofline specs list --format csv")
)
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
    keys = [k for k in specs.PEAK_KEYS if any(f"{k}_tflops" in r for r in rows)]
    short = {k: k.replace("_tensor_dense", " TC") for k in keys}
    headers = ["name", "GPU", "SMs", "GB/s", "L2 MiB", *[short[k] for k in keys]]
    cells = []
    for r in rows:
        l2 = r.get("l2_mib")
        line = [
            str(r["name"]),
            str(r["gpu"]),
            table.integer(r.get("sms")),  # "-" where no vendor source gives it
            f"{r['bandwidth_gbs']:,.0f}",
            "-" if table.missing(l2) else f"{l2:g}",
        ]
        for k in keys:
            v = r.get(f"{k}_tflops")
            line.append("-" if table.missing(v) else f"{v:g} ({r[f'{k}_ridge']:.1f})")
        cells.append(line)
    # On a terminal too narrow for all of it, the columns go on in further tables, each led by
    # the name (what --spec takes), whole (output.Grid)
    grid = output.Grid(
        "GPU specs: dense peak TFLOP/s (ridge point in FLOP/byte = peak / bandwidth)",
        headers,
        cells,
        [h in ("name", "GPU") for h in headers],
        caption="TC: Tensor Core, dense (sparsity figures are never used). int8 in TOP/s.",
    )
    # JSON: every row with every field, null where a GPU has no such value (no pandas: its
    # import alone cost `specs` 0.41 s)
    fields = list(dict.fromkeys(f for r in rows for f in r))
    json_text = json.dumps([{f: r.get(f) for f in fields} for r in rows], indent=2) + "\n"
    output.emit(output.Report([grid], json=json_text, csv=rows), fmt)


@specs_group.command(
    "show",
    epilog=examples(
        "roofline specs show h100-sxm5", "roofline specs show my-gpu.toml --format json"
    ),
)
@click.argument("name", metavar="NAME|PATH")
@format_option
def show(name: str, fmt: str) -> None:
    """Show one spec in full, with its ridge points."""
    spec = specs.choose(name, None).spec
    data = spec.to_dict()
    ridges = {k: roofs.ridge_point(v, spec.memory_bandwidth_gbs) for k, v in spec.tflops.items()}
    rows: list[tuple[str, str]] = [(k, table.plain(v)) for k, v in data.items() if k != "tflops"]
    for key, peak in spec.tflops.items():
        ridge = roofs.ridge_point(peak, spec.memory_bandwidth_gbs)
        unit = "TOP/s" if key.startswith("int8") else "TFLOP/s"
        rows.append((f"tflops.{key}", f"{peak:g} {unit} (ridge {ridge:.1f} FLOP/byte)"))
    grid = output.Grid(
        f"{spec.display_name} ({spec.name})",
        ["key", "value"],
        [[k, v] for k, v in rows],
        [True, True],
        header=False,
    )
    report = output.Report(
        [grid], json={**data, "ridge_points": ridges}, csv=[{"key": k, "value": v} for k, v in rows]
    )
    output.emit(report, fmt)
