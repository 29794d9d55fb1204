# The tool imports NumPy, pandas and rich on first use; pytester's in-process runs
# (test_pytest_plugin) put sys.modules back as they found it, after which NumPy's extension
# cannot load again and rich's classes would be loaded twice: load them before any test runs.
import numpy  # noqa: F401
import pandas  # noqa: F401
import pytest
import rich.console  # noqa: F401
import rich.table  # noqa: F401
from click.testing import CliRunner

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """Compiled kernels go to one cache per test session, never the user's."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
