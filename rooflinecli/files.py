"""Writing the tool's files: results documents, plots, caches. One writer for all of them
(the one reader is rooflinecli.paths.read_bytes and its kin).

A file is written to a temporary file beside its target and renamed over it, so a reader never
sees it half-written; a symlink stays a link (its target is replaced); an existing file keeps its
mode (and owner where permitted); `-` means standard output; a device node, FIFO, socket or
folder at the path is refused in one line and never touched; an existing file is replaced only
when asked (`--force`). The temporary file is named `.NAME.roofline-tmp-PID`: it is removed when
the write fails, on SIGINT and on SIGTERM, and one a dead process left (SIGKILL, a power cut) is
removed by the next write beside it.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from rooflinecli.errors import RooflineError

STDOUT = "-"  # -o -: the document goes to standard output

# While a command writes a document to standard output (-o -), everything else it prints goes to
# standard error; this is the standard output the document is written to.
_claimed_stdout: TextIO | None = None


def stdout_closed() -> bool:
    """Standard output was closed when the program started (rooflinecli.cli.guard_streams says
    so on the stream it puts there), or there is none."""
    if sys.stdout is None:
        return True
    raw = getattr(getattr(sys.stdout, "buffer", None), "raw", None)
    return bool(getattr(raw, "closed_at_start", False))


def claim_stdout() -> Callable[[], None]:
    """Keep standard output for the document (-o -): until the returned function is called,
    sys.stdout is standard error, so tables and messages do not mix into the document."""
    global _claimed_stdout
    if _claimed_stdout is not None:
        raise RooflineError("only one output can be - (standard output)")
    if stdout_closed():
        raise RooflineError("cannot write the document to standard output (-o -): it is closed")
    _claimed_stdout, sys.stdout = sys.stdout, sys.stderr

    def release() -> None:
        global _claimed_stdout
        if _claimed_stdout is not None:
            sys.stdout, _claimed_stdout = _claimed_stdout, None

    return release


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _resolved(path: str | Path) -> tuple[Path, os.stat_result | None]:
    """The file a write to `path` replaces (symlinks followed: the link itself stays) and its
    status, None when there is none yet."""
    p = Path(path)
    target = Path(os.path.realpath(p))
    try:
        return target, os.stat(target)
    except FileNotFoundError:
        return target, None
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror}") from None


def check_output(
    path: str | Path, *, force: bool = False, document: bool = True, make_folder: bool = False
) -> None:
    """Refuse, before any work, what write_output would refuse: anything but a regular file at
    the path (a device, FIFO, socket or folder is never touched), an existing file without
    --force (any file: a document, a plot, a page, a gate's report), a file or folder we may
    not write. `document`: a stream format, where `-o -` is offered instead."""
    if str(path) == STDOUT:
        return
    p = Path(path)
    target, st = _resolved(p)
    if st is not None:
        kind = next((what for test, what in _KINDS if test(st.st_mode)), None)
        if kind is not None or not stat.S_ISREG(st.st_mode):
            stream = document and not stat.S_ISDIR(st.st_mode)
            hint = f" (-o {STDOUT} writes to standard output)" if stream else ""
            raise RooflineError(f"cannot write {p}: it is {kind or 'not a regular file'}{hint}")
        if not force:
            raise RooflineError(f"{p} exists: pass --force to replace it")
        if not os.access(target, os.W_OK):
            raise RooflineError(f"cannot write {p}: permission denied")
    if make_folder:
        return
    folder = target.parent
    shown = p.parent if os.path.abspath(p) == str(target) else folder
    if not folder.is_dir():
        raise RooflineError(f"cannot write {p}: folder {shown} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RooflineError(f"cannot write {p}: folder {shown} is not writable")


def stored(path: Path, data: str | bytes) -> str | bytes:
    """The bytes a file holds: gzip-compressed where its name ends in .gz (a results document
    stored in a seventh of its size; every reader of documents inflates it), with no time
    stamp, so that one document always compresses to the same bytes."""
    if not path.name.endswith(".gz"):
        return data
    import gzip

    raw = data.encode("utf-8") if isinstance(data, str) else data
    return gzip.compress(raw, compresslevel=9, mtime=0)


def write_output(
    path: str | Path,
    data: str | bytes,
    *,
    force: bool = False,
    document: bool = True,
    make_folder: bool = False,
) -> None:
    """The one writer of every file a command writes (-o, baseline save, plot, gate reports).

    `-` writes to standard output. Otherwise the data goes to a temporary file beside the
    target, then is renamed onto it: never a half-written file. A symlink is written through
    (the link stays, its target is replaced); an existing file keeps its mode and, where
    permitted, its owner. Refused in one line (RooflineError), with nothing touched: a device,
    FIFO, socket or folder at the path, and an existing file without `force`.
    """
    if str(path) == STDOUT:
        out = _claimed_stdout or sys.stdout
        if isinstance(data, bytes):
            out.flush()
            out.buffer.write(data)
        else:
            out.write(data)
        out.flush()
        return
    check_output(path, force=force, document=document, make_folder=make_folder)
    p = Path(path)
    data = stored(p, data)
    target, st = _resolved(p)
    if make_folder:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RooflineError(f"cannot create {target.parent}: {exc.strerror}") from None
    _replace(p, target, st, data, no_clobber=not force, sync=True)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Replace the file at `path` (through a symlink, keeping its mode) with `data`, atomically:
    for caches and tools; commands write through write_output."""
    p = Path(path)
    data = stored(p, data)
    target, st = _resolved(p)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise RooflineError(f"cannot write {p}: not a regular file")
    if not target.parent.is_dir():
        raise RooflineError(f"cannot write {p}: folder {target.parent} does not exist")
    _replace(p, target, st, data, no_clobber=False, sync=False)


TMP_MARK = ".roofline-tmp-"  # .NAME.roofline-tmp-PID[-N]: the writer's temporary files
_live: set[str] = set()  # the temporary files this process is writing now


def _temp_name(target: Path, n: int) -> Path:
    return target.parent / f".{target.name}{TMP_MARK}{os.getpid()}{f'-{n}' if n else ''}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process, alive
        return True
    return True


def remove_stale(target: Path) -> list[Path]:
    """Remove the temporary files of `target` that a process no longer alive left beside it
    (killed with SIGKILL mid-write, a power cut): the ones this process is not writing, of a
    PID that is not running. Returns what it removed."""
    import re

    prefix = f".{target.name}{TMP_MARK}"
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix)]
    except OSError:
        return []
    removed = []
    for name in names:
        got = re.fullmatch(r"(\d+)(?:-\d+)?", name[len(prefix) :])
        path = target.parent / name
        if got is None or str(path) in _live:
            continue
        pid = int(got.group(1))
        if pid != os.getpid() and _alive(pid):
            continue
        try:
            path.unlink()
            removed.append(path)
        except OSError:
            continue
    return removed


def _create_temp(p: Path, target: Path) -> tuple[int, Path]:
    """A new temporary file beside `target`, mode 0600, registered in _live before it exists
    (a signal between the two still finds it)."""
    for n in range(100):
        tmp = _temp_name(target, n)
        _live.add(str(tmp))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            _live.discard(str(tmp))
            continue
        except OSError as exc:
            _live.discard(str(tmp))
            raise RooflineError(f"cannot write {p}: {exc.strerror}") from None
    raise RooflineError(f"cannot write {p}: 100 temporary files of this process are in the way")


# SIGTERM and SIGHUP end a process without unwinding it: while a temporary file is written,
# their default action first removes it (then the signal ends the process as it would have).
# SIGINT raises KeyboardInterrupt, which unwinds through _replace's `finally`.
_SIGNALS = ("SIGTERM", "SIGHUP")


def _on_signal(signum: int, frame: Any) -> None:
    import signal

    for tmp in list(_live):
        try:
            os.unlink(tmp)
        except OSError:
            pass
    _live.clear()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _guard_signals() -> Callable[[], None]:
    """Install _on_signal where the default action stands (the main thread only: Python lets no
    other set a handler); returns the function that puts the defaults back."""
    import signal

    installed = []
    for name in _SIGNALS:
        num = getattr(signal, name, None)
        if num is None:
            continue
        try:
            if signal.getsignal(num) == signal.SIG_DFL:
                signal.signal(num, _on_signal)
                installed.append(num)
        except ValueError:  # not the main thread
            break

    def restore() -> None:
        for num in installed:
            if signal.getsignal(num) is _on_signal:
                signal.signal(num, signal.SIG_DFL)

    return restore


def _replace(
    p: Path,
    target: Path,
    st: os.stat_result | None,
    data: str | bytes,
    no_clobber: bool,
    sync: bool,
) -> None:
    """Temp file beside `target` (.NAME.roofline-tmp-PID), same mode (and owner where
    permitted) as the file it replaces, flushed to disk (`sync`), then renamed onto it (with
    `no_clobber`, linked: never over a file that appeared meanwhile). Stale temporary files of
    dead processes beside the target go first; this one goes on failure, SIGINT and SIGTERM."""
    remove_stale(target)
    restore = _guard_signals()
    fd, tmp = _create_temp(p, target)
    try:
        with os.fdopen(fd, "wb") as fh:
            if st is None:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask  # the temp file is 0600; a new file is an ordinary file
            else:
                mode = stat.S_IMODE(st.st_mode)
                _chown(fd, st)
            os.fchmod(fd, mode)
            fh.write(data.encode() if isinstance(data, str) else data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        if no_clobber:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise RooflineError(f"{p} exists: pass --force to replace it") from None
            except OSError:  # no hard links on this file system: the check above stands
                os.replace(tmp, target)
        else:
            os.replace(tmp, target)
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
        _live.discard(str(tmp))
        restore()


def _chown(fd: int, st: os.stat_result) -> None:
    """Give the new file the old one's owner and group, or just its group, where permitted."""
    for uid in (st.st_uid, -1):
        try:
            os.fchown(fd, uid, st.st_gid)
            return
        except OSError:
            continue
