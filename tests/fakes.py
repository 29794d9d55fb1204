"""Stand-ins for the GPU parts of the tool, shared by the CPU tests."""

from __future__ import annotations


class FakeCuda:
    """The few CuPy CUDA calls the runners and the timer make, with no GPU: every interval
    between two events is 1 ms (a subclass may vary it)."""

    class memory:  # noqa: N801
        OutOfMemoryError = MemoryError

    class runtime:  # noqa: N801
        @staticmethod
        def memGetInfo():  # noqa: N802
            return (1 << 40, 1 << 40)

        @staticmethod
        def deviceSynchronize():  # noqa: N802
            pass

    class Event:
        done = True

        def record(self):
            pass

        def synchronize(self):
            pass

    @classmethod
    def get_elapsed_time(cls, start, end):
        return 1.0


def fake_run_gemm(fraction: float, placed: bool = False, each=None):  # type: ignore[no-untyped-def]
    """A stand-in for rooflinecli.gpu.runner.run_gemm on a machine without a GPU: every stage
    of the work list (default: every stage at every shape) and the reference at 1/fraction of
    its roof, verified, on the H200's spec. `placed`: the speeds placed and the
    reference ratios added, as the runner does; `each(i, record)`: more fields per record."""

    def run_gemm(shapes, chosen, spec_arg, alpha=1.0, beta=0.0, seed=0, timing=None,
                 progress=None, dtype="fp32", work=None):  # fmt: skip
        from rooflinecli.core import roofs, specs
        from rooflinecli.core.reference import add_ratios

        spec = specs.resolve("h200-sxm")
        reference = [s for s in chosen if s.reference]
        if work is None:  # as the runner does: every stage at every shape
            work = [(shape, [(s, None) for s in chosen if not s.reference]) for shape in shapes]
        recs = []
        for (m, n, k), items in work:
            for i, stage in enumerate([s for s, _why in items] + reference):
                r = roofs.model_record(stage, m, n, k, spec, alpha, beta, dtype)
                tflops = r["attainable_tflops"] / fraction
                r.update(tflops=tflops, time_ms=r["flops"] / tflops / 1e9, verified=True)
                if placed:
                    roofs.place(r, r["time_ms"])
                if each is not None:
                    each(i, r)
                recs.append(r)
        if placed:
            add_ratios(recs)
        return {"name": "FAKE H200"}, spec, recs

    return run_gemm


class FakeCupy:
    """A CuPy stand-in over NumPy for code that only computes with arrays (the chain's buffers,
    its float32 reference, its checks): NumPy's functions by CuPy's names, FakeCuda's calls,
    and the free device memory the test sets."""

    def __init__(self, free_bytes: int = 1 << 40) -> None:
        import numpy as np

        self._np = np
        free = free_bytes

        class _Cuda(FakeCuda):
            class runtime(FakeCuda.runtime):  # noqa: N801
                @staticmethod
                def memGetInfo():  # noqa: N802
                    return (free, free)

            class Event(FakeCuda.Event):
                def record(self, stream=None):  # type: ignore[no-untyped-def]
                    pass

            class Stream:
                ptr = 0

                def __init__(self, non_blocking: bool = False) -> None:
                    pass

                def __enter__(self):  # type: ignore[no-untyped-def]
                    return self

                def __exit__(self, *exc: object) -> None:
                    pass

                def synchronize(self) -> None:
                    pass

        self.cuda = _Cuda

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._np, name)

    def get_default_memory_pool(self):  # type: ignore[no-untyped-def]
        class Pool:
            def free_bytes(self) -> int:
                return 0

            def free_all_blocks(self) -> None:
                pass

        return Pool()
