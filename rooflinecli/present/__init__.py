"""present: tables, the terminal chart, the image, the gate and comparisons. They read results
documents and need no GPU."""

from typing import NamedTuple

# every command's --format (rooflinecli.present.table writes each); here so that the CLI's
# options can name them without importing the table code (pandas, rich)
FORMATS = ("table", "json", "csv", "markdown")

# The most points `roofline plot` draws unless --max-points says more: a plot costs about a
# millisecond and 40 KB of memory a point (a document of 100,000 records: over 120 s, 3.7 GB).
MAX_POINTS = 5_000


class View(NamedTuple):
    """Which columns a table (or Markdown table) of records shows: the compact default, every
    one (`--wide`), or the ones named (`--columns`, by record field). JSON and CSV always carry
    every field. rooflinecli.present.table.select applies it to a column set.

    A NamedTuple, as are the other immutable values that every command loads (ColumnSet, Roof,
    Identity, Spec): a frozen dataclass costs about 1 ms of start-up to create (Python 3.11 execs
    each generated method), a NamedTuple about 0.2 ms."""

    wide: bool = False
    names: tuple[str, ...] = ()
