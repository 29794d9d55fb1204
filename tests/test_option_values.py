"""Option values the tool cannot mean are refused in one line (exit 2), never taken as
something else: digits other than 0-9 in a size, a scalar that is not a finite number, an
empty --spec."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rooflinecli.cli import cli

ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
MODEL = ["model", "gemm", "--m", "64"]


def refused(args: list[str]) -> str:
    r = CliRunner().invoke(cli, args, env=ENV)
    assert r.exit_code == 2, r.stdout
    assert r.stderr.count("\n") == 1 and "Error" not in r.stderr
    return r.stderr


@pytest.mark.parametrize("value", ["４０９６", "٤٠٩٦", "4096\u0660", "1_000", "²"])
def test_a_size_takes_ascii_digits_only(value: str) -> None:
    said = refused(["model", "gemm", "--m", value])
    assert said == f"error: Invalid value for '--m': {value!r} is not a whole number (digits 0-9)\n"


@pytest.mark.parametrize("option", ["--alpha", "--beta"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e999"])
def test_a_scalar_is_a_finite_number(option: str, value: str) -> None:
    said = refused([*MODEL, option, value])
    assert said == f"error: Invalid value for '{option}': {value!r} is not a finite number\n"


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_spec_is_refused_not_the_default(value: str) -> None:
    said = refused([*MODEL, "--spec", value])
    assert said == (
        "error: Invalid value for '--spec': empty: give a name from `roofline specs` or a TOML "
        "file\n"
    )


def test_what_is_meant_still_reads() -> None:
    r = CliRunner().invoke(cli, [*MODEL, "--n", " 128 ", "--alpha", "-2.5", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    assert '"n": 128' in r.stdout and '"alpha": -2.5' in r.stdout
