"""Are the WGMMA shared-memory descriptors for a row-major B right? One WGMMA tile with B
row-major, against NumPy: the debugging handle for stages 24-26's B
descriptor (kernels/include/ptx_sm90.cuh, smem_desc_mn_sw128).

Stages 24-26 take B row-major (K x N): TMA writes it into shared memory as boxes of 64 k-rows x
64 n (one 128-byte swizzled row per k, box j at j * 8 KiB), and the WGMMAs read it N-major
(imm-trans-b = 1) through a descriptor whose LBO should be the box-to-box step along N (8192)
and SBO the step from 8 k rows to the next (1024). A wrong bit there gives garbage, with
nothing to say which bit. This script runs ONE warpgroup on ONE 64 x N x K tile (N = 128 or
256 as m64n128k16 / m64n256k16, K = 16: one wgmma, or 64: the stages' four k16 steps, B
advanced 2048 bytes each) laid out exactly as in the stages, and compares every element:

  * control: B K-major, imm-trans-b 0, smem_desc_k_sw128's fields (what stages 24-26 ran
    before): if this fails, the harness is wrong, not the descriptor;
  * "stages": B row-major, imm-trans-b 1, LBO = 8192, SBO = 1024: what smem_desc_mn_sw128 gives;
  * "swapped": LBO and SBO exchanged (the usual mistake): it must fail (XFAIL; XPASS would
    mean this tile cannot tell the two apart); --lbo/--sbo add any other pair ("custom").

Shared memory is filled two ways: by the threads, with the 128-byte swizzle written out
(chunk c of row r at c ^ (r % 8)), and by TMA with rooflinecli/gpu/tma.py's maps and the
stages' boxes ("tma"). Inputs are small integers, so every sum is exact: any difference is a
layout error. A FAIL line names the first wrong elements (row m, column n) and which 64-column
blocks and rows are wrong.

    python benchmarks/probes/check_wgmma_layout.py                    # everything (8 small compiles)
    python benchmarks/probes/check_wgmma_layout.py --n 256 --k 16 --dtypes bf16 --fill threads
    python benchmarks/probes/check_wgmma_layout.py --lbo 1024 --sbo 8192

Exit status 0 when the control and the stages' descriptor pass everywhere (the swapped pair
then shows XFAIL); the last line says OK, WRONG (and which pair passes instead) or HARNESS.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

STAGE_LBO, STAGE_SBO = 8192, 1024  # smem_desc_mn_sw128(addr, BK * 128) with BK = 64
KMAJOR_LBO, KMAJOR_SBO = 16, 1024  # smem_desc_k_sw128

SRC = r"""
#include "ptx_sm80.cuh"
#include "ptx_sm90.cuh"
typedef unsigned int u32;
typedef unsigned short u16;

// The stages' geometry: A one box of 64 rows x 64 k (128-byte rows, 8 KiB); B row-major as
// TILE_N / 64 boxes of 64 k-rows x 64 n (8 KiB each, the stages' BK = 64), or, for the control
// (TRANS_B 0), K-major as TILE_N rows x 64 k. The global operands are padded to 64 k with zeros
// (A 64 x 64, B 64 x TILE_N, or Bt TILE_N x 64): the wgmmas read the first tile_k (16 or 64).
constexpr int A_BYTES = 64 * 128, BOX_BYTES = 64 * 128, B_BYTES = TILE_N * 128;
#if TILE_N == 256
#define WGMMA wgmma_m64n256k16<TRANS_B>
#else
#define WGMMA wgmma_m64n128k16<TRANS_B>
#endif

__device__ __forceinline__ u32 swz(int row, int col) {  // byte offset in 128-byte swizzled rows
    return row * 128 + ((((col / 8) ^ (row % 8)) * 16) | ((col % 8) * 2));
}

extern "C" __global__ void __launch_bounds__(128, 1)
wgmma_tile(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ D,
           int tile_k, u32 lbo, u32 sbo, int use_tma, const __grid_constant__ TmaMap map_a,
           const __grid_constant__ TmaMap map_b) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long bar_mem;
    const u32 raw = static_cast<u32>(__cvta_generic_to_shared(smem_raw));
    const u32 skew = ((raw + 1023u) & ~1023u) - raw;
    unsigned char* smem = smem_raw + skew;  // 1024-byte aligned: the swizzle's period
    const u32 sa = raw + skew, sb = sa + A_BYTES;
    const u32 bar = static_cast<u32>(__cvta_generic_to_shared(&bar_mem));
    const int tid = threadIdx.x;

    if (use_tma) {
        if (tid == 0) {
            mbar_init(bar, 1);
            fence_mbarrier_init();
        }
        __syncthreads();
        if (tid == 0) {
            mbar_arrive_expect_tx(bar, A_BYTES + B_BYTES);
            tma_load_2d(sa, &map_a, bar, 0, 0);
            if (TRANS_B) {
                for (int j = 0; j < TILE_N / 64; ++j)  // the stages' boxes: 64 k x 64 n
                    tma_load_2d(sb + j * BOX_BYTES, &map_b, bar, 64 * j, 0);
            } else {
                tma_load_2d(sb, &map_b, bar, 0, 0);
            }
        }
        mbar_wait(bar, 0);
    } else {
        for (int i = tid; i < 64 * 64; i += 128) {
            const int r = i / 64, k = i % 64;
            *reinterpret_cast<u16*>(smem + swz(r, k)) = A[r * 64 + k];
        }
        for (int i = tid; i < 64 * TILE_N; i += 128) {
            if (TRANS_B) {  // B[k][n], k rows of 64 n per box
                const int k = i / TILE_N, n = i % TILE_N;
                *reinterpret_cast<u16*>(smem + A_BYTES + (n / 64) * BOX_BYTES + swz(k, n % 64)) =
                    B[k * TILE_N + n];
            } else {  // Bt[n][k], K-major rows
                const int n = i / 64, k = i % 64;
                *reinterpret_cast<u16*>(smem + A_BYTES + swz(n, k)) = B[n * 64 + k];
            }
        }
        fence_proxy_async();  // the threads' stores visible to wgmma (async proxy)
        __syncthreads();
    }

    float d[TILE_N / 2];
#pragma unroll
    for (int i = 0; i < TILE_N / 2; ++i) d[i] = 0.0f;
    wgmma_fence();
    for (int kk = 0; kk < tile_k / 16; ++kk) {
        const u32 b_at = TRANS_B ? sb + kk * 16 * 128 : sb + kk * 32;  // +16 k rows / +32 bytes
        WGMMA(d, smem_desc_k_sw128(sa + kk * 32), smem_desc(b_at, lbo, sbo, WgmmaSwizzle::b128), 1);
    }
    wgmma_commit();
    wgmma_wait<0>();

    const int lane = tid % 32, w = tid / 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < TILE_N / 2; ++i)  // the m16n8 accumulator layout (ptx_sm90.cuh)
        D[(16 * w + g + 8 * ((i >> 1) & 1)) * TILE_N + 8 * (i >> 2) + 2 * t + (i & 1)] = d[i];
}
"""

SMEM_BYTES = 64 * 1024  # generous: a wrong LBO/SBO candidate still reads inside the allocation


def to_bits(np, x, dtype):  # type: ignore[no-untyped-def]
    """Small integers (exact in fp16 and bf16) as their 16-bit patterns."""
    if dtype == "fp16":
        return x.astype(np.float16).view(np.uint16)
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def zero_map():  # type: ignore[no-untyped-def]
    import numpy as np

    return np.zeros((), dtype=np.dtype([("b", np.uint64, 16)], align=True))[()]


def run_one(cp, np, dtype, n, k, trans_b, lbo, sbo, fill, rng):  # type: ignore[no-untyped-def]
    from rooflinecli.stages.compiler import compile_source
    from rooflinecli.gpu.tma import encode_tensor_map

    defines = {"TILE_N": n, "TRANS_B": trans_b, "ELEM_BF16": int(dtype == "bf16")}
    name = f"check_wgmma_layout_n{n}_t{trans_b}_{dtype}"
    built = compile_source(SRC, name, "wgmma_tile", "sm_90a", defines)
    fn = cp.RawModule(path=built.cubin_path).get_function("wgmma_tile")
    fn.max_dynamic_shared_size_bytes = SMEM_BYTES

    a = np.zeros((64, 64))  # padded to 64 k with zeros: every TMA box lies inside its matrix
    b = np.zeros((64, n))  # B row-major, K x N
    a[:, :k] = rng.integers(-3, 4, size=(64, k))
    b[:k] = rng.integers(-3, 4, size=(k, n))
    want = a @ b
    a_dev = cp.asarray(to_bits(np, a, dtype))
    b_host = b if trans_b else np.ascontiguousarray(b.T)  # the control reads B^T (N x K)
    b_dev = cp.asarray(to_bits(np, b_host, dtype))
    out = cp.full((64, n), cp.nan, dtype=cp.float32)
    if fill == "tma":
        map_a = encode_tensor_map(a_dev, 64, 64, 64, 64, dtype)  # the stages' A box (BM = 64)
        if trans_b:
            map_b = encode_tensor_map(b_dev, 64, n, 64, 64, dtype)  # the stages' B box
        else:
            map_b = encode_tensor_map(b_dev, n, 64, n, 64, dtype)
    else:
        map_a = map_b = zero_map()
    args = (a_dev, b_dev, out, np.int32(k), np.uint32(lbo), np.uint32(sbo),
            np.int32(fill == "tma"), map_a, map_b)  # fmt: skip
    fn((1, 1, 1), (128, 1, 1), args, shared_mem=SMEM_BYTES)
    cp.cuda.runtime.deviceSynchronize()
    return cp.asnumpy(out).astype(np.float64), want


def describe(np, got, want) -> str:  # type: ignore[no-untyped-def]
    bad = ~np.isclose(got, want, rtol=0, atol=1e-3)
    rows, cols = np.nonzero(bad)
    first = ", ".join(
        f"D[{r}][{c}] = {got[r, c]:g} (want {want[r, c]:g})"
        for r, c in zip(rows[:4], cols[:4], strict=True)
    )
    blocks = sorted({int(c) // 64 for c in cols})
    return (
        f"{int(bad.sum())} of {bad.size} wrong; first: {first}; wrong 64-column blocks of N "
        f"{blocks}, rows {int(rows.min())}..{int(rows.max())} ({len(set(rows.tolist()))} rows)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="128,256", help="tile widths: 128 and/or 256")
    parser.add_argument("--k", default="16,64", help="tile depths: 16 (one wgmma) and/or 64")
    parser.add_argument("--dtypes", default="fp16,bf16")
    parser.add_argument("--fill", default="threads,tma", help="threads and/or tma")
    parser.add_argument("--lbo", type=int, help="also try this LBO (bytes) with B row-major")
    parser.add_argument("--sbo", type=int, help="... and this SBO (bytes)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import cupy as cp
    import numpy as np

    def ints(text: str) -> list[int]:
        return [int(x) for x in text.split(",") if x.strip()]

    candidates = [
        ("control K-major", 0, KMAJOR_LBO, KMAJOR_SBO),
        ("stages", 1, STAGE_LBO, STAGE_SBO),
        ("swapped", 1, STAGE_SBO, STAGE_LBO),
    ]
    if args.lbo is not None or args.sbo is not None:
        candidates.append(("custom", 1, args.lbo or STAGE_LBO, args.sbo or STAGE_SBO))
    rng = np.random.default_rng(args.seed)
    passed: dict[str, bool] = {}
    for dtype in [d.strip() for d in args.dtypes.split(",") if d.strip()]:
        for n in ints(args.n):
            for k in ints(args.k):
                for fill in [f.strip() for f in args.fill.split(",") if f.strip()]:
                    for label, trans_b, lbo, sbo in candidates:
                        tag = (
                            f"{label:16} {dtype} 64x{n}x{k} fill={fill:7} trans_b={trans_b} "
                            f"LBO={lbo:5} SBO={sbo:5}"
                        )
                        try:
                            got, want = run_one(cp, np, dtype, n, k, trans_b, lbo, sbo, fill, rng)
                        except Exception as exc:  # noqa: BLE001 - report it, go on if we can
                            passed[label] = False
                            print(f"ERROR {tag}: {type(exc).__name__}: {exc}", flush=True)
                            if "illegal" in str(exc).lower() or "launch failure" in str(exc):
                                return 3  # the CUDA context is gone
                            continue
                        ok = bool(np.allclose(got, want, rtol=0, atol=1e-3))
                        passed[label] = passed.get(label, True) and ok
                        note = "" if ok else "  " + describe(np, got, want)
                        word = "PASS" if ok else "FAIL"
                        if label == "swapped":  # must fail, or the test cannot tell LBO from SBO
                            word, note = ("XFAIL", "") if not ok else ("XPASS", "  (should fail)")
                        print(f"{word:5} {tag}{note}", flush=True)
    good = passed.get("control K-major", True) and passed.get("stages", False)
    if passed.get("swapped") and passed.get("stages"):
        print("WARNING: the swapped LBO/SBO passed too: these tiles do not tell them apart")
    if good:
        print(f"OK: B row-major, LBO={STAGE_LBO}, SBO={STAGE_SBO} (smem_desc_mn_sw128) is right")
    elif not passed.get("control K-major", True):
        print("HARNESS: the K-major control fails too: the test is wrong, not the descriptor")
    else:
        right = [label for label, ok in passed.items() if ok and label != "control K-major"]
        right = [f"{label} (LBO, SBO swapped)" if label == "swapped" else label for label in right]
        print(
            f"WRONG: the stages' B descriptor fails; passing here: {right or 'none'}. Fix "
            "smem_desc_mn_sw128 in kernels/include/ptx_sm90.cuh to the passing LBO/SBO."
        )
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
