"""Programmatic dependent launch on the CPU: the griddepcontrol header compiles for sm_90a,
stage 56's SASS holds the instructions at the places its parameters put them (ACQBULK for
griddepcontrol.wait, PREEXIT for griddepcontrol.launch_dependents), and the launcher
(rooflinecli/gpu/pdl.py) packs the arguments and the attribute for cuLaunchKernelEx, tried on a
stand-in of cuda-bindings' driver module."""

from __future__ import annotations

import ctypes
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from rooflinecli.errors import RooflineError
from rooflinecli.gpu import pdl
from rooflinecli.stages import compiler, sass
from rooflinecli.stages import gemm as stages

WAIT, SIGNAL = "ACQBULK", "PREEXIT"  # what griddepcontrol.wait / .launch_dependents become


def opcodes(stage, dtype="bf16"):
    built = compiler.compile_stage(stage, "sm_90a", dtype)
    fn = sass.parse(sass.disassemble(built.cubin_path))[stage.entry]
    return Counter(i.opcode.split(".")[0] for i in fn.instrs)


def test_the_header_compiles_alone_for_sm_90a():
    src = (
        '#include "sm90/griddepcontrol.cuh"\n'
        'extern "C" __global__ void k(int* p) {\n'
        "    griddepcontrol_wait();\n    p[threadIdx.x] = 1;\n"
        "    griddepcontrol_launch_dependents();\n}\n"
    )
    built = compiler.compile_source(src, "pdl_header", "k", "sm_90a")
    fn = sass.parse(sass.disassemble(built.cubin_path))["k"]
    ops = Counter(i.opcode.split(".")[0] for i in fn.instrs)
    assert ops[WAIT] == 1 and ops[SIGNAL] == 1


def test_only_stage_56_launches_with_pdl():
    assert [s.name for s in stages.STAGES if s.pdl] == ["gemv_pdl"]
    s = stages.BY_NAME["gemv_pdl"]
    assert s.min_cc == 90 and s.file == "56_gemv_pdl.cu"
    assert s.with_params({"PDL_SIGNAL": 0}).pdl  # a variant keeps the flag
    assert "waits at entry" in s.with_params({"PDL_WAIT": 0}).what


@pytest.mark.parametrize("wait", (0, 1))
@pytest.mark.parametrize("signal", (0, 1, 2, 3))
def test_the_sass_waits_and_signals_where_the_parameters_say(wait, signal):
    ops = opcodes(stages.BY_NAME["gemv_pdl"].with_params({"PDL_WAIT": wait, "PDL_SIGNAL": signal}))
    # PDL_WAIT 0: one wait at entry; 1: one in each instantiation of the tile code
    assert (ops[WAIT] == 1) if wait == 0 else (ops[WAIT] > 1)
    assert (ops[SIGNAL] == 0) if signal == 3 else (ops[SIGNAL] >= 1)
    assert ops["FFMA"] > 0 and ops["LDG"] > 0


def test_the_l2_prefetch_before_the_wait():
    stage = stages.BY_NAME["gemv_pdl"]
    assert opcodes(stage)["CCTL"] == 0
    pf = stage.with_params({"PDL_PF": 2})
    assert "prefetches 2 more into L2" in pf.what
    assert opcodes(pf)["CCTL"] > 0  # prefetch.global.L2
    with pytest.raises(RooflineError, match="needs PDL_WAIT 1"):
        compiler.compile_stage(stage.with_params({"PDL_PF": 2, "PDL_WAIT": 0}), "sm_90a", "bf16")


def test_stage_52_has_neither():
    ops = opcodes(stages.BY_NAME["gemv_splitk"])
    assert ops[WAIT] == 0 and ops[SIGNAL] == 0


class FakeDriver:
    """cuda.bindings.driver as the launcher uses it; cuLaunchKernelEx reads the void** array
    back into the values the kernel would get."""

    class CUlaunchAttributeID:
        CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6

    class CUfunction(int):
        pass

    class CUstream(int):
        pass

    class CUlaunchAttribute:
        def __init__(self):
            self.id = None
            self.value = SimpleNamespace(programmaticStreamSerializationAllowed=0)

    class CUlaunchConfig:
        pass

    def __init__(self, types, status=0):
        self.types, self.status, self.launches = types, status, []

    def cuLaunchKernelEx(self, config, f, params, extra):  # noqa: N802
        ptrs = (ctypes.c_void_p * len(self.types)).from_address(params)
        values = [t.from_address(p).value for t, p in zip(self.types, ptrs, strict=True)]
        attr = config.attrs[0]
        self.launches.append(
            dict(
                f=int(f),
                stream=int(config.hStream),
                grid=(config.gridDimX, config.gridDimY, config.gridDimZ),
                block=(config.blockDimX, config.blockDimY, config.blockDimZ),
                smem=config.sharedMemBytes,
                attr=(attr.id, attr.value.programmaticStreamSerializationAllowed, config.numAttrs),
                values=values,
                extra=extra,
            )
        )
        return (_Status(self.status),)


class _Status(int):
    @property
    def name(self):
        return "CUDA_SUCCESS" if self == 0 else "CUDA_ERROR_INVALID_HANDLE"


def device_array(ptr):
    return SimpleNamespace(data=SimpleNamespace(ptr=ptr))


def test_the_launcher_packs_the_stage_arguments():
    c = ctypes
    drv = FakeDriver([c.c_int32, c.c_int32, c.c_int32, c.c_float, c.c_uint64, c.c_uint64,
                      c.c_float, c.c_uint64])  # fmt: skip
    streams = iter([111, 222])
    a, b, c_out = (device_array(p) for p in (0x7F0000001000, 0x7F0000002000, 0x7F0000003000))
    args = (np.int32(1), np.int32(4096), np.int32(-3), np.float32(0.5), a, b, np.float32(0.0),
            c_out)  # fmt: skip
    launch = pdl.launcher(0xABC, (128, 1, 1), (512, 1, 1), 0, args, lambda: next(streams), drv)
    launch()
    launch()  # the stream is read at each call (CuPy's current stream, a capture's)
    first, second = drv.launches
    assert first["values"] == [1, 4096, -3, 0.5, 0x7F0000001000, 0x7F0000002000, 0.0,
                               0x7F0000003000]  # fmt: skip
    assert first["f"] == 0xABC and first["grid"] == (128, 1, 1) and first["block"] == (512, 1, 1)
    assert first["attr"] == (6, 1, 1) and first["smem"] == 0 and first["extra"] == 0
    assert (first["stream"], second["stream"]) == (111, 222)
    assert second["values"] == first["values"]


def test_a_failed_launch_is_one_error_line():
    drv = FakeDriver([ctypes.c_int32], status=400)
    launch = pdl.launcher(1, (1, 1, 1), (32, 1, 1), 0, (np.int32(7),), lambda: 0, drv)
    with pytest.raises(RooflineError, match="cuLaunchKernelEx failed: CUDA_ERROR_INVALID_HANDLE"):
        launch()


def test_arguments_it_cannot_pass_are_refused():
    with pytest.raises(RooflineError, match="cannot pass a str"):
        pdl.pack(["x"])
    ptrs, held = pdl.pack([np.int64(-5), 0x1000])
    assert ctypes.c_int64.from_address(ptrs[0]).value == -5
    assert ctypes.c_uint64.from_address(ptrs[1]).value == 0x1000
    assert held[-1] is ptrs


def test_the_cufunction_is_found_behind_a_raw_kernel():
    # CuPy 14: RawModule.get_function gives a RawKernel; its loaded Function is `.kernel`
    raw = SimpleNamespace(kernel=SimpleNamespace(ptr=0xBEEF))
    assert pdl.function_ptr(raw) == 0xBEEF
    assert pdl.function_ptr(SimpleNamespace(ptr=0xCAFE)) == 0xCAFE  # a Function itself
    with pytest.raises(RooflineError, match="cannot find the CUfunction of a SimpleNamespace"):
        pdl.function_ptr(SimpleNamespace())


def loads_in_order(stage, dtype):
    """The global loads, stores and atomics, and the waits, in address order."""
    built = compiler.compile_stage(stage, "sm_90a", dtype)
    fn = sass.parse(sass.disassemble(built.cubin_path))[stage.entry]
    kinds = ("LDG", "STG", "RED", "ATOM", "ATOMG", WAIT)
    return [i.opcode for i in fn.instrs if i.opcode.split(".")[0] in kinds]


@pytest.mark.parametrize("dtype", ("bf16", "fp16", "fp32"))
def test_the_activation_is_read_after_the_wait(dtype):
    # A is the previous kernel's output. An __ldg of it (LDG .CONSTANT) may be hoisted above
    # griddepcontrol.wait and read it before that kernel has written it; stage 56 reads A with
    # volatile ld.global.cg (LDG .STRONG.GPU), which stays after the wait. Only the weights,
    # which no kernel of the chain writes, are loaded before it (in 16-bit types the compiler
    # puts the first step's loads of B there; in fp32 it keeps them after the wait).
    ops = loads_in_order(stages.BY_NAME["gemv_pdl"], dtype)
    first_wait = ops.index(WAIT)
    before = ops[:first_wait]
    assert all(op.startswith("LDG") and op.endswith(".CONSTANT") for op in before)  # no store
    assert before or dtype == "fp32"
    assert any("STRONG.GPU" in op for op in ops[first_wait:])


def test_stage_52_still_reads_the_activation_through_the_read_only_path():
    ops = loads_in_order(stages.BY_NAME["gemv_splitk"], "bf16")
    assert not any("STRONG" in op for op in ops)
