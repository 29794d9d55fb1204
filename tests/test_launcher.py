"""The runner's one launch path (rooflinecli.gpu.runner.launcher) on the CPU: a stand-in for CuPy
and its kernels logs what is set up and what each launch queues, so the order of the kernel's
arguments, the transpose queued before a stage that reads B as N x K, a PDL stage's launch and
the record fields are checked against the stage's own registry entry."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rooflinecli.gpu import pdl, runner, tma
from rooflinecli.stages import compiler, gemm


class Kernel:
    """A compiled kernel: its resources, and each launch logged with its arguments."""

    num_regs, shared_size_bytes, local_size_bytes = 96, 1024, 16

    def __init__(self, log: list[tuple], name: str) -> None:  # type: ignore[type-arg]
        self.log, self.name = log, name

    def __call__(self, grid, block, args, shared_mem=0) -> None:  # type: ignore[no-untyped-def]
        self.log.append(("launch", self.name, grid, block, args, shared_mem))


class Buffer:
    def __init__(self, name: str, shape: tuple[int, ...], dtype) -> None:  # type: ignore[no-untyped-def]
        self.name, self.shape, self.dtype = name, shape, np.dtype(dtype)


class FakeCupy:
    uint8 = np.uint8

    def __init__(self, log: list[tuple]) -> None:  # type: ignore[type-arg]
        self.log = log
        self.cuda = SimpleNamespace(get_current_stream=lambda: SimpleNamespace(ptr=0x5))

        class RawModule:
            def __init__(self, path: str) -> None:
                self.path = path

            def get_function(self, entry: str) -> Kernel:
                return Kernel(log, entry)

        self.RawModule = RawModule

    def empty(self, shape, dtype) -> Buffer:  # type: ignore[no-untyped-def]
        self.log.append(("empty", shape))
        return Buffer("B^T", shape, dtype)

    def zeros(self, n: int, dtype) -> Buffer:  # type: ignore[no-untyped-def]
        self.log.append(("zeros", n))
        return Buffer("workspace", (n,), dtype)


@pytest.fixture
def log(monkeypatch) -> list[tuple]:  # type: ignore[no-untyped-def,type-arg]
    entries: list[tuple] = []  # type: ignore[type-arg]
    built = SimpleNamespace(cubin_path="stage.cubin", resources=None)
    monkeypatch.setattr(compiler, "compile_stage", lambda stage, arch, dtype: built)
    monkeypatch.setattr(
        runner, "_transposer", lambda cp, arch, nbytes: Kernel(entries, "transpose")
    )
    monkeypatch.setattr(tma, "extra_args", lambda *a: ("map A", "map B", "map C"))
    return entries


def problem(m: int, n: int, k: int, dtype: str) -> SimpleNamespace:
    return SimpleNamespace(
        m=m, n=n, k=k, dtype=dtype, alpha=1.0, beta=0.0, A=Buffer("A", (m, k), np.float16),
        B=Buffer("B", (k, n), np.float16), C=Buffer("C", (m, n), np.float16),
    )  # fmt: skip


def test_a_tma_stage_gets_the_contracts_arguments_then_its_maps_then_its_workspace(log):
    stage = gemm.BY_NAME["wgmma_streamk"]
    assert stage.params.get("TMA") and stage.workspace_bytes is not None
    g = problem(256, 512, 128, stage.dtype)
    call, meta = runner.launcher(FakeCupy(log), stage, g, "sm_90a", 132)
    grid, block, smem = stage.launch(g.m, g.n, 132)
    assert log == [("zeros", max(stage.workspace_bytes(256, 512, 128, grid[0]), 16))]
    log.clear()
    call()
    ((what, name, got_grid, got_block, args, shared),) = log
    assert (what, name, got_grid, got_block, shared) == ("launch", stage.entry, grid, block, smem)
    assert [int(x) for x in args[:3]] == [256, 512, 128]
    assert [x.name for x in (args[4], args[5], args[7])] == ["A", "B", "C"]
    assert args[8:11] == ("map A", "map B", "map C") and args[11].name == "workspace"
    assert meta["grid"] == list(grid) and meta["block"] == list(block)
    assert meta["smem_bytes"] == Kernel.shared_size_bytes + smem
    assert meta["registers"] == Kernel.num_regs and meta["spill_bytes"] == Kernel.local_size_bytes
    assert meta["tiles"] == -(-256 // stage.tile[0]) * -(-512 // stage.tile[1])
    assert meta["sm_count"] == 132 and meta["b_layout"] == "kn" and "_convert" not in meta
    assert meta["splits_k"] is stage.persistent_fill is True


def test_a_stage_that_reads_b_as_n_by_k_transposes_it_inside_every_launch(log):
    stage = gemm.BY_NAME["wgmma_fp8"]
    assert stage.b_layout == "nk"
    g = problem(256, 512, 128, stage.dtype)
    call, meta = runner.launcher(FakeCupy(log), stage, g, "sm_90a")
    assert log == [("empty", (512, 128))]
    log.clear()
    call()
    call()
    transpose, kernel = log[0], log[1]
    assert [x[1] for x in log] == ["transpose", stage.entry] * 2
    assert transpose[2] == (512 // 64, 128 // 64, 1) and transpose[4][2:] == (g.B, kernel[4][5])
    assert kernel[4][5].name == "B^T" and kernel[4][5].shape == (512, 128)
    assert (
        meta["b_layout"] == "nk, transposed from the contract's B in every timed launch (charged)"
    )
    log.clear()
    meta["_convert"]()  # the conversion alone, as the record times it
    assert [x[1] for x in log] == ["transpose"]


def test_b_already_stored_n_by_k_is_read_as_it_is(log):
    stage = gemm.BY_NAME["wgmma_fp8"]
    stored = Buffer("stored B^T", (512, 128), np.float16)
    g = problem(256, 512, 128, stage.dtype)
    call, meta = runner.launcher(FakeCupy(log), stage, g, "sm_90a", b_nk=stored)
    call()
    assert [x[0] for x in log] == ["launch"] and log[0][4][5] is stored
    assert meta["b_layout"] == "nk, stored so" and "_convert" not in meta


def test_a_pdl_stage_launches_through_cuLaunchKernelEx_on_cupys_stream(log, monkeypatch):
    stage = gemm.BY_NAME["gemv_pdl"]
    assert stage.pdl
    monkeypatch.setattr(pdl, "function_ptr", lambda fn: 0xF00)

    def launcher(ptr, grid, block, smem, args, stream):  # type: ignore[no-untyped-def]
        log.append(("pdl", ptr, grid, block, smem, len(args)))
        return lambda: log.append(("pdl launch", stream()))

    monkeypatch.setattr(pdl, "launcher", launcher)
    g = problem(16, 4096, 4096, stage.dtype)
    call, meta = runner.launcher(FakeCupy(log), stage, g, "sm_90a", 132)
    grid, block, smem = stage.launch(g.m, g.n, 132)
    assert log == [("pdl", 0xF00, grid, block, smem, 8)]
    call()
    assert log[1:] == [("pdl launch", 0x5)]


def test_the_reference_is_the_library_call_and_says_no_kernel_resources(log, monkeypatch):
    ref = gemm.BY_NAME["cublas"]
    monkeypatch.setattr(runner, "_cublas_sgemm", lambda cp, g: lambda: log.append(("sgemm",)))
    call, meta = runner.launcher(FakeCupy(log), ref, problem(64, 64, 64, "fp32"), "sm_90a")
    call()
    assert log == [("sgemm",)]
    assert meta == {"registers": None, "smem_bytes": None, "spill_bytes": None, "b_layout": "kn"}
