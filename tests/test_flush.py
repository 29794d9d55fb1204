"""The runner's L2 flush, with a stand-in for CuPy (no GPU): what it allocates and launches."""

from types import SimpleNamespace

import pytest

from rooflinecli.errors import RooflineError
from rooflinecli.gpu import timer


class FakeCupy:
    float32 = "float32"

    def __init__(self):
        self.calls = []
        self.cuda = SimpleNamespace(
            memory=SimpleNamespace(OutOfMemoryError=MemoryError),
            get_current_stream=lambda: SimpleNamespace(ptr=7),
            runtime=SimpleNamespace(
                memsetAsync=lambda ptr, v, n, stream: self.calls.append(("memset", v, n, stream))
            ),
        )

    def empty(self, shape, dtype=None):
        self.calls.append(("empty", shape, dtype))
        size = shape if isinstance(shape, int) else 1
        return SimpleNamespace(data=SimpleNamespace(ptr=1), nbytes=4 * size, size=size)

    def sum(self, buf, out=None):
        self.calls.append(("sum", out is not None))


def test_read_flush_sums_a_buffer_twice_the_l2_into_one_output():
    cp = FakeCupy()
    flush = timer.flusher(cp, 200 << 20, timer.Timing())
    assert cp.calls == [
        ("empty", (400 << 20) // 4, "float32"),
        ("memset", 0, 400 << 20, 7),  # set without a kernel of the array library
        ("empty", (), "float32"),
    ]
    flush()
    flush()
    assert cp.calls[3:] == [("sum", True), ("sum", True)]


def test_read_flush_launches_its_kernel_over_the_buffer_in_16_byte_loads():
    cp, launched = FakeCupy(), []
    flush = timer.flusher(cp, 200 << 20, timer.Timing(), lambda *a: launched.append(a))
    flush()
    ((grid, block, (buf, n4, out)),) = launched
    assert block == (256, 1, 1) and grid == (4096, 1, 1)
    assert int(n4) == (400 << 20) // 16 and buf.nbytes == 400 << 20
    assert ("sum", True) not in cp.calls


def test_the_read_flush_kernel_reads_every_float4_and_keeps_its_reads():
    from rooflinecli.stages import compiler

    try:
        built = compiler.build(timer.flush_job("sm_90a"))
    except Exception as exc:  # noqa: BLE001 - no NVRTC here
        pytest.skip(str(exc))
    assert built.resources is not None and built.resources.spill_bytes == 0


def test_write_flush_sets_at_least_256_mib():
    cp = FakeCupy()
    flush = timer.flusher(cp, 4 << 20, timer.Timing(flush_kind="write"))
    flush()
    assert cp.calls == [("empty", (256 << 20) // 4, "float32"), ("memset", 0, 256 << 20, 7)]


def test_no_flush_and_unknown_flush():
    assert timer.flusher(FakeCupy(), 1 << 20, timer.Timing(flush_l2=False)) is None
    with pytest.raises(RooflineError, match="unknown L2 flush 'evict': read or write"):
        timer.flusher(FakeCupy(), 1 << 20, timer.Timing(flush_kind="evict"))
