import pytest
from click.testing import CliRunner

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner(env=ENV)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    """Compiled kernels go to one cache per test session, never the user's."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
