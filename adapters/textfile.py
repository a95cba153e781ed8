"""The Prometheus textfile: written whole, and read back only while it is as it was written.

A `stats` that exports again copies the lines of every command with no new run from
the textfile it wrote last time, rather than render them anew. It trusts that file
only while it is this user's own regular file with the device, inode, size and
modification time it had when it was written (a file replaced or edited since is
not read: every series is then rendered anew).
"""

from __future__ import annotations

import os
import stat

from adapters import stats_files
from adapters.files import write_atomically
from domain.errors import StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence

IDENTITY = ("dev", "ino", "size", "mtime_ns")


def check(path: str, logs: Sequence[str] = (), kept: Sequence[str] = ()) -> None:
    """Raise StateError unless `path` names a regular file or nothing, and nothing `stats`
    reads or keeps (`logs`, and `kept`: see adapters.stats_files). The textfile is renamed over
    it: a symbolic link or a device (`/dev/stdout`, `/dev/null`) would be replaced by a
    file, the system's own nodes too when run as root. A link is refused as logrotate
    refuses to rotate one; `-` writes to stdout."""
    if logs:
        stats_files.check(path, logs, kept, "name a file of its own, such as runner.prom")
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


def write(path: str, data: bytes | list[bytes | memoryview]) -> dict[str, object]:
    """Write the textfile whole, from its bytes or its pieces (written again every time, so
    no fsync); its identity.
    Raises StateError when it cannot be, or when `path` is not a file to replace (check)."""
    check(path)
    try:
        written = write_atomically(path, data, durable=False)
    except OSError as exc:
        folder = os.path.dirname(os.path.abspath(path))
        if isinstance(exc, PermissionError) and not os.access(folder, os.W_OK):
            raise StateError(
                f"cannot write {path}: its folder {folder} is not writable (the file is "
                "replaced whole, by a new file renamed over it, so that node_exporter "
                "never reads half of it)"
            ) from None
        raise StateError(f"cannot write {path}: {exc.strerror or exc}") from None
    found = (written.st_dev, written.st_ino, written.st_size, written.st_mtime_ns)
    return {"path": os.path.abspath(path), **dict(zip(IDENTITY, found, strict=True))}


def read_same(path: str, identity: dict[str, object]) -> bytes | None:
    """The textfile at `path` if it is the one `identity` describes, else None. One that
    holds a NUL byte is not: the text never does, but blocks a crash left unwritten (it
    is written without fsync) read as zeros, the file's size and time unchanged."""
    if identity.get("path") != os.path.abspath(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        found = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return None
        if list(found) != [identity.get(name) for name in IDENTITY]:
            return None
        try:
            data = handle.read(info.st_size + 1)
        except OSError:
            return None
        return data if len(data) == info.st_size and b"\0" not in data else None
