"""What a newcomer reads in README.md and the pages under docs/ stays true: the generated parts
(stage tables, sample output, results tables) match the registry and the committed documents
they name, every column of the sample is defined, the set-up is the two commands on the first
screen, the README stays short, and `make run` without a GPU models the README's GPU."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rooflinecli import docgen, paths

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = docgen.pages(ROOT)


def blocks(text: str) -> list[tuple[str, str, str]]:
    """(kind, names, body) of every generated block."""
    return [(m["kind"], m["names"], m.group(0)) for m in docgen.BLOCK.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_generated_parts_match_their_documents(page: Path) -> None:
    text = page.read_text()
    assert docgen.generated(text) == text, f"{page.name} is stale: run `make docs`"


def test_the_pages_are_the_readme_and_docs_but_the_cli_reference() -> None:
    names = [p.relative_to(ROOT).as_posix() for p in PAGES]
    assert names[0] == "README.md" and "docs/cli.md" not in names
    for page in ("results", "stages", "background", "how-it-works", "architecture"):
        assert f"docs/{page}.md" in names


def test_blocks_name_committed_documents() -> None:
    found = {p.name: blocks(p.read_text()) for p in PAGES}
    kinds = sorted({k for b in found.values() for k, _, _ in b})
    assert kinds == ["best", "fastest", "results", "show", "token"]
    for page in found.values():
        for _, names, _ in page:
            for name in names.split(","):
                assert docgen._path(name).is_file(), name
    # the README shows one sample and no results table: those are on docs/results.md
    assert [(k, n) for k, n, _ in found["README.md"]] == [("show", "gemm-fp32-4096-ladder.json.gz")]
    # the results page's tables: the FP32 ladder, exercise 2, Tensor Cores, the calibration,
    assert {n for k, n, _ in found["results.md"] if k == "results"} == {
        "gemm-fp32-4096-ladder.json.gz",
        "profile-fp32-4096.json.gz,profile-fp32-4096-multistage.json.gz",
        "gemm-fp16-8192-interleaved.json.gz,gemm-bf16-8192-interleaved.json.gz",
        "benchmarks/calibration/h200-2026-12-01.json",
        # stage 11 against cuBLAS SGEMM, stages 27-30 against cuBLAS, the attention ladder
        "gemm-fp32-4096-spread.json.gz,gemm-fp32-8192-spread.json.gz",
        "spread-copies-variants-fp32.json.gz",
        "gemm-fp32-4096-serpentine-settings.json.gz,gemm-fp32-8192-serpentine-settings.json.gz",
        "gemm-bf16-tc-shapes-best.json.gz",
        "gemm-fp16-tc-shapes-best.json.gz",
        "gemm-fp16-8192-wgmma-27-28.json.gz,gemm-bf16-8192-wgmma-27-28.json.gz",
        "gemm-fp16-8192-wgmma-29.json.gz,gemm-bf16-8192-wgmma-29.json.gz",
        "gemm-fp16-4096-wgmma-29.json.gz,gemm-bf16-4096-wgmma-29.json.gz",
        "gemm-fp16-8192-wgmma-30.json.gz,gemm-bf16-8192-wgmma-30.json.gz",
        "gemm-fp16-4096-wgmma-30.json.gz,gemm-bf16-4096-wgmma-30.json.gz",
        "attn-b2-h16-n8192-d128-bf16.json.gz,attn-b2-h16-n8192-d128-bf16-causal.json.gz",
        "attn-sweep-d128-bf16.json.gz,attn-sweep-d128-bf16-causal.json.gz",
        "attn-sweep-d64-bf16.json.gz,attn-sweep-d64-bf16-causal.json.gz",
        # FP8 beside cuBLASLt
        "gemm-fp8-prefill-best.json.gz",
        # the H100 beside the H200
        "gemm-fp32-4096-ladder.json.gz,gemm-fp32-4096-ladder-h100.json.gz",
        "gemm-bf16-8192-interleaved.json.gz,gemm-bf16-8192-h100.json.gz",
        "gemm-fp16-8192-interleaved.json.gz,gemm-fp16-8192-h100.json.gz",
        "gemm-bf16-4096-h100.json.gz",
        "attn-b2-h16-n8192-d128-bf16.json.gz,attn-b2-h16-n8192-d128-bf16-h100.json.gz",
        "gemm-fp8-8192-h100.json.gz",
        "gemm-fp8-widths-h100.json.gz",
        "gemm-fp8-prefill-fill-h100.json.gz",
        "benchmarks/calibration/h100.json",
    }
    # the fastest stage per shape where a document timed several: FP8 at decode batches
    assert {n for k, n, _ in found["results.md"] if k == "fastest"} == {
        "gemm-fp8-decode-h100.json.gz",
        "gemm-fp8-even-h100.json.gz",
    }


def test_every_column_of_the_sample_is_defined() -> None:
    text = README.read_text()
    (sample,) = [body for kind, _, body in blocks(text) if kind == "show"]
    header = next(line for line in sample.splitlines() if line.startswith("| stage |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    defined = set(re.findall(r"^\| `([^`]+)` \|", text, re.M))
    missing = [c for c in columns if c not in defined]
    assert not missing, f"README defines no {missing}: add them under the sample"


def test_set_up_is_two_commands_on_the_first_screen_and_the_no_gpu_model_is_the_h200() -> None:
    text = README.read_text()
    first_screen = "\n".join(text.splitlines()[:40])
    assert (
        "$ make run    # installs into .venv, then runs the main job: roofline run gemm --m 4096"
        in first_screen
    )
    assert "$ make test   # installs what the tests need, then runs them (no GPU needed)" in (
        first_screen
    )
    assert "(`roofline model gemm --m 4096 --spec h100-sxm5`)" in text
    make = (ROOT / "Makefile").read_text()
    # `make run` and `make test` install first (unless the venv already is, for this
    # pyproject.toml: the stamp file), then compile the package's bytecode
    assert "\nbytecode: $(INSTALLED)\n\t@$(BYTECODE)\n" in make
    assert "\nBYTECODE := $(BIN)/python -m compileall -q rooflinecli\n" in make
    run = make[make.index("\nrun: bytecode\n") : make.index("\ntest: bytecode\n")]
    assert "$(BIN)/roofline run gemm --m 4096;" in run
    assert "$(BIN)/roofline model gemm --m 4096 --spec h100-sxm5;" in run


def test_the_readme_is_short() -> None:
    """What it is, a sample, the set-up, the commands, your own kernel, links: the rest is on
    the pages under docs/."""
    assert len(README.read_text().splitlines()) <= 250


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_document_and_link_a_page_names_exists(page: Path) -> None:
    text = page.read_text()
    for name in set(re.findall(r"`((?:gemm|profile|tune|llm)-[\w-]+\.json)`", text)):
        assert (ROOT / "benchmarks" / "results" / name).is_file(), name
    files = re.findall(r"`((?:benchmarks|examples|tests|kernels|specs)/[^`*{ ]+)`", text)
    for path in {f for f in files if "NN" not in f}:  # NN: a stage's number, as a pattern
        path, _, test = path.partition("::")  # a test named by its node id: file::function
        assert (ROOT / path).exists(), path
        if test:
            assert f"def {test}(" in (ROOT / path).read_text(), f"{path}::{test}"
    for link in set(re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)):
        assert (page.parent / link).exists(), f"{page.name}: {link}"


def test_every_anchor_a_page_links_to_exists() -> None:
    """A link to `page.md#heading` (or `#heading` on the same page) names a heading there, by
    GitHub's rule: lower case, punctuation but - and _ dropped, spaces to -."""

    def anchors(page: Path) -> set[str]:
        heads = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
        return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}

    for page in PAGES:
        for target, anchor in re.findall(r"\]\(([^)#:]*)#([^)]+)\)", page.read_text()):
            where = (page.parent / target) if target else page
            assert anchor in anchors(where), f"{page.name}: {target}#{anchor}"


def test_table_kinds() -> None:
    ladder = docgen.results_table("gemm-fp32-4096.json.gz")
    assert "| naive_xcol | 25.370 | 5.42 | 10.5 | 8.1 | 32 | 0 | 100 |" in ladder
    assert "| cublas (cublasSgemm) | 2.676 | 51.36 | 100.0 | 76.7 | - | - | - |" in ladder
    profile = docgen.results_table("profile-fp32-4096.json.gz,profile-fp32-4096-multistage.json.gz")
    assert "| naive_xcol | 25.33 | 7.33 GB | 18.8 | 3.9 | 0.50 | 0.25 |" in profile
    assert "| multistage | 2.95 | 0.40 GB | 346.7 | 40.5 | 41.8 | 2.67 (from SMEM) |" in profile
    assert profile.count("| cublas |") == 1  # a stage once, from the first document that has it
    both = docgen.results_table("gemm-fp16-8192.json.gz,gemm-bf16-8192.json.gz")
    assert both.splitlines()[0] == (
        "| stage | fp16 TFLOP/s | % cuBLAS | % peak | SM MHz "
        "| bf16 TFLOP/s | % cuBLAS | % peak | SM MHz |"
    )
    assert (
        "| wgmma_persistent | 668.66 | 101.5 | 67.6 | 1,615 | 684.74 | 100.2 | 69.2 | 1,578 |"
        in (both)
    )
    cal = docgen.results_table("benchmarks/calibration/h200-full.json")
    assert "| L2 read (1/4 of L2, ld.cg) | 7,823 GB/s | - |" in cal
    assert "| FP32 FMA (SIMT, 16 chains/thread) | 65.3 TFLOP/s | 67.0 TFLOP/s |" in cal


def test_a_new_document_makes_the_pages_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replace a document the pages name (as a new GPU run would): the check fails until
    `make docs` writes its numbers."""
    shutil.copytree(ROOT / "benchmarks", tmp_path / "benchmarks")
    path = tmp_path / "benchmarks" / "results" / "gemm-fp32-4096-ladder.json.gz"
    doc = paths.read_json(path, "results file")
    rec = doc["records"][0]  # slower, its repeats and speed with it (results.load checks them)
    scale = 30.0 / rec["time_ms"]
    rec["time_ms"], rec["tflops"] = 30.0, rec["tflops"] / scale
    rec["samples_ms"] = [t * scale for t in rec.get("samples_ms") or []] or None
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(docgen, "ROOT", tmp_path)
    for page in (README, ROOT / "docs" / "results.md"):  # the sample, the ladder's table
        text = page.read_text()
        again = docgen.generated(text)
        assert again != text
        assert "| naive_xcol | 30.000 |" in again
