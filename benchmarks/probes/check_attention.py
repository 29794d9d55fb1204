"""Does an attention kernel file verify, and how fast is it beside PyTorch, before it joins the
registry? Checks and times one kernel file on the GPU, outside the registry (`roofline run
attention` is the product's path for the stages of the registry).

The kernel follows the fused attention contract (kernels/41_attn_fused.cu and after):

    ENTRY(int batch, int heads, int kv_heads, int seq, float scale, int causal,
          const T* Q, const T* K, const T* V, T* O [, TMA maps])

Q, O: [batch, heads, seq, D]; K, V: [batch, kv_heads, seq, D]; grid (ceil(seq / BLOCK_M),
batch * heads), HEAD_DIM given as -DHEAD_DIM. Each case: fresh normal inputs, O poisoned with
NaN, the first launch checked against a float32 CuPy reference, and with --time the kernel timed
by the project's timer, interleaved with PyTorch SDPA's flash and cuDNN backends (--torch),
after which the last timed launch's output is checked again.

    python3 benchmarks/probes/check_attention.py --file kernels/42_attn_fa2_mma.cu --entry attn_fa2_mma \\
        --threads 128 --block-m 128 --smem 49152 -D BLOCK_N=64 --dtype fp16,bf16 \\
        --head-dim 128 --causal 0,1 --check 1x2x2x77,2x3x1x1000 --time 2x16x16x8192 --torch
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rooflinecli.stages import compiler
from rooflinecli.gpu import device
from rooflinecli.gpu.timer import Launch, Timer, Timing

# max |O - O_ref| / max |O_ref| allowed: a few units of the output's rounding (P is rounded to
# the input type before the PV product in the Tensor Core stages, so 16-bit types get 8 units)
TOLERANCE = {"fp32": 1e-4, "fp16": 8 * 2.0**-11, "bf16": 8 * 2.0**-8}


def shapes(text: str) -> list[tuple[int, int, int, int]]:
    out = []
    for item in filter(None, text.split(",")):
        b, h, hkv, n = (int(x) for x in item.lower().split("x"))
        if h % hkv:
            raise SystemExit(f"heads {h} is not a multiple of kv_heads {hkv} in {item}")
        out.append((b, h, hkv, n))
    return out


def flops(b: int, h: int, n: int, d: int, causal: bool) -> float:
    f = 4.0 * b * h * n * n * d
    return f / 2 if causal else f


class Buffers:
    def __init__(self, cp, b, h, hkv, n, d, dtype, seed):  # type: ignore[no-untyped-def]
        self.cp, self.shape, self.dtype = cp, (b, h, hkv, n, d), dtype
        rng = cp.random.default_rng(seed)
        qf = rng.standard_normal((b, h, n, d), dtype=cp.float32)
        kf = rng.standard_normal((b, hkv, n, d), dtype=cp.float32)
        vf = rng.standard_normal((b, hkv, n, d), dtype=cp.float32)
        self.q, self.k, self.v = (self.store(x) for x in (qf, kf, vf))
        self.o = cp.empty((b, h, n, d), dtype=self.q.dtype)

    def store(self, x):  # type: ignore[no-untyped-def]
        cp = self.cp
        if self.dtype == "fp32":
            return x.copy()
        if self.dtype == "fp16":
            return x.astype(cp.float16)
        u = x.view(cp.uint32)  # bf16 bits, round to nearest even
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cp.uint16)

    def f32(self, x):  # type: ignore[no-untyped-def]
        cp = self.cp
        if self.dtype == "bf16":
            return (x.astype(cp.uint32) << 16).view(cp.float32)
        return x.astype(cp.float32)

    def poison(self) -> None:
        if self.dtype == "bf16":
            self.o.fill(0x7FC0)
        else:
            self.o.fill(float("nan"))

    def reference(self, scale: float, causal: bool):  # type: ignore[no-untyped-def]
        """float32 softmax(scale Q K^T + mask) V, a few heads at a time (S stays under 1 GiB)."""
        cp = self.cp
        b, h, hkv, n, d = self.shape
        group = h // hkv
        out = cp.empty((b, h, n, d), dtype=cp.float32)
        rows = max(1, min(n, (1 << 28) // max(n, 1)))  # query rows per chunk: S <= 1 GiB
        mask = None
        for bi in range(b):
            for hi in range(h):
                q = self.f32(self.q[bi, hi])
                k = self.f32(self.k[bi, hi // group])
                v = self.f32(self.v[bi, hi // group])
                for r0 in range(0, n, rows):
                    s = (q[r0 : r0 + rows] @ k.T) * scale
                    if causal:
                        i = cp.arange(r0, min(n, r0 + rows))[:, None]
                        mask = cp.arange(n)[None, :] > i
                        s[mask] = -cp.inf
                    s -= s.max(axis=1, keepdims=True)
                    p = cp.exp(s)
                    p /= p.sum(axis=1, keepdims=True)
                    out[bi, hi, r0 : r0 + rows] = p @ v
        return out

    def error(self, ref) -> float:  # type: ignore[no-untyped-def]
        cp = self.cp
        got = self.f32(self.o)
        if not bool(cp.isfinite(got).all()):
            return math.inf
        return float(cp.abs(got - ref).max() / max(float(cp.abs(ref).max()), 1e-30))


def torch_backends(buf: Buffers, scale: float, causal: bool) -> dict[str, Any]:
    """SDPA calls on the same buffers, one per backend that accepts the problem."""
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return {}
    b, h, hkv, n, d = buf.shape
    tdtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[buf.dtype]

    def as_torch(x):  # type: ignore[no-untyped-def]
        if buf.dtype == "bf16":  # CuPy has no bf16: hand the bits over as fp16, then relabel
            return torch.from_dlpack(x.view(buf.cp.float16)).view(tdtype)
        return torch.from_dlpack(x)

    q, k, v = as_torch(buf.q), as_torch(buf.k), as_torch(buf.v)
    calls = {}
    for label, backend in (
        ("torch_flash", SDPBackend.FLASH_ATTENTION),
        ("torch_cudnn", SDPBackend.CUDNN_ATTENTION),
    ):

        def call(backend=backend):  # type: ignore[no-untyped-def]
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(
                    q, k, v, is_causal=causal, scale=scale, enable_gqa=hkv != h
                )

        try:
            call()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - a backend that refuses the shape is reported
            print(f"    {label}: not run ({str(exc).splitlines()[0][:100]})")
            continue
        calls[label] = call
    return calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", required=True)
    ap.add_argument("--entry", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--block-m", type=int, required=True)
    ap.add_argument("--smem", type=int, default=0)
    ap.add_argument("-D", dest="defines", action="append", default=[])
    ap.add_argument("--tma", action="store_true")
    ap.add_argument("--dtype", default="fp16,bf16")
    ap.add_argument("--head-dim", default="128")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--check", default="")
    ap.add_argument("--time", default="")
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--budget-ms", type=float, default=300.0)
    ap.add_argument("--label", default="")
    ap.add_argument("--out")
    a = ap.parse_args()

    cp = device.cupy()
    dev = cp.cuda.Device()
    arch = compiler.arch_for_cc(tuple(int(c) for c in dev.compute_capability))  # type: ignore[arg-type]
    src = Path(a.file).read_text()
    params = {}
    for item in a.defines:
        key, _, value = item.partition("=")
        params[key] = int(value) if value.lstrip("-").isdigit() else value
    label = a.label or Path(a.file).stem
    out = open(a.out, "a") if a.out else None  # noqa: SIM115
    failures = 0

    for dtype in a.dtype.split(","):
        for d in (int(x) for x in a.head_dim.split(",")):
            defines = {**params, "HEAD_DIM": d}
            if dtype == "bf16":
                defines["ELEM_BF16"] = 1
            if dtype == "fp32":
                defines["ELEM_FP32"] = 1
            try:
                built = compiler.compile_source(
                    src, f"{label}-{dtype}-d{d}", a.entry, arch, defines
                )
            except Exception as exc:  # noqa: BLE001
                print(f"COMPILE-FAIL {label} {dtype} D={d}: {exc}")
                failures += 1
                continue
            res = built.resources
            print(
                f"# {label} {dtype} D={d} {arch}: registers {res.registers if res else '?'}, "
                f"spills {res.spill_bytes if res else '?'} B, params {defines}"
            )
            fn = cp.RawModule(path=built.cubin_path).get_function(a.entry)
            if a.smem > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = a.smem
            cases = [(s, False) for s in shapes(a.check)] + [(s, True) for s in shapes(a.time)]
            for (b, h, hkv, n), timed in cases:
                for causal in (int(c) for c in a.causal.split(",")):
                    failures += run_case(
                        cp, fn, a, label, dtype, d, b, h, hkv, n, bool(causal), timed, params, out
                    )
    if out:
        out.close()
    print(f"# {label}: {failures} failure(s)")
    return 1 if failures else 0


def run_case(cp, fn, a, label, dtype, d, b, h, hkv, n, causal, timed, params, out) -> int:  # type: ignore[no-untyped-def]  # noqa: E501
    scale = 1.0 / math.sqrt(d)
    buf = Buffers(cp, b, h, hkv, n, d, dtype, seed=1234 + n + 7 * h)
    extra: tuple[Any, ...] = ()
    if a.tma:
        from rooflinecli.gpu import tma

        extra = tuple(
            tma.attention_extra_args(params, buf.q, buf.k, buf.v, buf.o, b, h, hkv, n, d, dtype)
        )
    grid = (-(-n // a.block_m), b * h, 1)
    args = (
        np.int32(b), np.int32(h), np.int32(hkv), np.int32(n), np.float32(scale),
        np.int32(int(causal)), buf.q, buf.k, buf.v, buf.o, *extra,
    )  # fmt: skip

    def launch() -> None:
        fn(grid, (a.threads, 1, 1), args, shared_mem=a.smem)

    shape = f"B{b} H{h} Hkv{hkv} N{n} D{d}{' causal' if causal else ''}"
    row: dict[str, Any] = {"label": label, "dtype": dtype, "shape": shape, "params": params}
    buf.poison()
    try:
        launch()
        cp.cuda.get_current_stream().synchronize()
    except Exception as exc:  # noqa: BLE001
        print(f"LAUNCH-FAIL {label} {dtype} {shape}: {str(exc).splitlines()[0]}")
        return 1
    ref = buf.reference(scale, causal)
    err = buf.error(ref)
    ok = err <= TOLERANCE[dtype]
    row.update(error_first=err, tolerance=TOLERANCE[dtype])
    line = f"{'PASS' if ok else 'FAIL'} {label} {dtype} {shape}: err {err:.2e}"
    if timed and ok:
        launches = [Launch(label, launch, before_last=buf.poison)]
        backends = torch_backends(buf, scale, causal) if a.torch else {}
        launches += [Launch(name, call) for name, call in backends.items()]
        timer = Timer(Timing(budget_ms=a.budget_ms))
        result = timer.time(launches)
        f = flops(b, h, n, d, causal)
        med = {x.name: float(np.median(s)) for x, s in zip(launches, result.samples, strict=True)}
        err_last = buf.error(ref)
        ok = err_last <= TOLERANCE[dtype]
        tf = {k: f / (v * 1e-3) / 1e12 for k, v in med.items()}
        line = f"{'PASS' if ok else 'FAIL'} {label} {dtype} {shape}: err {err:.2e}/{err_last:.2e}"
        line += f"  {med[label]:.3f} ms {tf[label]:.1f} TFLOP/s"
        for k in backends:
            line += f" | {k} {tf[k]:.1f} (ours {100 * med[k] / med[label]:.1f}%)"
        clock = result.clock.get("sm_clock_mhz") if result.clock else None
        if clock:
            line += f" | {clock} MHz"
        row.update(error_last=err_last, time_ms=med, tflops=tf, clock=result.clock)
    row["pass"] = ok
    print(line, flush=True)
    if out:
        out.write(json.dumps(row) + "\n")
    del buf, ref
    cp.get_default_memory_pool().free_all_blocks()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
