"""Where the tool's files live (the data shipped in the wheel or the checkout, the cache), and
the one reader of every file the tool reads.

The reader (read_bytes, read_text, read_json, read_toml) takes only a regular file, opened
without blocking (a FIFO or a device at the path is refused in one line, never read), no larger
than the limit of its kind (LIMITS: a results document, calibration or cached table 256 MiB, a
TOML file 1 MiB, a CUDA source 16 MiB), and says every problem in one RooflineError line naming
the file (and, for a number too long to read, the field).
"""

import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from rooflinecli.errors import RooflineError

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """`kernels` or `specs`: inside the installed package, else the repository's top level."""
    for candidate in (_PKG / name, _PKG.parent / name):
        if candidate.is_dir() and any(candidate.iterdir()):
            return candidate
    raise FileNotFoundError(f"the tool's {name}/ folder is missing (broken install?)")


def executable_from_env(var: str) -> Path | None:
    """The executable a variable like ROOFLINE_NCU names, None when unset; a bad one is an error."""
    value = os.environ.get(var)
    if not value:
        return None
    p = Path(value)
    if p.is_file() and os.access(p, os.X_OK):
        return p
    raise RooflineError(f"{var}={value} is not an executable file")


def cache_dir() -> Path:
    """Per-user cache for compiled kernels and calibrations (ROOFLINE_CACHE_DIR overrides).

    A path that is, or lies under, something other than a folder (ROOFLINE_CACHE_DIR naming a
    file) is one RooflineError line naming the variable, before anything is read or written."""
    root = os.environ.get("ROOFLINE_CACHE_DIR")
    if root:
        return _folder(Path(root), f"ROOFLINE_CACHE_DIR={root}")
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return _folder(Path(xdg) / "roofline", f"the cache folder (XDG_CACHE_HOME={xdg})")
    return _folder(Path.home() / ".cache" / "roofline", "the cache folder")


def cache_file(folder: str, name: str, keep: str = "") -> Path:
    """The cache's file for one GPU (tune tables, tuned tiles, calibrations): cache_dir()/folder/
    SLUG.json, SLUG the name in lower case, each run of characters other than a-z, 0-9 and those
    in `keep` one '-', none at either end. The one place a cache path is made."""
    slug = re.sub(f"[^a-z0-9{re.escape(keep)}]+", "-", name.lower()).strip("-")
    return cache_dir() / folder / f"{slug}.json"


def _folder(path: Path, what: str) -> Path:
    """`path` when it is a folder or can be made one: the first part of it that exists is a
    folder."""
    for part in (path, *path.parents):
        try:
            if part.is_dir():
                return path
            if part.exists() or part.is_symlink():
                shown = "" if part == path else f" ({part} is not a folder)"
                raise RooflineError(f"{what}: not a folder{shown}; point it at a folder")
        except OSError as exc:
            raise RooflineError(f"{what}: {exc.strerror}") from None
    return path


MIB = 1 << 20
# The most a file of each kind may hold: past it the file is refused before it is read. A results
# document of the largest sweep the tool runs is some 20 MB; TOML files (specs, presets, stage
# files, dispatch tables) are a few KiB; a kernel source some tens of KiB.
LIMITS = {"document": 256 * MIB, "toml": 1 * MIB, "source": 16 * MIB}


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _size(n: int) -> str:
    return f"{n / MIB:,.1f} MiB" if n >= MIB else f"{n:,} bytes"


def read_bytes(path: str | Path, what: str, limit: int) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed), at most `limit` of them.

    Opened with O_NONBLOCK, so a FIFO never blocks the open, then checked by fstat: a FIFO, a
    device (/dev/zero, or a link to it), a socket or a folder is refused in one line and never
    read; so is a file larger than `limit`. `what` names the file in every message ("results
    file", "spec file", ...)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise RooflineError(f"{what} {p} not found") from None
    except OSError as exc:
        raise RooflineError(f"cannot read {what} {p}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RooflineError(f"cannot read {what} {p}: it is {_kind(st.st_mode)}")
        if st.st_size > limit:
            raise RooflineError(
                f"{what} {p} is {_size(st.st_size)}: larger than a {what} may be ({_size(limit)})"
            )
        chunks, got = [], 0
        while True:  # to the end, or one byte past the limit (a file that grows as it is read)
            chunk = os.read(fd, min(limit + 1 - got, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if got > limit:
                raise RooflineError(f"{what} {p} grew past {_size(limit)} while it was read")
        return b"".join(chunks)
    except OSError as exc:
        raise RooflineError(f"cannot read {what} {p}: {exc.strerror}") from None
    finally:
        os.close(fd)


def read_text(path: str | Path, what: str, limit: int = LIMITS["source"]) -> str:
    """read_bytes as UTF-8 text; text that is not UTF-8 is one line."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RooflineError(
            f"{what} {Path(path)} is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x})"
        ) from None


def read_toml(path: str | Path, what: str) -> dict:  # type: ignore[type-arg]
    """A TOML file the user names (a spec, a preset, a stage, a dispatch table): every problem
    is one RooflineError line naming the file (`what`: "spec file", "preset file", ...)."""
    import tomllib

    p = Path(path)
    text = read_bytes(p, what, LIMITS["toml"])
    try:
        return tomllib.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise RooflineError(f"{what} {p} is not valid TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise RooflineError(f"{what} {p} is not valid TOML: {exc}") from None
    except RecursionError:
        raise RooflineError(f"{what} {p} is not valid TOML: nested too deeply") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise RooflineError(f"{what} {p}: {_number_problem(exc)}") from None


def read_json(path: str | Path, what: str, limit: int = LIMITS["document"]) -> Any:
    """A JSON file (a results document, a calibration, a cached table): every problem is one
    RooflineError line naming the file, and for a number too long to read, the field."""
    import json

    p = Path(path)
    data = read_bytes(p, what, limit)
    if data[:2] == GZIP_MAGIC:  # a document stored compressed (a name ending .gz)
        data = _gunzip(data, p, what, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RooflineError(f"{what} {p} is not JSON: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise RooflineError(
            f"{what} {p} is not valid: key {str(exc)[:60]!r} appears twice in one object "
            "(which one holds?)"
        ) from None
    except json.JSONDecodeError as exc:
        raise RooflineError(f"{what} {p} is not JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise RooflineError(
            f"{what} {p} is nested too deeply to read (more than about "
            f"{sys.getrecursionlimit()} levels of [ and {{)"
        ) from None
    except ValueError as exc:  # json's int(): more digits than Python converts
        raise RooflineError(f"{what} {p}: {_number_problem(exc, text)}") from None


GZIP_MAGIC = b"\x1f\x8b"


def _gunzip(data: bytes, p: Path, what: str, limit: int) -> bytes:
    """The text of a gzip file, at most `limit` bytes of it: a file that inflates past the
    limit is refused before it is all inflated."""
    import zlib

    out: list[bytes] = []
    got = 0
    while data:  # one gzip member a turn
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while True:
                chunk = inflate.decompress(data, limit + 1 - got)
                out.append(chunk)
                got += len(chunk)
                if got > limit:
                    raise RooflineError(f"{what} {p} inflates past {_size(limit)}")
                if inflate.eof:
                    data = inflate.unused_data
                    break
                data = inflate.unconsumed_tail
                if not data:
                    raise RooflineError(f"{what} {p} is not valid gzip: it ends mid-stream")
        except zlib.error as exc:
            raise RooflineError(f"{what} {p} is not valid gzip: {exc}") from None
    return b"".join(out)


class _DuplicateKey(ValueError):
    """A JSON object names one key twice (json keeps the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: the object, refused when a key appears twice."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _number_problem(exc: ValueError, text: str = "") -> str:
    """Python's int-string limit (sys.get_int_max_str_digits) in words, naming the field."""
    import re

    limit = sys.get_int_max_str_digits()
    if "integer string conversion" not in str(exc):
        return f"cannot read a value: {str(exc).splitlines()[0][:200]}"
    found = re.search(r'"((?:[^"\\]|\\.){0,80})"\s*:\s*-?\d{' + str(limit + 1) + ",}", text)
    field = f" (field {found.group(1)!r})" if found else ""
    return f"a whole number has more than {limit:,} digits{field}: no real count is that long"
