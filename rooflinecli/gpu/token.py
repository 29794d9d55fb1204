"""The token stage on the GPU (kernels/57_decode_token.cu, registry rooflinecli.stages.token): a
chain's GEMMs packed into the kernel's records, one tensor map per weight, the float32
workspaces and counters, and the one launch that runs the whole token. CuPy is passed in.

The records and the maps live in device memory for the launch's life; the two workspace sets
are zero before the first launch (each launch zeroes the set the next one uses), the counters
only grow, so the launch can be replayed from a CUDA graph any number of times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rooflinecli.errors import RooflineError
from rooflinecli.gpu import tma
from rooflinecli.stages.token import RECORD_BYTES, Plan, TokenStage, plan


def records(layout: Plan, ns: Sequence[int], ks: Sequence[int], sources: Sequence[int],
            outs: Sequence[int]) -> bytes:  # fmt: skip
    """The kernel's TokenGemm records, 32 bytes each: n, k, src, the first counter (int32), the
    workspace offset (int64) and the output's device address (uint64)."""
    import numpy as np

    rec = np.dtype([("n", "<i4"), ("k", "<i4"), ("src", "<i4"), ("ctr", "<i4"),
                    ("ws", "<i8"), ("out", "<u8")])  # fmt: skip
    assert rec.itemsize == RECORD_BYTES
    table = np.zeros(len(ns), dtype=rec)
    for g in range(len(ns)):
        table[g] = (ns[g], ks[g], sources[g], layout.ctr_offset[g], layout.ws_offset[g], outs[g])
    return table.tobytes()


def launcher(cp, stage: TokenStage, arch: str, sm_count: int, dtype: str, rows: int,
             x: Any, weights: Sequence[Any], outs: Sequence[Any], shapes: Sequence[tuple[int, int]],
             sources: Sequence[int], stamps: bool = False,
             ) -> tuple[Callable[[], None], dict[str, Any]]:  # type: ignore[no-untyped-def]  # fmt: skip
    """(a call that launches the whole chain once, what the record says of the build). `shapes`
    holds each GEMM's (N, K); weights[g] is its K x N weight, outs[g] its rows x N output.
    `stamps`: the build that stamps each GEMM's begin, input and end per block (STAMPS=1); the
    call's `stamps` attribute is then the count x blocks x 3 uint64 array the launch fills
    (%globaltimer nanoseconds, zero where a block has no run in a GEMM: rooflinecli.core.chain
    .stamp_timeline reads it)."""
    import numpy as np

    from rooflinecli.paths import data_dir
    from rooflinecli.stages import compiler

    ns = [n for n, _k in shapes]
    ks = [k for _n, k in shapes]
    why = stage.refuses(dtype, rows, [(rows, n, k) for n, k in shapes], sm_count)
    if why:
        raise RooflineError(why)
    kmax = max(ks)
    krun = stage.krun(shapes, sm_count)  # the K chunks the input holds (MMA), else None
    defines = stage.defines(dtype, rows, kmax, krun)
    if stamps:
        defines["STAMPS"] = 1
    src = (data_dir("kernels") / stage.file).read_text()
    label = (f"{stage.name}-{dtype}-m{rows}-k{defines['KMAX']}"
             + (f"-r{krun}" if krun else "") + ("-stamps" if stamps else ""))  # fmt: skip
    built = compiler.compile_source(src, label, stage.entry, arch, defines)
    fn = cp.RawModule(path=built.cubin_path).get_function(stage.entry)
    grid, block, smem = stage.launch(rows, kmax, sm_count, krun)
    fn.max_dynamic_shared_size_bytes = smem

    layout = plan(rows, ns, sources, stage.params["NC"])
    table = records(layout, ns, ks, sources, [int(o.data.ptr) for o in outs])
    gemms = cp.asarray(np.frombuffer(table, dtype=np.uint8))
    maps = [tma.encode_tiled(w, (n, k), stage.box, dtype, swizzle=stage.mma)
            for w, (n, k) in zip(weights, shapes, strict=True)]  # fmt: skip
    map_bytes = b"".join(np.asarray(m).tobytes() for m in maps)
    if len(map_bytes) != 128 * len(maps):
        raise RooflineError("a tensor map is not 128 bytes")
    maps_dev = cp.asarray(np.frombuffer(map_bytes, dtype=np.uint8))
    ws_set = max(layout.ws_floats, 4)
    ws = cp.zeros(2 * ws_set, dtype=cp.float32)  # two sets: one a launch uses, one it zeroes
    sync = cp.zeros(layout.sync_words, dtype=cp.uint32)  # launches, blocks, column blocks
    stamped = cp.zeros((len(ns), grid[0], 3), dtype=cp.uint64) if stamps else None
    where = stamped if stamped is not None else np.uint64(0)  # a null pointer: no stamps
    args = (gemms, np.int32(len(ns)), maps_dev, x, ws, np.int64(ws_set), sync, where)
    held = (gemms, maps_dev, ws, sync, maps)  # alive as long as the call

    def launch() -> None:
        fn(grid, block, args, shared_mem=smem)

    launch.held = held  # type: ignore[attr-defined]
    launch.stamps = stamped  # type: ignore[attr-defined]
    res = built.resources
    local = int(fn.local_size_bytes)
    meta = {
        "registers": int(fn.num_regs),
        "smem_bytes": int(fn.shared_size_bytes) + smem,
        "spill_bytes": res.spill_bytes if res is not None else local,
        "grid": list(grid),
        "block": list(block),
        "params": {k: v for k, v in defines.items() if k not in ("ELEM_BF16", "STAMPS")},
        "workspace_bytes": int(ws.nbytes),
    }
    return launch, meta
