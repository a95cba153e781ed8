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

from adapters.files import write_atomically
from domain.errors import StateError

IDENTITY = ("dev", "ino", "size", "mtime_ns")


def write(path: str, data: bytes) -> dict[str, object]:
    """Write the textfile whole (written again every time, so no fsync); its identity."""
    try:
        written = write_atomically(path, data, durable=False)
    except OSError as exc:
        raise StateError(f"cannot write {path}: {exc.strerror or exc}") from None
    found = (written.st_dev, written.st_ino, written.st_size, written.st_mtime_ns)
    return {"path": os.path.abspath(path), **dict(zip(IDENTITY, found, strict=True))}


def read_same(path: str, identity: dict[str, object]) -> bytes | None:
    """The textfile at `path` if it is the one `identity` describes, else None."""
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
        return data if len(data) == info.st_size else None
