"""The import statements of a source file, read from its syntax tree once per test session.

tests/test_layers.py and tests/test_names.py both check every import of the package, inside
functions too. Parsing its 16,000 lines and walking the trees takes about 0.7 s of CPU; kept
here, it is paid once for both files instead of once each.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

Import = ast.Import | ast.ImportFrom


@functools.cache
def imports(path: Path) -> tuple[Import, ...]:
    """Every `import` and `from ... import` statement of the file, in the order of ast.walk."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return tuple(node for node in ast.walk(tree) if isinstance(node, Import))
