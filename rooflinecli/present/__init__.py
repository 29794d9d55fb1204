"""present: tables, the terminal chart, the image, the gate and comparisons. They read results
documents and need no GPU."""

# every command's --format (rooflinecli.present.table writes each); here so that the CLI's
# options can name them without importing the table code (pandas, rich)
FORMATS = ("table", "json", "csv", "markdown")
