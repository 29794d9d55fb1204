"""Empirical ceilings (ERT-style): this GPU's own roofs, and the three roof sets reports can use.

The pure part (kernel sources, roof_sets, the calibration cache) imports no CuPy. `measure()`
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

Roof sets: "datasheet" (the spec), "derived" (SMs x clock x operations per clock per SM, the
seed's 132 x 1830 MHz x 4096 = 989.4 TFLOP/s), "measured" (the calibration).
"""

from __future__ import annotations

import json
import math
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

# Dense FP16 Tensor Core FLOPs per clock per SM (f32 accumulate), by compute capability.
# Hopper: 4 Tensor Cores x 1024; A100: 4 x 512. Others: derived from the datasheet (below).
TC_FP16_FLOPS_PER_CLK_SM: dict[int, int] = {90: 4096, 80: 2048}

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


# --------------------------------------------------------------------------- roof sets (pure)


def tc_fp16_flops_per_clk_sm(spec: Any) -> tuple[int | None, str]:
    """Dense FP16 Tensor Core FLOPs per clock per SM and where the figure comes from."""
    major, minor = (int(x) for x in spec.compute_capability.split("."))
    cc = major * 10 + minor
    if cc in TC_FP16_FLOPS_PER_CLK_SM:
        return TC_FP16_FLOPS_PER_CLK_SM[cc], f"architecture (cc {spec.compute_capability})"
    peak = spec.tflops.get("fp16_tensor_dense")
    if not peak:
        return None, "no FP16 Tensor Core peak in the spec"
    per = peak * 1e6 / (spec.sm_count * spec.boost_clock_mhz)
    return 2 ** round(math.log2(per)), "datasheet / (SMs x boost clock), nearest power of 2"


def _set(fp32: float | None, fp16: float | None, bw: float | None, **extra: Any) -> dict[str, Any]:
    def ridge(peak: float | None) -> float | None:
        return peak * 1000.0 / bw if peak and bw else None

    return {
        "fp32": fp32,
        "fp16_tensor_dense": fp16,
        "bandwidth_gbs": bw,
        "ridge_fp32": ridge(fp32),
        "ridge_fp16_tensor": ridge(fp16),
        **extra,
    }


def roof_sets(
    spec: Any, calibration: dict[str, Any] | None = None, clock_mhz: float | None = None
) -> dict[str, dict[str, Any]]:
    """Roofs (TFLOP/s, GB/s, ridge points in FLOP/byte) by set: datasheet, derived, measured.

    derived = SMs x clock x operations per clock per SM (FP32: 2 per lane; FP16 Tensor Core:
    4096 on Hopper, 2048 on A100), at `clock_mhz`, else the calibrated device's maximum SM
    clock, else the spec's boost clock; its bandwidth is 2 x memory clock x bus width when the
    calibration recorded both, else the datasheet's. measured is present with a calibration."""
    dev = (calibration or {}).get("device") or {}
    sets: dict[str, dict[str, Any]] = {
        "datasheet": _set(
            spec.tflops.get("fp32"),
            spec.tflops.get("fp16_tensor_dense"),
            spec.memory_bandwidth_gbs,
            source=f"spec {spec.name}",
        )
    }
    clock = clock_mhz or dev.get("clock_sm_max_mhz") or spec.boost_clock_mhz
    sms = dev.get("sm_count") or spec.sm_count
    tc, tc_why = tc_fp16_flops_per_clk_sm(spec)
    mem_clock, bus = dev.get("clock_mem_max_mhz"), dev.get("memory_bus_width_bits")
    if mem_clock and bus:
        bw, bw_why = 2 * mem_clock * bus / 8 / 1000.0, "2 x memory clock x bus width"
    else:
        bw, bw_why = spec.memory_bandwidth_gbs, "datasheet (memory clock or bus width unknown)"
    sets["derived"] = _set(
        sms * clock * spec.fp32_lanes_per_sm * 2 / 1e6,
        sms * clock * tc / 1e6 if tc else None,
        bw,
        clock_mhz=clock,
        sm_count=sms,
        fp32_flops_per_clk_sm=spec.fp32_lanes_per_sm * 2,
        fp16_tensor_flops_per_clk_sm=tc,
        source=f"SMs x {clock:g} MHz x FLOP/clk/SM (tensor: {tc_why}); bandwidth: {bw_why}",
    )
    if calibration:
        m = calibration.get("measurements", {})
        tensor = [m.get("fp16_wgmma_tflops"), m.get("fp16_mma_sync_tflops")]
        hbm = [m.get("hbm_read_gbs"), m.get("hbm_copy_gbs")]
        sets["measured"] = _set(
            m.get("fp32_fma_tflops"),
            max((t for t in tensor if t), default=None),
            max((b for b in hbm if b), default=None),
            l2_gbs=m.get("l2_read_gbs"),
            # the ceiling of kernels whose math is mma.sync (place_on_roofs puts them under it)
            fp16_mma_sync_tensor=m.get("fp16_mma_sync_tflops"),
            source=f"calibration of {dev.get('name', '?')} ({calibration.get('created', '?')}): "
            "best of wgmma/mma.sync, best of HBM read/copy",
        )
    return sets


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


class _Timer:
    def __init__(self, cp, warmup: int, repeats: int):  # type: ignore[no-untyped-def]
        self.cp, self.warmup, self.repeats = cp, warmup, repeats

    def __call__(self, launch) -> list[float]:  # type: ignore[no-untyped-def]
        cp = self.cp
        for _ in range(self.warmup):
            launch()
        starts = [cp.cuda.Event() for _ in range(self.repeats)]
        ends = [cp.cuda.Event() for _ in range(self.repeats)]
        for s, e in zip(starts, ends, strict=True):
            s.record()
            launch()
            e.record()
        ends[-1].synchronize()
        return [cp.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends, strict=True)]

    def once(self, launch) -> float:  # type: ignore[no-untyped-def]
        cp = self.cp
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        launch()
        e.record()
        e.synchronize()
        return max(cp.cuda.get_elapsed_time(s, e), 1e-3)


def _grid_for(fn, threads: int, limits, sm_count: int, waves: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Blocks per SM the kernel's registers and shared memory allow, and a grid of whole waves."""
    from rooflinecli.core import occupancy

    occ = occupancy.theoretical(limits, threads, int(fn.num_regs), int(fn.shared_size_bytes))
    per_sm = max(1, occ.blocks_per_sm)
    return per_sm, sm_count * per_sm * waves


def _attr(cp, num: int) -> int | None:  # type: ignore[no-untyped-def]
    try:
        return int(cp.cuda.runtime.deviceGetAttribute(num, 0)) or None
    except Exception:
        return None


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

    from rooflinecli.core import occupancy
    from rooflinecli.core import specs as specreg
    from rooflinecli.gpu import runner

    cp = runner._cupy()
    dev = runner.device_info()
    dev["memory_bus_width_bits"] = _attr(cp, 37)  # cudaDevAttrGlobalMemoryBusWidth
    if not dev.get("clock_mem_max_mhz"):  # no nvidia-smi: cudaDevAttrMemoryClockRate (kHz)
        khz = _attr(cp, 36)
        dev["clock_mem_max_mhz"] = khz // 1000 if khz else None
    spec = None
    try:
        spec = specreg.resolve(spec_arg) if spec_arg else specreg.for_device(dev["name"])
    except RooflineError:
        if spec_arg:
            raise
    props = cp.cuda.runtime.getDeviceProperties(0)
    major, minor = int(props["major"]), int(props["minor"])
    limits = occupancy.SmLimits(
        cc=major * 10 + minor,
        registers_per_sm=int(props.get("regsPerMultiprocessor", 65536)),
        max_threads_per_sm=int(props.get("maxThreadsPerMultiProcessor", 2048)),
        max_blocks_per_sm=int(props.get("maxBlocksPerMultiProcessor", 32)),
        smem_per_sm_bytes=int(props.get("sharedMemPerMultiprocessor", 228 * 1024)),
        smem_per_block_bytes=int(props.get("sharedMemPerBlockOptin", 227 * 1024)),
    )
    sms = dev["sm_count"]
    arch = dev["arch"]
    repeats, warmup = (5, 1) if quick else (15, 3)
    target_ms = 4.0 if quick else 15.0
    timer = _Timer(cp, warmup, repeats)
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
    smi_after = runner._smi("clocks.sm")
    dev["clock_sm_mhz_after"] = int(smi_after[0]) if smi_after and smi_after[0].isdigit() else None
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
        doc["roof_sets"] = roof_sets(spec, doc)
    return doc
