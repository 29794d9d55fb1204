"""One default spec without a GPU, for every command that needs one: core.specs.DEFAULT, the
H100 SXM5 of the column the ladder follows and of `make run`, chosen in that one place, and
named in each command's output with why it was taken."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rooflinecli import api
from rooflinecli.cli import cli
from rooflinecli.core import specs
from rooflinecli.stages import compiler
from rooflinecli.stages import gemm as stages

ROOT = Path(__file__).resolve().parent.parent
NO_GPU = "(h100-sxm5, no GPU: the default, --spec chooses)"


@pytest.fixture
def no_gpu(monkeypatch):
    """nvidia-smi names no GPU (as on a machine without one, whatever this one has)."""
    monkeypatch.setattr("rooflinecli.gpu.device.smi_device_name", lambda: None)
    monkeypatch.setattr("rooflinecli.gpu.device.smi_compute_capability", lambda: None)


def test_the_default_is_the_h100_sxm5_and_its_target():
    assert specs.DEFAULT == "h100-sxm5"
    spec = specs.resolve(specs.DEFAULT)
    assert spec.display_name.startswith("NVIDIA H100 SXM5")
    assert api.DEFAULT_ARCH == compiler.arch_for_cc(spec.compute_capability)


@pytest.mark.parametrize(
    "args",
    [
        ["model", "gemm", "--m", "64"],
        ["model", "attention", "--batch", "1", "--heads", "8", "--seq", "512", "--head-dim", "64"],
        ["model", "llm", "--batch", "1", "--context", "512"],
    ],
)
def test_model_commands_without_a_gpu_take_the_default_and_say_so(runner, no_gpu, args):
    r = runner.invoke(cli, args)
    assert r.exit_code == 0, r.output + r.stderr
    title = r.stdout.splitlines()[0]
    assert "on NVIDIA H100" in title and NO_GPU in title, title


def test_a_document_made_without_a_gpu_carries_the_default(runner, no_gpu):
    import json

    r = runner.invoke(cli, ["model", "gemm", "--m", "64", "--format", "json"])
    assert json.loads(r.stdout)["spec"]["name"] == "h100-sxm5"


@pytest.mark.prebuild(stages.BY_NAME["naive_xcol"], sass=True)
def test_inspect_without_a_gpu_takes_the_default_and_says_so(runner, no_gpu):
    r = runner.invoke(cli, ["inspect", "gemm", "--stage", "naive_xcol"])
    assert r.exit_code == 0, r.output + r.stderr
    assert f"occupancy on NVIDIA H100 SXM5 80GB {NO_GPU}" in " ".join(r.stdout.split())


def test_a_gpu_without_a_spec_takes_the_default_and_says_which(runner, monkeypatch):
    monkeypatch.setattr("rooflinecli.gpu.device.smi_device_name", lambda: "NVIDIA GeForce GT 710")
    spec, why = api.default_spec(None)
    assert spec.name == "h100-sxm5"
    assert why == "no spec matches NVIDIA GeForce GT 710: the default, --spec chooses"


def test_a_given_or_detected_spec_wins(monkeypatch):
    monkeypatch.setattr("rooflinecli.gpu.device.smi_device_name", lambda: "NVIDIA H100 PCIe")
    assert api.default_spec(None)[0].name == "h100-pcie"
    assert api.default_spec("h100-sxm5") == (specs.resolve("h100-sxm5"), "given")


def test_make_run_shows_the_same_spec():
    """`make run` without a GPU shows the model on the spec named in the README's command,
    which is the tool's own default: what a user gets without --spec is what make run shows."""
    text = (ROOT / "Makefile").read_text()
    line = next(ln for ln in text.splitlines() if "roofline model gemm --m" in ln)
    assert f"--spec {specs.DEFAULT};" in line, line


def _code_strings(path: Path) -> list[str]:
    """The string constants of a module, docstrings left out."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_no_other_module_names_a_spec_of_its_own():
    """The default is chosen in core/specs.py alone: no other module of the tool names a shipped
    spec in its code (its messages may point at a spec file to copy: they name the file)."""
    names = set(specs.registry())
    pkg = ROOT / "rooflinecli"
    found = {
        str(p.relative_to(ROOT)): sorted(names & set(_code_strings(p)))
        for p in pkg.rglob("*.py")
        if p != pkg / "core" / "specs.py"
    }
    assert {k: v for k, v in found.items() if v} == {}
