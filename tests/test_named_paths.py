"""Every file of the repository that the README, the docs, the package (its comments and its
help) and the benchmark scripts name is there: a module moved or a test renamed leaves no page
pointing at nothing. Placeholders (kernels/NN_name.cu, specs/NAME.toml) and the files a reader's
own commands write (benchmarks/baseline.json) are not files of the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMED = re.compile(
    r"(?<![\w/$.-])((?:tests|benchmarks|rooflinecli|kernels|examples|specs|dispatch|presets)"
    r"/[\w./-]+\.(?:py|sh|cuh|cu|toml|txt|md|gz))(?!\w)"
)
WRITTEN_BY_THE_READER = {"benchmarks/baseline.json"}


def sources() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pages += [ROOT / "benchmarks" / "README.md", ROOT / "kernels" / "README.md"]
    code = sorted((ROOT / "rooflinecli").rglob("*.py"))
    return pages + code + sorted((ROOT / "benchmarks").glob("*.sh"))


def test_every_repository_file_a_page_or_the_code_names_exists() -> None:
    missing = []
    for src in sources():
        for name in NAMED.findall(src.read_text()):
            placeholder = re.search(r"/(?:[A-Z]+|NN_[a-z]+)\.", name)
            if placeholder or name in WRITTEN_BY_THE_READER or (ROOT / name).exists():
                continue
            missing.append(f"{src.relative_to(ROOT)}: {name}")
    assert not missing, missing


def test_the_check_finds_a_moved_module(tmp_path: Path) -> None:
    assert NAMED.findall("(`rooflinecli/stats.py`)") == ["rooflinecli/stats.py"]
    assert not (ROOT / "rooflinecli/stats.py").exists()
    assert NAMED.findall("see $OUT/tests/x.py and a/tests/y.py") == []
