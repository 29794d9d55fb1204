"""Empirical ceilings (ERT-style): this GPU's own roofs, and the three roof sets reports can use.

The pure part (kernel sources, the calibration cache) imports no CuPy; the roof sets built from
a calibration are computed in rooflinecli.core.roofs. `measure()`
runs the kernels on the GPU: each is compiled by NVRTC (compiler.compile_source), loaded with
cupy.RawModule and timed with CUDA events (warm-up, median of repeats).

Roofs measured:
- HBM read: a read-only reduction over >= 2 GiB, 16-byte loads; bytes read / time.
- HBM copy: cudaMemcpy device to device of >= 2 GiB; bytes read + written / time.
- L2 read: repeated passes over a buffer of a quarter of the L2, loads that skip L1 (ld.cg).
- FP32 SIMT: 16 independent fmaf chains per thread, a grid that fills every SM several times.
- FP16 Tensor Core, mma.sync.m16n8k16 (f32 accumulate) on register operands, 8 independent
  accumulators per warp (sm_80+).
- FP16 Tensor Core, wgmma.mma_async m64n256k16 (f32 accumulate) from shared-memory descriptors
  (sm_90a only).

"""

from __future__ import annotations

import json
import re
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rooflinecli import __version__
from rooflinecli.errors import RooflineError
from rooflinecli.paths import cache_dir

SCHEMA = "roofline.calibration/1"
GIB = 1 << 30


# --------------------------------------------------------------------------- kernels (CUDA C++)

# Read-only streaming reduction: each thread keeps 4 independent 16-byte loads in flight per
# step. LOAD is __ldg (HBM: read-only path) or __ldcg (L2: cached in L2 only, not in L1).
MEM_READ_SRC = r"""
#ifndef LOAD
#define LOAD __ldg
#endif
extern "C" __global__ void __launch_bounds__(256)
mem_read(const float4* __restrict__ p, long long n4, int passes, float sentinel,
         float* __restrict__ out) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc0 = 0.0f, acc1 = 0.0f, acc2 = 0.0f, acc3 = 0.0f;
    for (int pass = 0; pass < passes; ++pass) {
        long long i = first;
        for (; i + 3 * stride < n4; i += 4 * stride) {
            const float4 a = LOAD(p + i), b = LOAD(p + i + stride);
            const float4 c = LOAD(p + i + 2 * stride), d = LOAD(p + i + 3 * stride);
            acc0 += (a.x + a.y) + (a.z + a.w);
            acc1 += (b.x + b.y) + (b.z + b.w);
            acc2 += (c.x + c.y) + (c.z + c.w);
            acc3 += (d.x + d.y) + (d.z + d.w);
        }
        for (; i < n4; i += stride) {
            const float4 a = LOAD(p + i);
            acc0 += (a.x + a.y) + (a.z + a.w);
        }
    }
    const float acc = (acc0 + acc1) + (acc2 + acc3);
    if (acc == sentinel) out[first] = acc;  // never true: keeps every load alive
}
"""

# SIMT FP32: CHAINS independent FMA chains per thread, UNROLL steps per loop iteration.
FP32_FMA_SRC = r"""
#define CHAINS 16
#define UNROLL 8
extern "C" __global__ void __launch_bounds__(256)
fp32_fma(int iters, float b, float c, float sentinel, float* __restrict__ out) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) x[j] = (float)(tid & 1023) * 1e-3f + (float)j;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int j = 0; j < CHAINS; ++j) x[j] = fmaf(x[j], b, c);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += x[j];
    if (s == sentinel) out[tid] = s;  // never true: keeps every chain alive
}
"""
FP32_CHAINS, FP32_UNROLL = 16, 8

# Operand bits for the Tensor Core kernels: halves of magnitude in [2^-7, 2^-6), mixed signs,
# from a hash of the index: never zero (zeros run faster), sums stay far from overflow.
_HALF_BITS = r"""
__device__ __forceinline__ unsigned int half_bits(unsigned int i) {
    const unsigned int h = i * 2654435761u;
    return 0x2000u | ((h >> 12) & 0x3ffu) | ((h >> 6) & 0x8000u);
}
__device__ __forceinline__ unsigned int half2_bits(unsigned int i) {
    return half_bits(2u * i) | (half_bits(2u * i + 1u) << 16);
}
"""

# mma.sync.m16n8k16 f16 x f16 + f32: NACC independent accumulators per warp, register operands.
MMA_SYNC_SRC = (
    _HALF_BITS
    + r"""
#define NACC 8
extern "C" __global__ void __launch_bounds__(256)
tc_mma_sync(int iters, float sentinel, float* __restrict__ out) {
    const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int a0 = half2_bits(8u * t), a1 = half2_bits(8u * t + 1u),
                       a2 = half2_bits(8u * t + 2u), a3 = half2_bits(8u * t + 3u),
                       b0 = half2_bits(8u * t + 4u), b1 = half2_bits(8u * t + 5u);
    float acc[NACC][4];
#pragma unroll
    for (int j = 0; j < NACC; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int j = 0; j < NACC; ++j)
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < NACC; ++j) s += (acc[j][0] + acc[j][1]) + (acc[j][2] + acc[j][3]);
    if (s == sentinel) out[t] = s;
}
"""
)
MMA_SYNC_NACC = 8
MMA_FLOPS = 16 * 8 * 16 * 2  # one m16n8k16 for a warp


def _wgmma_source(n: int = 256, ksteps: int = 16) -> str:
    """wgmma.mma_async m64nNk16 f32 += f16 x f16, A and B from shared memory (no swizzle:
    8x8 core matrices of 128 contiguous bytes; K-adjacent ones 128 bytes apart, M/N-adjacent
    ones 256 bytes apart). One warpgroup per block issues KSTEPS wgmmas on the same
    accumulators, commits, waits: the accumulators stay in registers throughout."""
    regs = n // 2  # 64 x n f32 accumulators over 128 threads
    outs = ", ".join(f"%{i}" for i in range(regs))
    constraints = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return (
        _HALF_BITS
        + f"""
#define WG_N {n}
#define KSTEPS {ksteps}
#define A_BYTES (64 * 16 * 2)
#define B_BYTES (WG_N * 16 * 2)
__device__ __forceinline__ unsigned long long smem_desc(unsigned int addr) {{
    // start address, leading-dimension byte offset 128 (K), stride byte offset 256 (M/N),
    // all in 16-byte units; base offset 0, no swizzle
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (128ull >> 4) << 16
           | (256ull >> 4) << 32;
}}
extern "C" __global__ void __launch_bounds__(128)
tc_wgmma(int iters, float sentinel, float* __restrict__ out) {{
    __shared__ __align__(1024) unsigned short tile[(A_BYTES + B_BYTES) / 2];
    for (int i = threadIdx.x; i < (A_BYTES + B_BYTES) / 2; i += blockDim.x)
        tile[i] = (unsigned short)half_bits((unsigned int)i + 977u * blockIdx.x);
    // ordinary stores, read next by the tensor cores: the async proxy must see them
    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
    __syncthreads();
    const unsigned int base = (unsigned int)__cvta_generic_to_shared(tile);
    const unsigned long long da = smem_desc(base), db = smem_desc(base + A_BYTES);
    float d[{regs}];
#pragma unroll
    for (int i = 0; i < {regs}; ++i) d[i] = 0.0f;
    for (int it = 0; it < iters; ++it) {{
        asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
#pragma unroll
        for (int k = 0; k < KSTEPS; ++k)
            asm volatile(
                "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
                "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 "
                "{{{outs}}}, %{regs}, %{regs + 1}, p, 1, 1, 0, 0;\\n}}\\n"
                : {constraints}
                : "l"(da), "l"(db), "r"(1));
        asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
    }}
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < {regs}; ++i) s += d[i];
    if (s == sentinel) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}}
"""
    )


WGMMA_N, WGMMA_KSTEPS = 256, 16
WGMMA_SRC = _wgmma_source(WGMMA_N, WGMMA_KSTEPS)
WGMMA_FLOPS = 64 * WGMMA_N * 16 * 2  # one m64n256k16 for a warpgroup


# name -> (source, entry, defines, lowest compute capability, needs the sm_90a target)
KERNELS: dict[str, tuple[str, str, dict[str, int | str], int, bool]] = {
    "cal_hbm_read": (MEM_READ_SRC, "mem_read", {"LOAD": "__ldg"}, 50, False),
    "cal_l2_read": (MEM_READ_SRC, "mem_read", {"LOAD": "__ldcg"}, 50, False),
    "cal_fp32_fma": (FP32_FMA_SRC, "fp32_fma", {}, 50, False),
    "cal_mma_sync": (MMA_SYNC_SRC, "tc_mma_sync", {}, 80, False),
    "cal_wgmma": (WGMMA_SRC, "tc_wgmma", {}, 90, True),
}


def compile_kernel(name: str, arch: str):  # type: ignore[no-untyped-def]
    """Compile one calibration kernel (NVRTC, cached). Returns compiler.Compiled."""
    from rooflinecli.build import compiler

    src, entry, defines, _cc, _arch_a = KERNELS[name]
    return compiler.compile_source(src, name, entry, arch, defines)


def kernels_for(arch: str) -> list[str]:
    """The calibration kernels that build for this target (wgmma needs exactly sm_90a)."""
    from rooflinecli.build.compiler import cc_of_arch

    cc = cc_of_arch(arch)
    out = []
    for name, (_src, _entry, _defs, min_cc, needs_a) in KERNELS.items():
        if cc < min_cc or (needs_a and arch != "sm_90a"):
            continue
        out.append(name)
    return out


# --------------------------------------------------------------------------- the cache (pure)


def slug(device_name: str, driver: str | None, clock_mhz: int | None) -> str:
    raw = f"{device_name}-drv{driver or 'unknown'}-{clock_mhz or 0}mhz".lower()
    return re.sub(r"[^a-z0-9.]+", "-", raw).strip("-")


def calibration_path(device_name: str, driver: str | None, clock_mhz: int | None) -> Path:
    return cache_dir() / "calibration" / f"{slug(device_name, driver, clock_mhz)}.json"


def load_calibration(
    device_name: str, driver: str | None, clock_mhz: int | None
) -> dict[str, Any] | None:
    """The cached calibration of this device, driver and maximum SM clock, or None."""
    path = calibration_path(device_name, driver, clock_mhz)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return None
    if not isinstance(doc.get("measurements"), dict):
        return None
    return doc


def save_calibration(doc: dict[str, Any]) -> Path:
    from rooflinecli import results

    dev = doc["device"]
    path = calibration_path(dev["name"], dev.get("driver"), dev.get("clock_sm_max_mhz"))
    path.parent.mkdir(parents=True, exist_ok=True)
    results.write_atomic(path, results.dumps(doc))
    return path


# --------------------------------------------------------------------------- measuring (GPU)


def _grid_for(fn, threads: int, limits, sm_count: int, waves: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Blocks per SM the kernel's registers and shared memory allow, and a grid of whole waves."""
    from rooflinecli.core import occupancy

    occ = occupancy.theoretical(limits, threads, int(fn.num_regs), int(fn.shared_size_bytes))
    per_sm = max(1, occ.blocks_per_sm)
    return per_sm, sm_count * per_sm * waves


def _summary(times: list[float]) -> dict[str, Any]:
    return {
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "max_ms": max(times),
        "repeats": len(times),
    }


def measure(
    spec_arg: str | None = None,
    quick: bool = False,
    progress=None,  # type: ignore[no-untyped-def]
) -> dict[str, Any]:
    """Run every calibration kernel on GPU 0 and return the calibration document."""
    import numpy as np

    from rooflinecli.core import specs as specreg
    from rooflinecli.gpu import device
    from rooflinecli.gpu.timer import Launch, Timer, Timing

    cp = device.cupy()
    dev = device.info()
    spec = None
    try:
        spec = specreg.resolve(spec_arg) if spec_arg else specreg.for_device(dev["name"])
    except RooflineError:
        if spec_arg:
            raise
    limits = device.sm_limits()
    sms = dev["sm_count"]
    arch = dev["arch"]
    repeats, warmup = (5, 1) if quick else (15, 3)
    target_ms = 4.0 if quick else 15.0
    # the one timer, with fixed counts and no L2 flush (each kernel sizes its own buffers)
    one_timer = Timer(
        Timing(
            warmup_ms=0.0,
            warmup_min=warmup,
            min_repeats=repeats,
            max_repeats=repeats,
            flush_l2=False,
            sample_clock=False,
        )
    )

    class _Counted:  # the calls measure() makes: timer(launch) -> samples, timer.once(launch)
        @staticmethod
        def once(launch) -> float:  # type: ignore[no-untyped-def]
            return one_timer.once(launch)

        def __call__(self, launch) -> list[float]:  # type: ignore[no-untyped-def]
            return one_timer.time([Launch("calibrate", launch)]).samples[0]

    timer = _Counted()
    tick = progress or (lambda _label: None)
    meas: dict[str, float | None] = {}
    details: dict[str, Any] = {}
    notes: list[str] = []
    sentinel = np.float32(-1.2345e30)
    out = cp.zeros(sms * 32 * 1024, dtype=cp.float32)  # written only if a sum hits the sentinel

    def load(name: str):  # type: ignore[no-untyped-def]
        built = compile_kernel(name, arch)
        if built.resources and built.resources.spill_bytes:
            notes.append(f"{name}: {built.resources.spill_bytes} bytes of spills")
        mod = cp.RawModule(path=built.cubin_path)
        return mod.get_function(KERNELS[name][1]), built

    def memory_roofs() -> None:  # its buffers are freed when it returns
        # ---- HBM read: one pass over >= 2 GiB, 16-byte loads
        tick("HBM read")
        nbytes = 2 * GIB
        try:  # random data: never time zeros
            buf = cp.random.default_rng(0).random(nbytes // 4, dtype=cp.float32)
            dst = cp.empty_like(buf)
        except cp.cuda.memory.OutOfMemoryError:
            raise RooflineError("out of device memory: calibration needs 4 GiB free") from None
        fn, built = load("cal_hbm_read")
        _per_sm, grid = _grid_for(fn, 256, limits, sms, 1)
        hbm_args = (buf, np.int64(nbytes // 16), np.int32(1), sentinel, out)
        t = _summary(timer(lambda: fn((grid,), (256,), hbm_args)))
        meas["hbm_read_gbs"] = nbytes / (t["median_ms"] * 1e-3) / 1e9
        regs = built.resources.registers if built.resources else None
        details["hbm_read"] = {**t, "bytes": nbytes, "grid": grid, "block": 256, "registers": regs}

        # ---- HBM copy: cudaMemcpy device to device, bytes read + written
        tick("HBM copy")
        stream = cp.cuda.get_current_stream()
        t = _summary(timer(lambda: dst.data.copy_from_device_async(buf.data, nbytes, stream)))
        meas["hbm_copy_gbs"] = 2 * nbytes / (t["median_ms"] * 1e-3) / 1e9
        details["hbm_copy"] = {**t, "bytes_read": nbytes, "bytes_written": nbytes}

        # ---- L2: passes over a quarter of the L2, loads cached in L2 only
        tick("L2 read")
        l2_bytes = (dev["l2_bytes"] // 4) // (16 * 256) * (16 * 256)
        fn2, built = load("cal_l2_read")
        _per_sm, grid2 = _grid_for(fn2, 256, limits, sms, 1)
        l2_args = [buf[: l2_bytes // 4], np.int64(l2_bytes // 16), np.int32(64), sentinel, out]
        fn2((grid2,), (256,), tuple(l2_args))  # the first pass fetches the buffer into L2
        one = timer.once(lambda: fn2((grid2,), (256,), tuple(l2_args)))
        passes = int(min(1 << 20, max(16, 64 * target_ms / one)))
        l2_args[2] = np.int32(passes)
        t = _summary(timer(lambda: fn2((grid2,), (256,), tuple(l2_args))))
        meas["l2_read_gbs"] = l2_bytes * passes / (t["median_ms"] * 1e-3) / 1e9
        details["l2_read"] = {**t, "buffer_bytes": l2_bytes, "passes": passes, "grid": grid2,
                              "block": 256}  # fmt: skip

    memory_roofs()
    cp.get_default_memory_pool().free_all_blocks()

    # ---- compute roofs: scale the loop count so one launch runs about target_ms
    def compute(
        name: str, threads: int, flops_per_iter_per_block: int, args, waves: int = 4
    ) -> tuple[float, dict[str, Any]]:  # type: ignore[no-untyped-def]
        fn, built = load(name)
        per_sm, grid = _grid_for(fn, threads, limits, sms, waves)
        call = [np.int32(256), *args, out]

        def launch() -> None:
            fn((grid,), (threads,), tuple(call))

        launch()  # module load, first-launch costs
        one = timer.once(launch)
        iters = int(min(1 << 24, max(64, 256 * target_ms / one)))
        call[0] = np.int32(iters)
        t = _summary(timer(launch))
        flops = flops_per_iter_per_block * grid * iters
        tflops = flops / (t["median_ms"] * 1e-3) / 1e12
        regs = built.resources.registers if built.resources else None
        info = {**t, "flops": flops, "iters": iters, "grid": grid, "block": threads,
                "blocks_per_sm": per_sm, "registers": regs}  # fmt: skip
        return tflops, info

    tick("FP32 FMA")
    meas["fp32_fma_tflops"], details["fp32_fma"] = compute(
        "cal_fp32_fma",
        256,
        256 * FP32_CHAINS * FP32_UNROLL * 2,
        (np.float32(0.999), np.float32(1e-3), sentinel),
    )
    available = kernels_for(arch)

    def tensor(key: str, label: str, name: str, threads: int, flops_per_iter: int) -> None:
        """A Tensor Core roof; a failure (an old driver, a faulting kernel) leaves it out with
        a note instead of losing the roofs already measured."""
        meas[key] = None
        if name not in available:
            need = "the sm_90a target" if KERNELS[name][4] else "sm_80 or later"
            notes.append(f"{label} left out: it needs {need} (this GPU: {arch})")
            return
        tick(label)
        try:
            meas[key], details[key.removesuffix("_tflops")] = compute(
                name, threads, flops_per_iter, (sentinel,)
            )
        except RooflineError as exc:
            notes.append(f"{label} left out: {exc.message}")
        except Exception as exc:  # CUDA errors from CuPy: one line, keep the rest
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            notes.append(f"{label} left out: {type(exc).__name__}: {first}")

    tensor(
        "fp16_mma_sync_tflops", "FP16 mma.sync", "cal_mma_sync", 256,
        (256 // 32) * MMA_SYNC_NACC * MMA_FLOPS,
    )  # fmt: skip
    tensor(
        "fp16_wgmma_tflops", "FP16 wgmma", "cal_wgmma", 128, WGMMA_KSTEPS * WGMMA_FLOPS
    )  # fmt: skip
    try:
        cp.cuda.runtime.deviceSynchronize()
    except Exception as exc:  # a kernel above broke the context: the notes say which
        notes.append(f"the CUDA context is broken after the tensor roofs: {exc}")
    dev["clock_sm_mhz_after"] = device.smi_clock_mhz()
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "device": dev,
        "spec": spec.name if spec else None,
        "measurements": meas,
        "details": details,
        "notes": notes,
    }
    if spec is not None:
        from rooflinecli.core.roofs import roof_sets

        doc["roof_sets"] = roof_sets(spec, doc)
    return doc
