"""Many GPUs on the CPU: the --gpus worker pool with a stand-in for the GPU, a failing worker,
rank discovery for each launcher, {host}/{rank} output names, merge, the outlier rule's targets
over seeded draws, `roofline fleet`'s exit codes, fleet documents in show/plot/report/gate, and
names from documents kept as data."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rooflinecli import options, paths, results
from rooflinecli.cli import cli
from rooflinecli.core import fleet, ranks
from rooflinecli.errors import RooflineError
from rooflinecli.gpu import fleet as pool

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "benchmarks" / "results" / "first-run-gemm-fp32-4096.json.gz"
WORKER = Path(__file__).resolve().parent / "fleet_worker.py"
# the committed documents whose timing samples the crafted fleets resample
NOISE_DOCS = [
    ROOT / "benchmarks" / "results" / n
    for n in ("first-run-gemm-fp32-4096.json.gz", "gemm-fp16-8192-interleaved.json.gz",
              "attn-b2-h16-n8192-d128-bf16.json.gz", "gemm-bf16-odd-best.json.gz")
]  # fmt: skip


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """Workers are tests/fleet_worker.py; the host has 4 GPUs."""
    monkeypatch.setattr(pool, "python_argv", lambda args: [sys.executable, str(WORKER), *args])
    env = {"FLEET_TEMPLATE": str(TEMPLATE), "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for k in ("FLEET_FAIL", "FLEET_SLOW", "FLEET_SLEEP"):
        monkeypatch.delenv(k, raising=False)
    return env


def _gemm(runner: CliRunner, tmp_path: Path, *extra: str) -> Any:
    out = tmp_path / "fleet.json"
    got = runner.invoke(cli, ["run", "gemm", "--m", "4096", *extra, "-o", str(out)])
    return got, out


# ------------------------------------------------------------------------- the worker pool


def test_every_gpu_at_once_one_document(stand_in, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("FLEET_SLEEP", "1.0")
    got, out = _gemm(CliRunner(), tmp_path, "--gpus", "all", "--seed", "3")
    assert got.exit_code == 0, got.output
    doc = results.load(out)
    assert results.is_fleet(doc)
    labels = {r["gpu_label"] for r in doc["records"]}
    assert len(labels) == 4
    one = [r for r in doc["records"] if r["gpu"]["index"] == 2]
    assert len(one) == len(paths.read_json(TEMPLATE, "results file")["records"])
    gpu = one[0]["gpu"]
    assert (gpu["uuid"], gpu["serial"], gpu["pci_bus_id"], gpu["power_limit_w"]) == (
        "GPU-0000-2", "SER2", "0000:2:00.0", 700.0)  # fmt: skip
    assert "sm_clock_mhz_seen_min" in gpu and gpu["clock_sm_max_mhz"] == 1980
    # one line per GPU as each ends
    for g in "0123":
        assert f"GPU {g}: done in" in got.output
    assert len(doc["fleet"]["members"]) == 4 and doc["fleet"]["failed"] == []
    assert set(doc["fleet"]["wall_s"]) == set("0123")


def test_workers_overlap_and_get_the_command(stand_in, monkeypatch, tmp_path) -> None:
    seen: list[list[str]] = []
    real = pool.run_pool

    def spy(gpus, folder, argv, say, **kw):  # type: ignore[no-untyped-def]
        got = real(gpus, folder, argv, say, **kw)
        for i, _ in enumerate(gpus):
            seen.append(json.loads((folder / f"gpu{i}.json").read_text())["worker"])
        return got

    monkeypatch.setattr(pool, "run_pool", spy)
    monkeypatch.setenv("FLEET_SLEEP", "1.0")
    got, _ = _gemm(CliRunner(), tmp_path, "--gpus", "0,2", "--dtype", "fp32", "--no-flush")
    assert got.exit_code == 0, got.output
    assert len(seen) == 2
    assert max(w["started"] for w in seen) < min(w["ended"] for w in seen)
    argv = seen[0]["argv"]
    assert argv[:4] == ["run", "gemm", "--m", "4096"]
    assert "--gpus" not in argv and "--no-flush" in argv and "--quiet" in argv
    assert argv[argv.index("--format") + 1] == "json"
    assert seen[0]["order"] == "PCI_BUS_ID"


def test_a_failing_worker_is_named_and_the_others_kept(stand_in, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("FLEET_FAIL", "1")
    got, out = _gemm(CliRunner(), tmp_path, "--gpus", "all")
    assert got.exit_code == 1
    assert "GPU 1: failed (exit 2)" in got.output
    assert "1 of 4 worker(s) failed: GPU 1 (exit 2): error: no CUDA device found" in got.output
    doc = results.load(out)
    assert {r["gpu"]["index"] for r in doc["records"]} == {0, 2, 3}
    assert doc["fleet"]["failed"][0]["gpu"] == "1"


def test_every_worker_failing_is_exit_2(stand_in, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("FLEET_FAIL", "0,1,2,3")
    got, out = _gemm(CliRunner(), tmp_path, "--gpus", "all")
    assert got.exit_code == 2
    assert "every worker failed; GPU 0" in got.output
    assert not out.exists()


def test_parse_gpus() -> None:
    assert pool.parse_gpus("all", {}, lambda: 3) == ["0", "1", "2"]
    assert pool.parse_gpus("0,2", {"CUDA_VISIBLE_DEVICES": "4,5,6"}, lambda: 8) == ["4", "6"]
    assert pool.parse_gpus("all", {"CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b"}, lambda: 8) == [
        "GPU-a", "GPU-b"]  # fmt: skip
    for bad, says in (("0,0", "named twice"), ("5", "no GPU 5"), ("x", "not a GPU index"),
                      ("0,,1", "empty item")):  # fmt: skip
        with pytest.raises(RooflineError, match=says):
            pool.parse_gpus(bad, {}, lambda: 3)
    with pytest.raises(RooflineError, match="no CUDA device found"):
        pool.parse_gpus("all", {}, lambda: None)


def test_without_gpus_nothing_changes(monkeypatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    for k in ("SLURM_PROCID", "RANK", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(k, raising=False)
    pool.pin_rank()
    import os

    assert "CUDA_VISIBLE_DEVICES" not in os.environ


# --------------------------------------------------------------------------------- launchers


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NODEID": "2", "SLURM_NTASKS": "8",
          "SLURM_NTASKS_PER_NODE": "4(x2)"}, ranks.Place("slurm", 5, 1, 8, 4, 2)),
        ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "3",
          "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_SIZE": "8"},
         ranks.Place("openmpi", 3, 3, 16, 8, None)),
        ({"RANK": "9", "LOCAL_RANK": "1", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8",
          "GROUP_RANK": "1"}, ranks.Place("torchrun", 9, 1, 16, 8, 1)),
        # torchrun inside a Slurm allocation: torchrun's variables describe this process
        ({"SLURM_PROCID": "0", "SLURM_LOCALID": "0", "RANK": "6", "LOCAL_RANK": "2"},
         ranks.Place("torchrun", 6, 2, None, None, None)),
        ({}, None),
    ],
)  # fmt: skip
def test_discover(env: dict[str, str], want: ranks.Place | None) -> None:
    assert ranks.discover(env) == want


def test_a_malformed_rank_is_one_line() -> None:
    with pytest.raises(RooflineError, match="SLURM_PROCID='x' is not a whole number"):
        ranks.discover({"SLURM_PROCID": "x", "SLURM_LOCALID": "0"})
    odd = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "many"}
    assert ranks.discover(odd) == ranks.Place("torchrun", 1, 1, None, None, None)


def test_device_for() -> None:
    p = ranks.Place("slurm", 5, 2, 8, 4, 1)
    assert ranks.device_for(p, None) == "2"
    assert ranks.device_for(p, "4,5,6,7") == "6"
    assert ranks.device_for(p, "7") == "7"  # srun --gpus-per-task=1 chose already
    with pytest.raises(RooflineError, match="local rank 2 has no GPU"):
        ranks.device_for(p, "0,1")


def test_pin_rank_under_a_launcher(monkeypatch) -> None:
    import os

    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "5")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3,4,5")
    pool.pin_rank()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    assert results.environment()["launch"]["rank"] == 5


def test_output_placeholders(monkeypatch) -> None:
    place = ranks.Place("torchrun", 3, 1)
    assert ranks.expand("r/{host}-{rank}.json", place, "node 7/a") == "r/node_7_a-3.json"
    assert ranks.expand("{local_rank}.json", place, "h") == "1.json"
    assert ranks.expand("{host}.json", None, "h") == "h.json"
    with pytest.raises(RooflineError, match=r"unknown placeholder \{node\}"):
        ranks.expand("{node}.json", place, "h")
    with pytest.raises(RooflineError, match="needs a launcher"):
        ranks.expand("{rank}.json", None, "h")


def test_unknown_placeholder_is_one_line(tmp_path) -> None:
    got = CliRunner().invoke(cli, ["run", "gemm", "--m", "64", "-o", str(tmp_path / "{gpu}.json")])
    assert got.exit_code == 2
    assert "unknown placeholder {gpu}" in got.output and "Traceback" not in got.output


def test_rank_names_its_document(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("RANK", "4")
    monkeypatch.setenv("LOCAL_RANK", "0")
    name = options.output_name(str(tmp_path / "{host}-{rank}.json"))
    import platform

    assert name.endswith(f"{ranks.safe_host(platform.node())}-4.json")


# ------------------------------------------------------------------------------------ merge


def _doc(index: int, host: str = "node1", factor: float = 1.0, name: str | None = None,
         template: Path = TEMPLATE, rank: int | None = None) -> dict[str, Any]:  # fmt: skip
    doc = paths.read_json(template, "results file")
    doc["device"].update(index=index, uuid=f"GPU-{host}-{index}", pci_bus_id=f"0:{index}")
    if name:
        doc["device"]["name"] = name
    doc["environment"] = {"host": host}
    if rank is not None:
        doc["environment"]["launch"] = {"launcher": "slurm", "rank": rank, "local_rank": index}
    for rec in doc["records"]:
        if rec.get("samples_ms"):
            rec["samples_ms"] = [v * factor for v in rec["samples_ms"]]
        if isinstance(rec.get("time_ms"), int | float):
            rec["time_ms"] *= factor
        if isinstance(rec.get("tflops"), int | float):
            rec["tflops"] /= factor
    return doc


def _write(tmp_path: Path, docs: list[dict[str, Any]], prefix: str = "d") -> list[str]:
    paths = []
    for i, d in enumerate(docs):
        p = tmp_path / f"{prefix}{i}.json"
        p.write_text(json.dumps(d))
        paths.append(str(p))
    return paths


def test_merge_keeps_gpu_and_rank(tmp_path) -> None:
    paths = _write(tmp_path, [_doc(0, "a", rank=0), _doc(1, "a", rank=1), _doc(0, "b", rank=2)])
    out = tmp_path / "fleet.json"
    got = CliRunner().invoke(cli, ["merge", *paths, "-o", str(out)])
    assert got.exit_code == 0, got.output
    doc = results.load(out)
    assert {r["gpu_label"] for r in doc["records"]} == {"a:gpu0", "a:gpu1", "b:gpu0"}
    assert {r["gpu"]["rank"] for r in doc["records"]} == {0, 1, 2}
    assert {r["gpu"]["serial"] for r in doc["records"]} == {"unknown"}
    # a fleet merged with another document: its records keep their GPU
    more = _write(tmp_path, [_doc(3, "c")], prefix="more")
    again = tmp_path / "fleet2.json"
    got = CliRunner().invoke(cli, ["merge", str(out), *more, "-o", str(again)])
    assert got.exit_code == 0, got.output
    assert len({r["gpu_label"] for r in results.load(again)["records"]}) == 4


def test_merge_refuses_duplicates_and_upgrades_old_schemas(tmp_path) -> None:
    paths = _write(tmp_path, [_doc(0), _doc(0)])
    got = CliRunner().invoke(cli, ["merge", *paths, "-o", str(tmp_path / "f.json")])
    assert got.exit_code == 2
    assert "merge each GPU's measurement once" in got.output
    old = _doc(1)
    old["schema"] = "roofline.results/1"
    for rec in old["records"]:
        rec.pop("math_instruction", None)
    p = _write(tmp_path, [_doc(0), old], prefix="old")
    out = tmp_path / "g.json"
    got = CliRunner().invoke(cli, ["merge", *p, "-o", str(out)])
    assert got.exit_code == 0, got.output
    doc = results.load(out)
    assert doc["schema"] == results.SCHEMA
    assert all(r.get("math_instruction") for r in doc["records"] if r["stage"] == "naive_xcol")


def test_merge_refuses_a_model_document(tmp_path) -> None:
    d = _doc(0)
    d["device"] = None
    got = CliRunner().invoke(cli, ["merge", *_write(tmp_path, [d]), "-o", str(tmp_path / "f.json")])
    assert got.exit_code == 2 and "model document" in got.output


# --------------------------------------------------------------------------- the outlier rule

CARD_SPREAD = 0.005  # the card-to-card spread docs/fleet.md states (a log-ratio's sigma)


def _records(path: Path) -> list[dict[str, Any]]:
    recs = paths.read_json(path, "results file")["records"]
    return [r for r in recs if r.get("samples_ms") and r.get("verified") is not False]


def _fleet(seed: int, slow: float | None) -> list[dict[str, Any]]:
    """8 GPUs: each record's samples resampled per GPU, times a card factor (log-normal with
    the stated spread), one card `slow` times slower on every stage."""
    rng = random.Random(seed)
    recs = _records(NOISE_DOCS[seed % len(NOISE_DOCS)])
    out = []
    for g in range(8):
        factor = math.exp(rng.gauss(0.0, CARD_SPREAD)) * (slow if slow and g == 5 else 1.0)
        for r in recs:
            s = [v * factor for v in rng.choices(r["samples_ms"], k=len(r["samples_ms"]))]
            out.append({**r, "samples_ms": s, "gpu": {"label": f"gpu{g}", "name": "H200"}})
    return out


def test_one_gpu_5pct_slower_is_flagged_alone() -> None:
    assert fleet.SPREAD == CARD_SPREAD
    hits = 0
    for seed in range(100):
        (group,) = fleet.analyse(_fleet(seed, 1.05))
        hits += [c.gpu for c in group.cards if c.flagged] == ["gpu5"]
    assert hits >= 99


def test_identical_gpus_are_not_flagged() -> None:
    clean = 0
    for seed in range(1000, 1100):
        (group,) = fleet.analyse(_fleet(seed, None))
        clean += not any(c.flagged for c in group.cards)
    assert clean >= 99


def test_mixed_models_are_grouped() -> None:
    recs = _fleet(7, 1.05)
    other = [
        {**r, "gpu": {"label": r["gpu"]["label"] + "b", "name": "H100"},
         "samples_ms": [v * 1.7 for v in r["samples_ms"]]}
        for r in _fleet(8, None)
    ]  # fmt: skip
    groups = {g.model: g for g in fleet.analyse(recs + other)}
    assert set(groups) == {"H200", "H100"}
    assert [c.gpu for c in groups["H200"].cards if c.flagged] == ["gpu5"]
    assert not any(c.flagged for c in groups["H100"].cards)


def test_a_failed_check_is_never_a_time() -> None:
    recs = _fleet(3, None)
    for r in recs:
        if r["gpu"]["label"] == "gpu1":
            r["verified"] = False
    (group,) = fleet.analyse(recs)
    card = next(c for c in group.cards if c.gpu == "gpu1")
    assert card.rows == 0 and not card.flagged


# ------------------------------------------------------------------------ roofline fleet


def _fleet_file(tmp_path: Path, slow: float | None, n: int = 8, name: str = "f.json") -> str:
    docs = [_doc(i, factor=(slow if slow and i == 2 else 1.0) * (1 + 0.001 * i)) for i in range(n)]
    out = tmp_path / name
    out.write_text(results.dumps(results.merge([(f"d{i}", d) for i, d in enumerate(docs)])))
    return str(out)


def test_fleet_exit_codes(tmp_path) -> None:
    r = CliRunner()
    got = r.invoke(cli, ["fleet", _fleet_file(tmp_path, 1.08, name="slow.json")])
    assert got.exit_code == 1, got.output
    assert "1 GPU(s) fall behind" in got.output and "node1:gpu2" in got.output
    got = r.invoke(cli, ["fleet", _fleet_file(tmp_path, None, name="ok.json")])
    assert got.exit_code == 0, got.output
    assert "no GPU falls behind" in got.output
    got = r.invoke(cli, ["fleet", _fleet_file(tmp_path, 1.5, n=2, name="two.json")])
    assert got.exit_code == 3 and "inconclusive" in got.output
    got = r.invoke(cli, ["fleet", "--format", "json", str(tmp_path / "slow.json")])
    body = json.loads(got.stdout)
    assert body["groups"][0]["cards"][0]["gpu"] == "node1:gpu2" and got.exit_code == 1
    got = r.invoke(cli, ["fleet", "--rows", "--format", "csv", str(tmp_path / "ok.json")])
    assert got.exit_code == 0 and got.output.startswith("gpu,")


def test_fleet_of_separate_documents(tmp_path) -> None:
    paths = _write(tmp_path, [_doc(i, factor=1.1 if i == 0 else 1.0) for i in range(5)])
    got = CliRunner().invoke(cli, ["fleet", *paths])
    assert got.exit_code == 1 and "node1:gpu0" in got.output


# ------------------------------------------------------- show, plot, report, gate; names


def test_show_report_gate_read_fleet_documents(tmp_path) -> None:
    path = _fleet_file(tmp_path, None, n=3)
    r = CliRunner()
    got = r.invoke(cli, ["show", "--format", "markdown", path])
    assert got.exit_code == 0, got.output
    assert "node1:gpu1" in got.output and "| GPU |" in got.output.replace("GPU  ", "GPU ")
    got = r.invoke(cli, ["gate", path, "--baseline", path])
    assert got.exit_code == 0, got.output
    page = tmp_path / "page.html"
    got = r.invoke(cli, ["report", path, "-o", str(page)])
    assert got.exit_code == 0, got.output
    assert "node1:gpu2" in page.read_text()


def test_plot_points_per_gpu() -> None:
    from rooflinecli.present import document

    doc = results.merge([(f"d{i}", _doc(i, factor=1 + i / 10)) for i in range(3)])
    one = document.fleet_points(doc, per_gpu=False)
    assert len(one["records"]) == len(doc["records"]) // 3
    assert all(r["gpu"]["index"] == 1 for r in one["records"])  # the median GPU
    every = document.fleet_points(doc, per_gpu=True)
    assert len(every["records"]) == len(doc["records"])
    assert every["records"][0]["stage"].endswith(" on node1:gpu0")


def test_hostile_names_are_data(tmp_path) -> None:
    host = "[bold red]x[/] <script>|`y`"
    docs = [_doc(i, host=host) for i in range(3)]
    path = _write(tmp_path, docs)
    out = tmp_path / "f.json"
    r = CliRunner()
    assert r.invoke(cli, ["merge", *path, "-o", str(out)]).exit_code == 0
    got = r.invoke(cli, ["show", "--format", "markdown", str(out)])
    assert got.exit_code == 0
    assert "<script>" not in got.output and "\\[bold red\\]" in got.output
    got = r.invoke(cli, ["fleet", str(out)])
    assert "[bold red]x[/]" in got.output  # printed as text, never as markup
    bad = _doc(0, host="a\x1b[31mb")
    got = r.invoke(cli, ["fleet", *_write(tmp_path, [bad, _doc(1), _doc(2)], prefix="bad")])
    assert got.exit_code == 2 and "Traceback" not in got.output


@pytest.mark.parametrize(
    "args",
    [
        ["run", "gemm", "--m", "256", "--stages", "cublas", "--budget-ms", "50", "--dtype",
         "fp32", "--no-flush", "--seed", "2"],
        ["run", "attention", "--batch", "1", "--heads", "2", "--seq", "128", "--head-dim", "64",
         "--causal"],
        ["calibrate", "--quick"],
        ["profile", "app", "--timeout", "5", "--", "python", "-c", "pass"],
    ],
)  # fmt: skip
def test_a_real_worker_parses_the_rebuilt_command(args, monkeypatch, tmp_path) -> None:
    """The workers are this tool itself: each gets past its options and stops for the GPU
    alone (no CUDA device), never at a usage error; `profile app` stops before any worker
    where there is no ncu."""
    import os

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    got = CliRunner().invoke(cli, [*args, "--gpus", "0"])
    assert got.exit_code == 2, got.output
    if "Nsight Compute (ncu) not found" in got.output:
        assert args[0] == "profile" and got.output.count("\n") == 1
        return
    assert "every worker failed; GPU 0: error: no CUDA device found" in got.output
