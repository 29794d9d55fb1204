"""present: tables, the terminal chart, the image, the gate and comparisons. They read results
documents and need no GPU."""

from dataclasses import dataclass

# every command's --format (rooflinecli.present.table writes each); here so that the CLI's
# options can name them without importing the table code (pandas, rich)
FORMATS = ("table", "json", "csv", "markdown")


@dataclass(frozen=True)
class View:
    """Which columns a table (or Markdown table) of records shows: the compact default, every
    one (`--wide`), or the ones named (`--columns`, by record field). JSON and CSV always carry
    every field. rooflinecli.present.table.select applies it to a column set."""

    wide: bool = False
    names: tuple[str, ...] = ()
