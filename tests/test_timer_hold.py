"""The timer's stream hold on the CPU: a stand-in for CuPy and for the holding kernel log what is
queued, so the order (hold, whole batch, release) and what the records say are checked exactly."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rooflinecli.gpu import device, timer


class FakeCuPy:
    """Events that log their recording; every launch 'takes' 1 ms."""

    def __init__(self, log: list[str]) -> None:
        class Event:
            done = True

            def record(self) -> None:
                log.append("event")

            def synchronize(self) -> None:
                pass

        self.cuda = SimpleNamespace(
            Event=Event,
            get_elapsed_time=lambda s, e: 1.0,
            memory=SimpleNamespace(OutOfMemoryError=MemoryError),
        )


class FakeKernel:
    """The holding kernel: logs its ticket; `opens_by_timeout` tickets count as timed out."""

    def __init__(self, log: list[str], flag: list[int], opens_by_timeout: set[int]) -> None:
        self.log, self.flag, self.late = log, flag, opens_by_timeout

    def __call__(self, grid, block, args) -> None:  # type: ignore[no-untyped-def]
        ticket = int(args[1])
        assert (grid, block) == ((1,), (1,))
        assert int(args[2]) == timer.HOLD_TIMEOUT_CYCLES
        self.log.append(f"hold {ticket}")
        if ticket in self.late:
            self.flag[1] += 1


@pytest.fixture
def log(monkeypatch):
    entries: list[str] = []
    monkeypatch.setattr(device, "cupy", lambda: FakeCuPy(entries))
    monkeypatch.setattr(device, "l2_bytes", lambda: 0)
    return entries


def held(log: list[str], late: set[int] = frozenset()):  # type: ignore[no-untyped-def,assignment]
    def make(cp):  # type: ignore[no-untyped-def]
        flag = [0, 0]
        return timer.StreamHold(FakeKernel(log, flag, late), flag, 0xABC)

    return make


def timing(**kw) -> timer.Timing:  # type: ignore[no-untyped-def]
    base = dict(
        warmup_ms=0.0, warmup_min=1, min_repeats=5, max_repeats=5, flush_l2=False,
        sample_clock=False, hold_rounds=2,
    )  # fmt: skip
    return timer.Timing(**{**base, **kw})


def launch(log: list[str], name: str) -> timer.Launch:
    return timer.Launch(name, lambda: log.append(name))


def test_each_batch_is_queued_behind_a_hold_and_released_after_it(log, monkeypatch):
    monkeypatch.setattr(timer, "make_hold", held(log))
    t = timer.Timer(timing())
    releases: list[int] = []
    real_release = t.hold.release  # type: ignore[union-attr]

    def release() -> None:
        releases.append(len(log))
        log.append("release")
        real_release()

    t.hold.release = release  # type: ignore[union-attr,method-assign]
    timed = t.time([launch(log, "a"), launch(log, "b")])
    # sizing (once: event, call, event) and warm-up go unheld; then 5 rounds in held batches
    # of 2: a, b forward on even rounds, b, a backward on odd ones
    r_ab = ["event", "a", "event", "event", "b", "event"]
    r_ba = ["event", "b", "event", "event", "a", "event"]
    assert log == [
        "event", "a", "event", "event", "b", "event", "a", "b",
        "hold 1", *r_ab, *r_ba, "release",
        "hold 2", *r_ab, *r_ba, "release",
        "hold 3", *r_ab, "release",
    ]  # fmt: skip
    assert t.hold.flag[0] == 3  # type: ignore[union-attr]
    assert timed.samples == [[1.0] * 5, [1.0] * 5]
    assert timed.hold_timeouts == 0
    assert timed.method == (
        "held: each batch of up to 2 rounds queued behind a kernel that holds the stream until "
        "the whole batch is queued (kernels/util/hold.cu), so no interval includes time the GPU "
        "waited for the host"
    )


def test_after_a_hold_is_let_go_by_its_timeout_the_rest_goes_unheld_and_is_said(log, monkeypatch):
    # hold 2 is let go by its timeout (as when a launch waits for the GPU: a host sync in the
    # call): holding on would cost a timeout per batch, so round 4 is queued without a hold
    monkeypatch.setattr(timer, "make_hold", held(log, late={2}))
    t = timer.Timer(timing())
    timed = t.time([launch(log, "a")])
    assert [x for x in log if x.startswith("hold")] == ["hold 1", "hold 2"]
    assert log[-3:] == ["event", "a", "event"]  # round 4, behind no hold
    assert timed.samples == [[1.0] * 5]
    assert timed.hold_timeouts == 1
    assert timed.method.endswith(
        "; until a hold was let go by its timeout (1): a launch waits for the GPU (a host sync "
        "in the call), so the rounds after it were queued without the hold and may include waits"
    )
    # the next time() starts held again
    log.clear()
    again = t.time([launch(log, "a")])
    assert [x for x in log if x.startswith("hold")] == ["hold 3", "hold 4", "hold 5"]
    assert again.hold_timeouts == 0 and again.method.endswith("waited for the host")


def test_the_method_text_of_timeouts_without_giving_up():
    text = timer.method_text(timer.Timing(hold_rounds=16), timeouts=2)
    assert text.endswith("; 2 hold(s) let go by their timeout: those batches may include waits")


def test_without_the_hold_nothing_is_held_and_the_record_says_so(log, monkeypatch):
    def no_hold(cp):  # type: ignore[no-untyped-def]
        raise AssertionError("Timing(hold=False) builds no holding kernel")

    monkeypatch.setattr(timer, "make_hold", no_hold)
    timed = timer.Timer(timing(hold=False)).time([launch(log, "a")])
    assert not [x for x in log if x.startswith("hold")]
    assert timed.samples == [[1.0] * 5]
    assert timed.method == (
        "queued from the host round by round: an interval may include time the GPU waited for "
        "the host to queue the launch"
    )


def test_the_noise_rule_holds_its_batches_and_the_last_round_alone(log, monkeypatch):
    monkeypatch.setattr(timer, "make_hold", held(log))
    t = timer.Timer(timing(min_repeats=3, max_repeats=10, max_noise_pct=50.0, hold_rounds=16))
    t.time([launch(log, "a")])
    timed_part = log[log.index("hold 1") :]
    # the first batch (stats.MIN_SAMPLES rounds, noise 0 <= 50%) behind hold 1, then the last
    # round (the one before_last prepares) behind hold 2
    assert [x for x in timed_part if x.startswith("hold")] == ["hold 1", "hold 2"]
    assert t.hold.flag[0] == 2  # type: ignore[union-attr]
