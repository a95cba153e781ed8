"""Files that appear whole or not at all, and the private folders they go in."""

from __future__ import annotations

import errno
import os

CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
"""A temporary file is always a new file of ours: never one planted at its name, nor a link."""


IOV_MAX = 1024
"""Pieces one writev takes at most (Linux's limit, and the least POSIX allows for it)."""


def write_atomically(
    path: str, data: bytes | list[bytes | memoryview], mode: int = 0o644, *, durable: bool = True
) -> os.stat_result:
    """Write a temporary file beside `path`, fsync it, rename it over `path`, fsync the folder.
    `data` is the file's bytes, or its pieces in order (written as they are, not joined
    first: a large file made mostly of slices of another costs no copy of it).

    A reader sees the old file or the new one, never a part. Without `durable` the
    two fsyncs are left out: after a crash the file may be the old one, or empty
    (for files that are written again anyway, such as a checkpoint). The temporary file
    has an unpredictable name and is created new (mode 0600 until it is whole,
    then `mode`), so a link planted in a shared folder is never followed. On
    failure the temporary file is removed and the OSError propagates. Returns the new
    file's status, as written (its device, inode, size and modification time).
    """
    folder = os.path.dirname(path) or "."
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.urandom(8).hex()}.tmp")
    fd = os.open(temporary, CREATE_NEW, 0o600)
    try:
        try:
            if isinstance(data, bytes):
                if os.write(fd, data) != len(data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            else:
                _write_all(fd, data)
            if mode != 0o600:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
            written = os.fstat(fd)
        finally:
            os.close(fd)
        os.rename(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    if durable:
        sync_folder(folder)
    return written


def _write_all(fd: int, pieces: list[bytes | memoryview]) -> None:
    """Write `pieces` in order; a write cut short (a full disk) raises ENOSPC."""
    for first in range(0, len(pieces), IOV_MAX):
        some = pieces[first : first + IOV_MAX]
        if os.writev(fd, some) != sum(map(len, some)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def make_folders(path: str) -> None:
    """Create the folder `path` and every missing one above it, each mode 0700 (os.makedirs
    leaves those above at the default mode, 0755: anyone could list the names in them).
    An existing folder is left as it is. Raises OSError: FileExistsError when `path` is
    something else, NotADirectoryError (naming it) when a file stands above it."""
    missing = []
    folder = os.path.abspath(path)
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        missing.append(folder)
        folder = os.path.dirname(folder)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if os.path.isdir(folder):
                continue
            if folder == missing[0]:
                raise
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), folder) from None


def sync_folder(folder: str) -> None:
    """fsync a folder, so that a rename or unlink in it survives a crash."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
