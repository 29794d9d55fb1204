"""On a GPU: every Tensor Core stage verifies in FP16 and BF16 at shapes no tile divides, reads C
when beta != 0, and a stage that needs multiples of 8 is skipped with its reason, never run."""

import json

import pytest

from rooflinecli.build import stages
from rooflinecli.cli import cli

pytestmark = pytest.mark.gpu


def _run(runner, *args):
    r = runner.invoke(
        cli, ["run", "gemm", "--format", "json", "--quiet", "--budget-ms", "5", *args]
    )
    assert r.exit_code == 0, r.output + r.stderr
    return json.loads(r.output)["records"]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_every_tensor_core_stage_verifies_at_odd_shapes(runner, dtype):
    recs = _run(runner, "--dtype", dtype, "--sizes", "1000x1016x1032,1001x600x1032,127x333x65")
    assert {r["stage"] for r in recs} == set(stages.stage_names(dtype))
    for rec in recs:
        stage = stages.BY_NAME[rec["stage"]]
        # 127x333x65 for the TMA stages (N, K multiples of 8), M > 64 for the decode stages
        if stage.refuses(rec["m"], rec["n"], rec["k"]):  # refused before any launch
            assert rec["verified"] is None and rec["tflops"] is None, rec
            assert rec["error"].startswith("skipped: "), rec
        else:
            assert rec["verified"] is True, rec
            assert rec["tflops"] > 0


def test_tensor_core_stages_read_c_when_beta_is_not_zero(runner):
    recs = _run(
        runner, "--dtype", "fp16", "--m", "264", "--n", "200", "--k", "72", "--alpha", "0.5",
        "--beta", "2",
    )  # fmt: skip
    ran = [r for r in recs if not stages.BY_NAME[r["stage"]].refuses(r["m"], r["n"], r["k"])]
    assert ran and all(r["verified"] is True for r in ran), recs
