"""How fast can mma.sync go on this GPU with the shape of stage 23's consumer loop?

A probe, not a stage: one block per SM, W warps, each computing an MI x NI grid of
m16n8k16 tiles (f32 accumulate) over and over on random fp16 operands, with no global memory in
the loop. It separates what stage 23 loses into parts:

  * mode 0, fragments fixed in registers: the rate the HMMA pipe reaches with W warps per SM
    (2 per scheduler is what stage 23's 232-register consumers allow);
  * mode 1, stage 23's own fragment stream: every k16 step reloads A and B with ldmatrix.x4 from a
    3-stage, 128-byte-swizzled ring of 48 KiB stages (the same addresses), double-buffered, with
    no waits on the producer;
  * mode 2, mode 1 plus stage 23's synchronisation: each 64-deep K tile waits on a `full`
    mbarrier (already complete) and arrives on an `empty` one, as the consumer loop does.

Each configuration is timed with CUDA events (median of 10 launches of about 30 ms) while NVML
samples the SM clock, so the rate is also given per clock and per SM.

    python benchmarks/probes/probe_mma.py            # on a GPU; prints a markdown table
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SRC = r"""
typedef unsigned int u32;
typedef unsigned long long u64;
constexpr int MI = MI_, NI = NI_;
constexpr int A_BYTES = 128 * 128, STAGE_BYTES = A_BYTES + 256 * 128, RING = 3;

__device__ __forceinline__ void mma16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm(ELEM_MMA " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void ldsm4(u32 (&r)[4], u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    u32 done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32, 1)
probe(const uint4* __restrict__ src, int iters, float* __restrict__ out, u64* __restrict__ ticks) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ __align__(8) u64 bars[2];
    const u32 base = (static_cast<u32>(__cvta_generic_to_shared(smem)) + 1023u) & ~1023u;
    const u32 bar0 = static_cast<u32>(__cvta_generic_to_shared(bars));
    const u32 skew = base - static_cast<u32>(__cvta_generic_to_shared(smem));
    uint4* ring = reinterpret_cast<uint4*>(smem + skew);
    for (int i = threadIdx.x; i < RING * STAGE_BYTES / 16; i += blockDim.x) ring[i] = src[i];
    if (threadIdx.x == 0) {
        // full: count 1, completed once here and never again (parity 0 done);
        // empty: a count no one reaches, so arrivals never complete a phase
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar0) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;"
                     :: "r"(bar0 + 8), "r"((1 << 20) - 1) : "memory");
        asm volatile("{\n.reg .b64 s;\nmbarrier.arrive.shared::cta.b64 s, [%0];\n}"
                     :: "r"(bar0) : "memory");
    }
    __syncthreads();
    u64 c0, g0;  // this SM's cycle counter and the global nanosecond timer: the clock it ran at
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = ((warp / 4) % 2) * 64, wn = (warp % 4) * 64;
    const u32 a_row = static_cast<u32>((wm + (lane & 15)) * 128);
    const u32 b_row = static_cast<u32>(A_BYTES + (wn + (lane & 7) + 8 * (lane >> 4)) * 128);
    const u32 a_xor = static_cast<u32>(((lane >> 4) ^ (lane & 7)) * 16);
    const u32 b_xor = static_cast<u32>((((lane >> 3) & 1) ^ (lane & 7)) * 16);
    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
    u32 a[2][MI][4], b[2][NI / 2][4];
    auto load = [&](int buf, u32 stage_base, int ks) {
        const u32 sa = stage_base + a_row + ((32u * ks) ^ a_xor);
        const u32 sb = stage_base + b_row + ((32u * ks) ^ b_xor);
#pragma unroll
        for (int i = 0; i < MI; ++i) ldsm4(a[buf][i], sa + i * 16 * 128);
#pragma unroll
        for (int j = 0; j < NI / 2; ++j) ldsm4(b[buf][j], sb + j * 16 * 128);
    };
    load(0, base, 0);
    load(1, base, 1);
    for (int kt = 0; kt < iters; ++kt) {
#if MODE == 0
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma16816(acc[i][j], a[ks % 2][i], b[ks % 2][j / 2][2 * (j % 2)],
                             b[ks % 2][j / 2][2 * (j % 2) + 1]);
#else
        const u32 stage_base = base + (kt % RING) * STAGE_BYTES;
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
            if (ks + 1 < 4) {
                load((ks + 1) % 2, stage_base, ks + 1);
            } else {
#if MODE == 2
                mbar_wait(bar0, 0);
#endif
                load(0, base + ((kt + 1) % RING) * STAGE_BYTES, 0);
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j)
                    mma16816(acc[i][j], a[ks % 2][i], b[ks % 2][j / 2][2 * (j % 2)],
                             b[ks % 2][j / 2][2 * (j % 2) + 1]);
        }
#if MODE == 2
        __syncwarp();
        if (lane == 0)
            asm volatile("{\n.reg .b64 s;\nmbarrier.arrive.shared::cta.b64 s, [%0];\n}"
                         :: "r"(bar0 + 8) : "memory");
#endif
#endif
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) s += acc[i][j][r];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 c1, g1;
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
        ticks[2 * blockIdx.x] = c1 - c0;
        ticks[2 * blockIdx.x + 1] = g1 - g0;
    }
}
"""

# A sentinel: one warp per SM reading %clock64 against %globaltimer for span_ns.
SENTINEL = r"""
extern "C" __global__ void sm_clock(long long span_ns, unsigned long long* __restrict__ out) {
    unsigned long long c0, c1, g0, g1;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    } while (static_cast<long long>(g1 - g0) < span_ns);
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c1));
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = c1 - c0;
        out[2 * blockIdx.x + 1] = g1 - g0;
    }
}
"""


class Sentinel:
    """The sentinel compiled and loaded, with its output buffer."""

    def __init__(self, cp, sms: int) -> None:  # type: ignore[no-untyped-def]
        from rooflinecli.stages import compiler

        built = compiler.compile_source(SENTINEL, "sm_clock", "sm_clock", "sm_90a")
        self.cp, self.sms = cp, sms
        self.fn = cp.RawModule(path=built.cubin_path).get_function("sm_clock")
        self.out = cp.zeros(2 * sms, dtype=cp.uint64)

    def launch(self, span_us: float = 200.0, stream=None) -> None:  # type: ignore[no-untyped-def]
        args = (self.cp.int64(int(span_us * 1000)), self.out)
        with stream if stream is not None else self.cp.cuda.get_current_stream():
            self.fn((self.sms,), (32,), args)

    def read(self) -> float | None:
        """Median over the blocks of cycles per microsecond (MHz)."""
        ticks = self.out.get().reshape(-1, 2).astype(float)
        rates = [c / t * 1000.0 for c, t in ticks if t > 0]
        return statistics.median(rates) if rates else None


MMA = {
    "fp16": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "bf16": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
}
# (mode, warps, MI, NI, dtype)
CONFIGS = [
    (0, 4, 4, 8, "fp16"),
    (0, 8, 4, 8, "fp16"),
    (0, 16, 2, 8, "fp16"),
    (1, 8, 4, 8, "fp16"),
    (2, 8, 4, 8, "fp16"),
    (0, 8, 4, 8, "bf16"),
    (2, 8, 4, 8, "bf16"),
]


def parse_configs(text: str) -> list[tuple[int, int, int, int, str]]:
    """'2:8:4:8:fp16,0:8:4:8:bf16' -> [(mode, warps, MI, NI, dtype), ...]"""
    out = []
    for item in filter(None, text.split(",")):
        mode, warps, mi, ni, dtype = item.split(":")
        out.append((int(mode), int(warps), int(mi), int(ni), dtype))
    return out


def main() -> int:
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", help="mode:warps:MI:NI:dtype,... (default: the list above)")
    ap.add_argument("--launches", type=int, default=10, help="timed launches per configuration")
    ap.add_argument("--output", help="write the measurements here as JSON")
    opts = ap.parse_args()
    configs = parse_configs(opts.configs) if opts.configs else CONFIGS

    import cupy as cp

    from rooflinecli import files, results
    from rooflinecli.stages import compiler
    from rooflinecli.gpu import device, nvml
    from rooflinecli.gpu.timer import Timer, Timing

    timer = Timer(Timing(flush_l2=False, sample_clock=False))  # the tool's one timer

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    probe_nvml = nvml.open_device(str(dev.pci_bus_id))
    smem = 3 * (128 * 128 + 256 * 128) + 1024
    rng = cp.random.default_rng(1)
    src = {
        "fp16": rng.uniform(-1, 1, smem // 2, dtype=cp.float32).astype(cp.float16).view(cp.uint16),
        "bf16": (rng.uniform(-1, 1, smem // 2, dtype=cp.float32).view(cp.uint32) >> 16).astype(
            cp.uint16
        ),
    }
    ticks = cp.zeros(2 * sms, dtype=cp.uint64)
    # two ways to read the counted clock of a kernel that cannot count it itself, checked here
    # against the probe's own count: a sentinel beside the timed launches (the probe leaves room
    # on each SM) and one right behind them on the same stream
    beside, behind = Sentinel(cp, sms), Sentinel(cp, sms)
    side_stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    print(
        "| mode | warps | warp tile | dtype | TFLOP/s | % of 989.4 | NVML SM MHz (min-max) "
        "| SM MHz by clock64 | sentinel beside | sentinel behind | FLOP/clk/SM | regs |"
    )
    print("|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for mode, warps, mi, ni, dtype in configs:
        defines = {
            "MODE": mode,
            "WARPS": warps,
            "MI_": mi,
            "NI_": ni,
            "ELEM_MMA": f'"{MMA[dtype]}"',
        }
        built = compiler.compile_source(
            SRC, f"probe_mma_{mode}_{warps}_{mi}{ni}_{dtype}", "probe", "sm_90a", defines
        )
        res = built.resources
        fn = cp.RawModule(path=built.cubin_path).get_function("probe")
        fn.max_dynamic_shared_size_bytes = smem
        out = cp.empty(sms * warps * 32, dtype=cp.float32)
        flops_per_iter = sms * warps * 4 * mi * ni * 4096
        args = (src[dtype], out)

        def launch(iters: int, fn=fn, threads=warps * 32, args=args) -> None:  # type: ignore[no-untyped-def]
            fn((sms,), (threads,), (args[0], cp.int32(iters), args[1], ticks), shared_mem=smem)

        launch(100)
        iters = max(100, int(2000 * 30.0 / timer.once(lambda launch=launch: launch(2000))))
        for _ in range(3):
            launch(iters)
        times, eff = [], []
        ctx = probe_nvml.sampling() if probe_nvml else None
        samples = ctx.__enter__() if ctx else None
        beside.launch(0.8 * opts.launches * 30_000.0, stream=side_stream)
        for _ in range(opts.launches):  # one at a time: each launch's own clock count is read
            times.append(timer.once(lambda launch=launch, iters=iters: launch(iters)))
            t = ticks.get().reshape(-1, 2).astype(float)
            eff.append(statistics.median(t[:, 0] / t[:, 1]) * 1000.0)  # cycles per ns -> MHz
        launch(iters)
        behind.launch()
        cp.cuda.get_current_stream().synchronize()
        side_stream.synchronize()
        beside_mhz, behind_mhz = beside.read(), behind.read()
        if ctx:
            ctx.__exit__(None, None, None)
        ms = statistics.median(times)
        tflops = flops_per_iter * iters / ms / 1e9
        summ = samples.summary() if samples else {}
        mhz = summ.get("sm_clock_mhz")
        eff_mhz = statistics.median(eff)
        per_clk = tflops * 1e12 / (sms * eff_mhz * 1e6)
        clock = f"{mhz} ({summ['sm_clock_mhz_min']}-{summ['sm_clock_mhz_max']})" if mhz else "-"
        print(
            f"| {mode} | {warps} | {16 * mi}x{8 * ni} | {dtype} | {tflops:,.1f} | "
            f"{100 * tflops / 989.4:.1f}% | {clock} | {eff_mhz:,.0f} | {beside_mhz or 0:,.0f} | "
            f"{behind_mhz or 0:,.0f} | {per_clk:,.0f} | {res.registers if res else '-'} |",
            flush=True,
        )
        rows.append(
            {
                "mode": mode,
                "warps": warps,
                "warp_tile": [16 * mi, 8 * ni],
                "dtype": dtype,
                "tflops": tflops,
                "median_ms": ms,
                "iters": iters,
                "launches": opts.launches,
                "sm_clock_mhz_by_clock64": eff_mhz,
                "sm_clock_mhz_sentinel_beside": beside_mhz,
                "sm_clock_mhz_sentinel_behind": behind_mhz,
                "flops_per_clk_sm": per_clk,
                "registers": res.registers if res else None,
                "spill_bytes": res.spill_bytes if res else None,
                **summ,
            }
        )
    if opts.output:
        doc = {
            "schema": "roofline.probe-mma/1",
            "what": __doc__.split("\n\n")[1].replace("\n", " "),
            "created": results.new_document({}, None, [])["created"],
            "device": device.info(),
            "environment": results.environment(),
            "records": rows,
        }
        files.write_atomic(opts.output, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
