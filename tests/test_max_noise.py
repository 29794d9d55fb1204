"""The --max-noise stopping rule of the one timer, on the CPU with a stand-in for CuPy whose
launches 'take' the times a test scripts: repeat until the first launch's noise (the gate's
statistic) is at most the target, or the budget is spent; the last round comes after that."""

from __future__ import annotations

import json
import math
import random
from types import SimpleNamespace

import pytest
from fakes import fake_run_gemm

from rooflinecli.core import stats
from rooflinecli.gpu import device, timer


class FakeCuPy:
    """Events that remember the time of the call just before them: get_elapsed_time(s, e) is
    the scripted duration of the launch recorded between them."""

    def __init__(self) -> None:
        fake = self
        self.last_ms = 0.0

        class Event:
            done = True

            def record(self) -> None:
                self.ms = fake.last_ms

            def synchronize(self) -> None:
                pass

        self.cuda = SimpleNamespace(
            Event=Event,
            get_elapsed_time=lambda s, e: e.ms,
            memory=SimpleNamespace(OutOfMemoryError=MemoryError),
        )


class Script:
    """A launch whose k-th call (k = 0 is Timer.once, 1 the warm-up) takes durations(k) ms."""

    def __init__(self, cp: FakeCuPy, name: str, durations, log: list[str]) -> None:  # type: ignore[no-untyped-def]
        self.cp, self.name, self.durations, self.log, self.calls = cp, name, durations, log, 0

    def __call__(self) -> None:
        self.cp.last_ms = self.durations(self.calls)
        self.calls += 1
        self.log.append(self.name)


@pytest.fixture
def cp(monkeypatch):
    fake = FakeCuPy()
    monkeypatch.setattr(device, "cupy", lambda: fake)
    monkeypatch.setattr(device, "l2_bytes", lambda: 0)
    monkeypatch.setattr(timer, "make_hold", lambda cp: None)  # tests/test_timer_hold.py's
    return fake


def timing(**kw) -> timer.Timing:  # type: ignore[no-untyped-def]
    # one launch takes 1 ms: a budget of 1000 ms is 1000 rounds (max_repeats permitting)
    base = dict(warmup_ms=0.0, budget_ms=1000.0, flush_l2=False, sample_clock=False)
    return timer.Timing(**{**base, **kw})


def noisy(seed: int):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    return lambda k: 1.0 if k == 0 else 1.0 + rng.random()  # 1-2 ms: noise of several percent


def quiet(k: int) -> float:
    return 1.0 + 1e-6 * (k % 3)  # noise ~0.0001%


def test_a_quiet_launch_stops_after_the_first_batch_and_one_last_round(cp):
    log: list[str] = []
    x = Script(cp, "x", quiet, log)
    t = timer.Timer(timing(max_noise_pct=0.5))
    timed = t.time([timer.Launch("x", x)])
    # max(min_repeats 5, MIN_SAMPLES 10) rounds, the noise checked, then the last round
    assert len(timed.samples[0]) == stats.MIN_SAMPLES + 1
    assert timed.noise_target_met is True
    assert timed.noise_pct == pytest.approx(stats.noise_pct(timed.samples[0]))
    assert timed.noise_pct <= 0.5


def test_a_noisy_launch_runs_to_the_budget_and_says_the_target_was_missed(cp):
    x = Script(cp, "x", noisy(1), [])
    t = timer.Timer(timing(max_noise_pct=0.1, budget_ms=300.0))
    timed = t.time([timer.Launch("x", x)])
    assert len(timed.samples[0]) == 300  # budget / the first launch's 1 ms
    assert timed.noise_target_met is False and timed.noise_pct > 0.1
    # max_repeats caps it too
    t = timer.Timer(timing(max_noise_pct=0.1, max_repeats=40))
    assert len(t.time([timer.Launch("x", Script(cp, "x", noisy(2), []))]).samples[0]) == 40


def test_it_stops_at_the_first_check_that_meets_the_target(cp):
    """Noisy for 60 calls, then quiet: the checks come after 10, 15, 22, 33, 49, 73, ...
    rounds (each batch half the rounds so far); the run stops at the first check whose noise
    is at most the target, plus the last round."""
    rng = random.Random(3)
    x = Script(cp, "x", lambda k: 1.0 + rng.random() if k < 62 else 1.0, [])
    limit = 1.0
    timed = timer.Timer(timing(max_noise_pct=limit)).time([timer.Launch("x", x)])
    got = timed.samples[0]
    checks = [10]
    while checks[-1] < len(got):
        checks.append(checks[-1] + checks[-1] // 2)
    stop = len(got) - 1
    assert stop in checks and stop < 999
    assert stats.noise_pct(got[:stop]) <= limit
    assert stats.noise_pct(got[: checks[checks.index(stop) - 1]]) > limit
    assert timed.noise_target_met is (stats.noise_pct(got) <= limit)


def test_interleaved_launches_share_every_round_and_the_last_is_prepared_once(cp):
    log: list[str] = []
    a, b = Script(cp, "a", quiet, log), Script(cp, "b", noisy(4), log)
    launches = [
        timer.Launch("a", a, before_last=lambda: log.append("restore a")),
        timer.Launch("b", b, before_last=lambda: log.append("restore b")),
    ]
    timed = timer.Timer(timing(max_noise_pct=0.5)).time(launches)
    # the target is the first launch's: a is quiet, so the run stops early though b is noisy
    assert len(timed.samples[0]) == len(timed.samples[1]) == stats.MIN_SAMPLES + 1
    timed_log = log[4:]  # after once() and the warm-up of each
    assert timed_log.count("restore a") == timed_log.count("restore b") == 1
    # round 10 (even: forward order) is the last: each restore right before its launch
    assert timed_log[-4:] == ["restore a", "a", "restore b", "b"]
    assert timed_log[:4] == ["a", "b", "b", "a"]  # alternating order, round by round


def test_without_a_target_the_budget_alone_decides(cp):
    x = Script(cp, "x", quiet, [])
    timed = timer.Timer(timing(budget_ms=50.0)).time([timer.Launch("x", x)])
    assert len(timed.samples[0]) == 50
    assert timed.noise_pct is None and timed.noise_target_met is None


def test_too_few_repeats_to_judge_never_meet_a_target(cp):
    x = Script(cp, "x", quiet, [])
    timed = timer.Timer(timing(max_noise_pct=5.0, max_repeats=6)).time([timer.Launch("x", x)])
    assert len(timed.samples[0]) == 6
    assert math.isinf(timed.noise_pct) and timed.noise_target_met is False


# --------------------------------------------------------------------------- the command


@pytest.fixture
def fake_run(monkeypatch):
    """runner.run_gemm without a GPU: records what Timing it got, and says the last stage
    missed its noise target."""
    from rooflinecli.gpu import runner

    got: dict[str, object] = {}

    def noisy(i: int, r: dict) -> None:  # the last stage missed its noise target
        r.update(noise_pct=0.4 if i == 0 else 2.5, noise_target_met=i == 0)

    fake = fake_run_gemm(2, each=noisy)

    def run_gemm(*args, **kwargs):  # type: ignore[no-untyped-def]
        got["timing"] = kwargs.get("timing", args[6] if len(args) > 6 else None)
        return fake(*args, **kwargs)

    monkeypatch.setattr(runner, "run_gemm", run_gemm)
    return got


def test_run_gemm_max_noise_reaches_the_timer_the_document_and_the_table(fake_run, runner):
    from rooflinecli.cli import cli

    args = ["run", "gemm", "--m", "256", "--stages", "naive_xcol", "--no-chart"]
    r = runner.invoke(cli, [*args, "--max-noise", "1", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert fake_run["timing"].max_noise_pct == 1.0
    doc = json.loads(r.stdout)
    assert doc["settings"]["max_noise_pct"] == 1.0
    assert [rec["noise_target_met"] for rec in doc["records"]] == [True, False]
    r = runner.invoke(cli, [*args, "--max-noise", "1"])
    assert r.exit_code == 0, r.output
    head = next(line for line in r.stdout.splitlines() if line.startswith("┃"))
    assert "noise %" in head
    assert (
        "  noise target not met in 1 of 2 rows (the budget ran out first): cublas; worst cublas "
        "at 2.50% (--budget-ms for more repeats)" in r.stdout.splitlines()
    )


def test_max_noise_and_repeats_are_one_choice(runner):
    from rooflinecli.cli import cli

    r = runner.invoke(cli, ["run", "gemm", "--m", "64", "--repeats", "5", "--max-noise", "1"])
    assert r.exit_code == 2
    assert r.stderr == (
        "error: give --repeats (a fixed count) or --max-noise (a target), not both\n"
    )
    r = runner.invoke(cli, ["run", "gemm", "--m", "64", "--max-noise", "0"])
    assert r.exit_code == 2 and "--max-noise" in r.stderr
    assert "--max-noise PCT" in runner.invoke(cli, ["run", "llm", "--help"]).output
