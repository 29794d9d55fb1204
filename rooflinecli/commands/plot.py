"""`roofline plot`: the roofline of a results document as PNG, SVG or HTML (matplotlib)."""

from __future__ import annotations

import click

from rooflinecli import results


@click.command()
@click.argument("path", metavar="RESULTS.json", type=click.Path(dir_okay=False))
@click.option(
    "--output",
    "-o",
    required=True,
    metavar="FILE.png|svg|html",
    help="Image to write (format from the suffix), atomically.",
)
def plot(path: str, output: str) -> None:
    """Roofline of a results document as an image.

    PNG, SVG, or HTML (the SVG in a minimal page), chosen by the suffix of -o. Needs the
    `plot` extra (matplotlib).
    """
    from rooflinecli import plot as core  # matplotlib is imported only when drawing

    core.kind_of(output)
    results.check_output(output, document=False)
    doc = results.load(path)
    kind = core.save(doc, output)
    click.echo(f"wrote {output} ({kind}): {core.chart.title(doc)}")
