"""The files `stats` reads, keeps and writes: the logs it opens (regular files, each once),
the checkpoint and the lock of those who update it, the Prometheus textfile (checked
before the log is read, written whole and renamed), what its textfile and checkpoint,
written whole and renamed over the file they name, must never replace, and which
checkpoint it may believe (this user's own regular file).

Named after the attempt log (`--prometheus ~/.runner/runs.jsonl`, where `--log` was
meant), a textfile would replace the log, its whole history with it, with nothing
said; after one of its rotated generations, a part of the history not read yet; after
the checkpoint or its lock, what keeps the counts and the exports in step.
"""

from __future__ import annotations

import errno
import os
import stat

from adapters.files import make_folders, write_atomically
from adapters.rotation import named_as_generation
from domain.errors import LockBusy, StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence

    from adapters.lock import FcntlLock
    from adapters.signals import SignalWatch

UPDATE_WAIT = 120.0
"""Seconds a stats waits for another one to finish updating the same checkpoint."""


def open_regular(path: str) -> int:
    """A descriptor on the log at `path`, opened without blocking (a FIFO in its place never
    blocks) and checked on the descriptor to be a regular file; raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file (read a stream with --log -)")
    return fd


def whole_lines_end(fd: int, start: int = 0, end: int | None = None) -> int:
    """The offset just past the last newline in [start, end) of the file open at `fd` (to
    its end by default; `start` when there is none): a line still being written waits."""
    end = os.fstat(fd).st_size if end is None else end
    while end > start:
        begin = max(start, end - (1 << 16))
        cut = os.pread(fd, end - begin, begin).rfind(b"\n")
        if cut >= 0:
            return begin + cut + 1
        end = begin
    return start


def distinct_files(paths: list[str]) -> list[str]:
    """`paths`, each file once: one named twice, or through a hard link (a glob that finds
    both), would have its runs counted twice. `-` (stdin) is kept as it is."""
    seen: set[tuple[int, int]] = set()
    kept = []
    for path in paths:
        try:
            info = None if path == "-" else os.stat(path)
        except OSError:
            info = None  # said when it is read
        if info is not None:
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
        kept.append(path)
    return kept


def resolved(path: str) -> tuple[str, str]:
    """`path`'s folder with its links resolved, and its name: the file, however it is named."""
    folder, name = os.path.split(path)
    return os.path.realpath(folder or "."), name


def checkpoint_path(log: str, by: str, given: str | None = None) -> str:
    """Where the checkpoint of `log` for the grouping `by` is kept: `given` (--checkpoint),
    else beside the log, `.<log's name>.stats-<by>.json`."""
    if given is not None:
        return given
    folder, name = os.path.split(log)
    return os.path.join(folder, f".{name}.stats-{by}.json")


def lock_path(checkpoint: str, log: str) -> str:
    """The lock that lets one stats at a time update `checkpoint` (of `log`) and export: in
    the checkpoint's folder, named after the log, one for every grouping."""
    return os.path.join(os.path.dirname(checkpoint), f".{os.path.basename(log)}.stats.lock")


def updating(checkpoint: str, log: str, watch: SignalWatch) -> FcntlLock | None:
    """The lock, held: so that two stats at once can never export a counter lower than the
    one before. None where it cannot be made (a folder this user may not write to: no
    checkpoint there either). Raises StateError when another stats holds it too long."""
    from adapters.lock import FcntlLock  # noqa: PLC0415 - not for a stream

    if not os.path.isdir(os.path.dirname(checkpoint) or "."):
        return None
    guard = FcntlLock(lock_path(checkpoint, log), watch, bare=True)
    try:
        guard.acquire(UPDATE_WAIT)
    except StateError:
        return None
    except LockBusy:
        raise StateError(
            f"another stats has been updating the checkpoint of {log} for "
            f"{UPDATE_WAIT:g}s (stopped, or held up by its disk): try again later"
        ) from None
    return guard


def check_checkpoint(path: str, logs: Sequence[str]) -> None:
    """--checkpoint FILE: a regular file or nothing yet (its folder made, private, as the home
    is), and nothing `stats` reads (see `check`). Raises StateError."""
    check(path, logs, (), "name a file of its own, such as ~/.cache/runner/stats.json")
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = None  # nothing there yet
    folder = os.path.dirname(path) or "."
    if mode is None and not os.path.isdir(folder):
        try:
            make_folders(folder)
        except OSError as exc:
            raise StateError(f"cannot keep {path}: {folder}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise StateError(f"cannot keep {path}: not a regular file (give --checkpoint a file)")


def check(path: str, logs: Sequence[str], kept: Sequence[str], hint: str) -> None:
    """Raise StateError ("cannot write `path`: why (`hint`)") when `path` is one of `logs` (by
    its name, or another name of the same file), a file `stats` keeps beside one (its
    checkpoints, its lock: `.runs.jsonl.…`), a file it would take for one of its rotated
    generations, or one of `kept` (a checkpoint or lock kept elsewhere)."""
    try:
        info: os.stat_result | None = os.stat(path)
    except OSError:
        info = None
    there, own = resolved(path)
    for log in logs:
        if log != "-":
            why = _clash(info, there, own, log)
            if why is not None:
                raise StateError(f"cannot write {path}: {why} ({hint})")
    if any(resolved(other) == (there, own) for other in kept):
        raise StateError(f"cannot write {path}: stats keeps its checkpoint or lock there ({hint})")


def _clash(info: os.stat_result | None, there: str, own: str, log: str) -> str | None:
    try:
        same = info is not None and os.path.samestat(info, os.stat(log))
    except OSError:
        same = False
    folder, name = resolved(log)
    beside = there == folder
    if same or (beside and own == name):
        return f"it is the attempt log {log}"
    if beside and own.startswith(f".{name}."):
        return f"a name stats keeps for its own files beside {log}"
    if beside and named_as_generation(name, own):
        return f"it is named as a rotated generation of {log}, which stats reads"
    return None


SIZE_MAX = 32 << 20
"""Bytes: a larger checkpoint is not one this runner wrote (its keys and open runs are
bounded)."""


class Untrusted(ValueError):
    """A checkpoint that must not be believed."""


def read_own(path: str) -> bytes | None:
    """The checkpoint's bytes, or None when there is none; Untrusted when it is not this
    user's own regular file of a sane size (a FIFO, a link to a device, another user's)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Untrusted(exc.strerror or str(exc)) from None  # a link: ELOOP
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Untrusted("not a regular file")
        if info.st_uid != os.geteuid():
            raise Untrusted(f"owned by uid {info.st_uid}, not by this user")
        if info.st_size > SIZE_MAX:
            raise Untrusted(f"{info.st_size} bytes, more than stats ever writes")
        try:
            return handle.read(info.st_size + 1)  # a buffer of its size, not of SIZE_MAX
        except OSError as exc:
            raise Untrusted(f"it cannot be read: {exc.strerror or exc}") from None


def check_textfile(path: str, logs: Sequence[str] = (), kept: Sequence[str] = ()) -> None:
    """Raise StateError unless `path` names a regular file or nothing, and nothing `stats`
    reads or keeps (`logs`, and `kept`: see `check`). The textfile is renamed over
    it: a symbolic link or a device (`/dev/stdout`, `/dev/null`) would be replaced by a
    file, the system's own nodes too when run as root. A link is refused as logrotate
    refuses to rotate one; `-` writes to stdout."""
    if logs:
        check(path, logs, kept, "name a file of its own, such as runner.prom")
    try:
        info = os.lstat(path)
    except OSError:
        info = None  # nothing there yet, or said when it is written
    if info is None:
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):
            raise StateError(f"cannot write {path}: there is no folder {folder}")
        return
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        raise StateError(
            f"cannot write {path}: a symbolic link, which would be replaced by a file "
            "(name the file itself, or write to stdout with --prometheus -)"
        )
    if stat.S_ISDIR(mode):
        raise StateError(f"cannot write {path}: a folder")
    if not stat.S_ISREG(mode):
        raise StateError(
            f"cannot write {path}: not a regular file (write to stdout with --prometheus -)"
        )


def write_textfile(path: str, data: bytes, mode: int) -> None:
    """Write the textfile whole (written again every time, so no fsync), with `mode`.
    Raises StateError when it cannot be, or when `path` is not a file to replace."""
    check_textfile(path)
    try:
        write_atomically(path, data, mode, durable=False)
    except OSError as exc:
        folder = os.path.dirname(os.path.abspath(path))
        if isinstance(exc, PermissionError) and not os.access(folder, os.W_OK):
            raise StateError(
                f"cannot write {path}: its folder {folder} is not writable (the file is "
                "replaced whole, by a new file renamed over it, so that node_exporter "
                "never reads half of it)"
            ) from None
        raise StateError(f"cannot write {path}: {exc.strerror or exc}") from None
