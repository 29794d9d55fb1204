"""benchmarks/ is a suite a maintainer can run again: every document the README and docs cite is
listed in benchmarks/README.md with the script that makes it, every script that page names
exists, every committed document is written by a step of some script, the scripts share one
step library, their stage lists name stages the registry has, and nothing in benchmarks/
reaches into the package's private names."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import children
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
PAGE = BENCH / "README.md"
DOCUMENTS = sorted(
    [*(BENCH / "results").glob("*.json.gz"), *(BENCH / "calibration").glob("*.json")]
    + [*(BENCH / "probes").glob("*.json")]
)
# the findings are transcribed, one entry per probe step (test_committed_results checks each)
FINDINGS = BENCH / "probes" / "h200-findings.json"
MEASURED = [p for p in DOCUMENTS if p != FINDINGS]
SCRIPTS = sorted(BENCH.glob("*.sh"))
VAR = re.compile(r"\$\{?\w+\}?")


def published_text() -> str:
    """What a reader of the project reads: README.md and every page under docs/."""
    return "\n".join(
        p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    )


def steps(script: Path) -> dict[str, str]:
    """The step functions of a suite script (`step_NAME() { ... }`): name -> body."""
    text = script.read_text()
    found = {m[1]: m[2] for m in re.finditer(r"^step_(\w+)\(\) \{(.*?)^\}", text, re.S | re.M)}
    found |= {m[1]: m[2] for m in re.finditer(r"^step_(\w+)\(\) \{ (.*)\}$", text, re.M)}
    return found


def loop_words(body: str) -> dict[str, str]:
    """The variables a step loops over literal words (`for dt in bf16 fp16`): name -> the
    pattern of those words."""
    out = {}
    for var, words in re.findall(r"for (\w+) in ([\w .-]+?);", body):
        out[var] = "(?:" + "|".join(re.escape(w) for w in words.split()) + ")"
    return out


def written_by(name: str) -> list[str]:
    """`SCRIPT STEP` for each step that names the document, literally or as a pattern of shell
    variables (gemm-$dt-8192.json; a variable looping over literal words takes only those)."""
    out = []
    for script in SCRIPTS:
        for step, body in steps(script).items():
            words = loop_words(body)
            for token in set(re.findall(r"[\w${}.-]+\.json(?:\.gz)?", body)):
                parts = VAR.split(token)
                names = [v.strip("${}") for v in VAR.findall(token)]
                pieces = zip(names, parts[1:], strict=True)
                pattern = re.escape(parts[0]) + "".join(
                    words.get(v, r"[\w.-]*") + re.escape(p) for v, p in pieces
                )
                if re.fullmatch(pattern, name):
                    out.append(f"{script.name} {step}")
    return sorted(set(out))


def test_there_is_a_suite() -> None:
    assert PAGE.is_file() and SCRIPTS and DOCUMENTS


@pytest.mark.parametrize("path", MEASURED, ids=lambda p: p.name)
def test_every_committed_document_is_made_by_a_step_of_the_suite(path: Path) -> None:
    assert written_by(path.name), f"no step of benchmarks/*.sh writes {path.name}"


def test_every_document_the_readme_and_docs_cite_is_on_the_benchmarks_page() -> None:
    text, page = published_text(), PAGE.read_text()
    cited = [p for p in DOCUMENTS if re.search(r"(?<![\w.-])" + re.escape(p.name), text)]
    assert cited, "the README cites documents"
    missing = [p.name for p in cited if p.name not in page]
    assert not missing, f"benchmarks/README.md does not list {missing}"


def test_every_committed_document_is_on_the_benchmarks_page_with_its_step() -> None:
    page = PAGE.read_text()
    rows = {
        m[1]: m[2]
        for m in re.finditer(
            r"^\| `((?:results|calibration|probes)/[^`]+)` \| (.*) \|$", page, re.M
        )
    }
    for path in DOCUMENTS:
        key = f"{path.parent.name}/{path.name}"
        assert key in rows, f"benchmarks/README.md has no row for {key}"
        if path == FINDINGS:
            assert "`probes.sh`" in rows[key], key
        for made in written_by(path.name):
            assert f"`{made}`" in rows[key], (key, made)


def test_every_script_and_step_the_page_names_exists() -> None:
    page = PAGE.read_text()
    named = set(re.findall(r"benchmarks/[\w/.-]+\.(?:sh|py)", page))
    named |= {f"benchmarks/{s}" for s in re.findall(r"`([\w-]+\.sh)[ `]", page)}
    assert named
    missing = [n for n in sorted(named) if not (ROOT / n).is_file()]
    assert not missing, missing
    for script, step in re.findall(r"`([\w-]+\.sh) ([a-z0-9_]+)`", page):
        assert step in steps(BENCH / script), f"{script} has no step {step}"


def test_the_figures_of_the_readme_and_docs_have_a_command_and_a_document() -> None:
    """Each generated block (`<!-- results:NAMES:begin -->`, `<!-- show:NAME:begin -->`,
    `<!-- token:NAMES:begin -->`) and
    each picture `make plots` draws is a row of the page's table of figures."""
    page = PAGE.read_text()
    text = published_text()
    blocks = re.findall(r"<!-- (?:results|show|token):([^:]+):begin", text)
    assert blocks
    for names in blocks:
        for name in names.split(","):
            assert Path(name).name in page, name
    make = (ROOT / "Makefile").read_text()
    plots = make[make.index("\nplots:") :].split("\n\n")[0]
    for picture in re.findall(r"-o (docs/[\w.-]+\.png)", plots):
        assert picture in page, picture


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_is_built_on_the_step_library(script: Path) -> None:
    if script.name == "lib.sh":
        return
    text = script.read_text()
    assert 'source "$(dirname "$0")/lib.sh"' in text and "\nsuite " in text, script.name
    assert text.splitlines()[1].startswith("# "), "a script opens by saying what it measures"
    assert steps(script), script.name


def private_uses(path: Path) -> list[str]:
    """Names with a leading underscore taken from the package: `from rooflinecli... import _x`,
    or `mod._x` where mod was imported from rooflinecli."""
    tree = ast.parse(path.read_text())
    ours: set[str] = set()
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rooflinecli"):
            for alias in node.names:
                if alias.name.startswith("_"):
                    bad.append(f"{path.name}:{node.lineno} imports {alias.name}")
                ours.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            ours |= {a.asname or a.name for a in node.names if a.name.startswith("rooflinecli")}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in ours
        ):
            bad.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    return bad


def test_nothing_in_benchmarks_calls_a_private_function_of_the_package() -> None:
    bad = [b for p in sorted(BENCH.rglob("*.py")) for b in private_uses(p)]
    assert not bad, bad


def test_the_private_name_check_finds_one(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(
        "from rooflinecli.gpu import profile\nfrom rooflinecli.api import _device\n"
        "profile._run(['x'], 1)\nprofile.run_command\n"
    )
    assert private_uses(script) == ["probe.py:2 imports _device", "probe.py:3 profile._run"]


FAKE_LIB = r"""
suite() { OUT=/nonexistent; STEPS=(); ARCH=sm_90a; cd "$ROOT" || exit 2; }
left() { echo "$1"; }
step() { :; }
calibration() { :; }
precompile() { :; }
doc() { shift 2; printf 'DOC'; printf '\t%s' "$@"; echo; }
run_steps() {
  local s
  for s in $(declare -F | sed -n 's/^declare -f step_//p'); do "step_$s" 2> /dev/null; done
}
"""


def suite_commands(tmp_path: Path) -> list[list[str]]:
    """Every `doc` command of the suite's steps, its shell variables expanded: each script run
    against a step library that prints the commands instead of running them."""
    (tmp_path / "lib.sh").write_text(FAKE_LIB)
    out = []
    for script in SCRIPTS:
        if script.name in ("lib.sh", "probes.sh"):  # probes.sh runs programs, not documents
            continue
        copy = tmp_path / script.name
        copy.write_text(script.read_text())
        res = children.run(
            ["bash", str(copy), "unused"], timeout=120,
            capture_output=True, text=True, env={"ROOT": str(ROOT), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        out += [line.split("\t")[1:] for line in res.stdout.splitlines() if line.startswith("DOC")]
    return out


def test_every_stage_list_of_the_suite_names_stages_the_registry_has(tmp_path: Path) -> None:
    """A stage renamed or dropped from the registry breaks the step that names it: found here,
    on the CPU, not on the GPU machine."""
    from rooflinecli.stages import attention, gemm

    commands = suite_commands(tmp_path)
    assert len(commands) > 50
    for cmd in commands:
        opts = {a: b for a, b in zip(cmd, cmd[1:], strict=False) if a.startswith("--")}
        if cmd[:2] == ["tune", "gemm"]:
            assert opts["--stage"] in gemm.BY_NAME, cmd
        names = opts.get("--stages")
        if names is None or names == "best":
            continue
        if cmd[:2] == ["run", "attention"]:
            assert set(names.split(",")) <= set(attention.ATTENTION_BY_NAME), cmd
        else:
            assert gemm.select(names, opts.get("--dtype", "fp32")), cmd
