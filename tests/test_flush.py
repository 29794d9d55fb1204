"""The runner's L2 flush, with a stand-in for CuPy (no GPU): what it allocates and launches."""

from types import SimpleNamespace

import pytest

from rooflinecli.errors import RooflineError
from rooflinecli.gpu import timer


class FakeCupy:
    float32 = "float32"

    def __init__(self):
        self.calls = []
        self.cuda = SimpleNamespace(memory=SimpleNamespace(OutOfMemoryError=MemoryError))

    def empty(self, shape, dtype=None):
        self.calls.append(("empty", shape, dtype))
        return SimpleNamespace(fill=lambda v: self.calls.append(("fill", v)))

    def sum(self, buf, out=None):
        self.calls.append(("sum", out is not None))


def test_read_flush_sums_a_buffer_twice_the_l2_into_one_output():
    cp = FakeCupy()
    flush = timer.flusher(cp, 200 << 20, timer.Timing())
    assert cp.calls == [
        ("empty", (400 << 20) // 4, "float32"),
        ("fill", 1.0),
        ("empty", (), "float32"),
    ]
    flush()
    flush()
    assert cp.calls[3:] == [("sum", True), ("sum", True)]


def test_write_flush_fills_at_least_256_mib():
    cp = FakeCupy()
    flush = timer.flusher(cp, 4 << 20, timer.Timing(flush_kind="write"))
    flush()
    assert cp.calls == [("empty", (256 << 20) // 4, "float32"), ("fill", 0)]


def test_no_flush_and_unknown_flush():
    assert timer.flusher(FakeCupy(), 1 << 20, timer.Timing(flush_l2=False)) is None
    with pytest.raises(RooflineError, match="unknown L2 flush 'evict': read or write"):
        timer.flusher(FakeCupy(), 1 << 20, timer.Timing(flush_kind="evict"))
