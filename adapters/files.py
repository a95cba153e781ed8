"""Files that appear whole or not at all."""

from __future__ import annotations

import errno
import os


def write_atomically(path: str, data: bytes, mode: int = 0o644) -> None:
    """Write a temporary file beside `path`, fsync it, rename it over `path`, fsync the folder.

    A reader sees the old file or the new one, never a part. On failure the
    temporary file is removed and the OSError propagates.
    """
    folder = os.path.dirname(path) or "."
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    sync_folder(folder)


def sync_folder(folder: str) -> None:
    """fsync a folder, so that a rename or unlink in it survives a crash."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
