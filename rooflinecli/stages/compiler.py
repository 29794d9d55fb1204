"""Compile stages with NVRTC (from PyPI, through cuda-bindings): no GPU, no driver needed.

One compile path for everything: the runner loads the very cubin whose resource report
(registers, shared memory, spills) this module parses. Every program gets -I kernels/include (the
PTX wrappers: ptx_sm80.cuh, one header per operation in sm90/ and sm70/, and ptx_sm90.cuh that
includes them all). Cubins are cached on disk, keyed by source, options, NVRTC version and the
content of every header under it, so a stage is compiled once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from rooflinecli import files
from rooflinecli.errors import RooflineError
from rooflinecli.paths import cache_dir, data_dir
from rooflinecli.stages.gemm import Stage

_ARCH_RE = re.compile(r"^sm_(\d{2,3})a?$")


def arch_for_cc(cc: str | tuple[int, int]) -> str:
    """The NVRTC target for a compute capability: the arch-specific 'a' target on Hopper."""
    major, minor = (int(x) for x in cc.split(".")) if isinstance(cc, str) else cc
    base = f"sm_{major}{minor}"
    return base + "a" if (major, minor) in ((9, 0), (10, 0)) else base


def cc_of_arch(arch: str) -> int:
    """sm_90a -> 90."""
    m = _ARCH_RE.match(arch)
    if not m:
        raise RooflineError(f"bad --arch {arch!r}: expected e.g. sm_80, sm_90a")
    return int(m.group(1))


@dataclass(frozen=True)
class Resources:
    registers: int
    smem_static_bytes: int
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes


@dataclass(frozen=True)
class Compiled:
    stage: str
    entry: str
    arch: str
    options: tuple[str, ...]
    cubin_path: str
    log: str
    # None when NVRTC gave no ptxas report (a compute-cache hit): read the loaded function then
    resources: Resources | None
    nvrtc_version: str


def _nvrtc():  # type: ignore[no-untyped-def]
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise RooflineError(
            "NVRTC is not installed: pip install 'roofline[compile]' "
            f"(cuda-bindings + nvidia-cuda-nvrtc) ({exc})"
        ) from None
    return nvrtc


def nvrtc_version() -> str:
    nvrtc = _nvrtc()
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as exc:  # the bindings load libnvrtc lazily: a missing library shows here
        raise RooflineError(
            f"NVRTC library not found: pip install nvidia-cuda-nvrtc ({exc})"
        ) from None
    return f"{major}.{minor}"


def _check(nvrtc, result, what: str) -> None:  # type: ignore[no-untyped-def]
    err = result[0] if isinstance(result, tuple) else result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RooflineError(f"NVRTC {what} failed: {err}")


def _program_log(nvrtc, prog) -> str:  # type: ignore[no-untyped-def]
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if size <= 1:  # empty (just the NUL); never hand NVRTC a shared 1-byte bytes object
        return ""
    buf = b" " * size  # a fresh bytes object of this length: NVRTC writes into it
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.decode(errors="replace").rstrip("\x00").strip()


def _program_cubin(nvrtc, prog) -> bytes:  # type: ignore[no-untyped-def]
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    buf = b"\0" * size
    _check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, buf), "cubin retrieval")
    return buf


def parse_ptxas(log: str, entry: str) -> Resources:
    """Registers, shared memory and spills of `entry` from ptxas -v output."""
    block = log
    marker = f"Function properties for {entry}"
    if marker in log:
        block = log[log.index(marker) :]
        nxt = block.find("Function properties for", len(marker))
        block = block if nxt < 0 else block[:nxt]

    def grab(pattern: str) -> int:
        m = re.search(pattern, block)
        return int(m.group(1)) if m else 0

    m = re.search(r"Used (\d+) registers", block)
    if not m:
        raise RooflineError(f"no register count for {entry} in the ptxas report")
    return Resources(
        registers=int(m.group(1)),
        smem_static_bytes=grab(r"(\d+) bytes smem"),
        stack_frame_bytes=grab(r"(\d+) bytes stack frame"),
        spill_store_bytes=grab(r"(\d+) bytes spill stores"),
        spill_load_bytes=grab(r"(\d+) bytes spill loads"),
    )


def source_of(stage: Stage) -> str:
    if stage.file is None:
        raise RooflineError(f"stage {stage.name} is a library call: nothing to compile")
    path = data_dir("kernels") / stage.file
    try:
        return path.read_text()
    except OSError as exc:
        raise RooflineError(f"cannot read kernel source {path}: {exc.strerror}") from None


def include_dir() -> Path:
    """kernels/include: the headers stages, user stages and calibration kernels include."""
    return data_dir("kernels") / "include"


def headers_digest() -> str:
    """SHA-256 over the path and content of every file under include_dir(), its subfolders
    (sm90/, sm70/, ...) too: a header edit recompiles everything (the cache key holds it)."""
    h = hashlib.sha256()
    root = include_dir()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(f"{p.relative_to(root).as_posix()}\0{p.stat().st_size}\0".encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _base_options(arch: str) -> tuple[str, ...]:
    cc_of_arch(arch)
    return (f"-arch={arch}", "-std=c++17", "-Xptxas=-v", "-lineinfo", f"-I{include_dir()}")


def options_for(stage: Stage, arch: str, dtype: str | None = None) -> tuple[str, ...]:
    return (*_base_options(arch), *stage.defines(dtype))


def compile_stage(
    stage: Stage, arch: str, dtype: str | None = None, use_cache: bool = True
) -> Compiled:
    """Compile a stage for `arch` (e.g. sm_90a) and dtype to a cubin, or take it from the cache."""
    if stage.entry is None:
        raise RooflineError(f"stage {stage.name} is a library call: nothing to compile")
    dtype = dtype or stage.dtype
    if dtype not in stage.all_dtypes:
        raise RooflineError(f"stage {stage.name} does not build for {dtype}")
    return _build(
        source_of(stage),
        filename=str(stage.file),
        label=f"{stage.name}-{dtype}",
        name=stage.name,
        entry=stage.entry,
        arch=arch,
        opts=options_for(stage, arch, dtype),
        use_cache=use_cache,
    )


def compile_source(
    src: str,
    name: str,
    entry: str,
    arch: str,
    defines: dict[str, int | str] | None = None,
    use_cache: bool = True,
) -> Compiled:
    """Compile CUDA source that is not a stage (calibration kernels) to a cubin, cached like a
    stage: `name` labels the cache file, `entry` is the kernel whose resources are parsed."""
    defs = tuple(f"-D{k}={v}" for k, v in (defines or {}).items())
    opts = (*_base_options(arch), *defs)
    return _build(src, f"{name}.cu", name, name, entry, arch, opts, use_cache)


def cache_key(src: str, opts: tuple[str, ...], version: str, filename: str, entry: str) -> str:
    """What a cached cubin depends on: source, options, NVRTC version, name, entry, headers."""
    parts = [src, opts, version, filename, entry, headers_digest()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _build(
    src: str,
    filename: str,
    label: str,
    name: str,
    entry: str,
    arch: str,
    opts: tuple[str, ...],
    use_cache: bool,
) -> Compiled:
    """NVRTC to a cubin in the cache (keyed by source, options, NVRTC version and headers)."""
    version = nvrtc_version()
    key = cache_key(src, opts, version, filename, entry)
    cubin_path = cache_dir() / "kernels" / f"{label}-{arch}-{key[:24]}.cubin"
    meta_path = cubin_path.with_suffix(".json")

    def compiled(log: str, resources: Resources | None) -> Compiled:
        return Compiled(name, entry, arch, opts, str(cubin_path), log, resources, version)

    if use_cache and cubin_path.is_file() and meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
            res = meta["resources"]
            return compiled(meta["log"], Resources(**res) if res else None)
        except (ValueError, KeyError, TypeError):
            pass  # a damaged cache entry is rebuilt below

    nvrtc = _nvrtc()
    # NVRTC 13.0 keeps its own compute cache; a cache hit returns an empty ptxas log and we
    # would lose the resource report. Our cache above makes NVRTC's unnecessary.
    os.environ.setdefault("CUDA_CACHE_DISABLE", "1")
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), filename.encode(), 0, [], [])
    _check(nvrtc, err, "program creation")
    try:
        enc = [o.encode() for o in opts]
        result = nvrtc.nvrtcCompileProgram(prog, len(enc), enc)
        log = _program_log(nvrtc, prog)
        if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            first = next((ln for ln in log.splitlines() if "error" in ln), log[:300])
            raise RooflineError(f"{filename} does not compile for {arch}: {first.strip()}")
        cubin = _program_cubin(nvrtc, prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)

    resources = parse_ptxas(log, entry) if "registers" in log else None
    cubin_path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(cubin_path, cubin)
    meta = {"log": log, "resources": asdict(resources) if resources else None}
    files.write_atomic(meta_path, json.dumps(meta))
    return compiled(log, resources)
