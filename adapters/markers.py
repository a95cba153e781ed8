"""Markers: `<state>/NAME.done`, written only after success, atomically and durably."""

from __future__ import annotations

import errno
import os

from adapters.jsonl import dumps, iso8601
from adapters.state import ensure_folder
from domain.errors import StateError

SUFFIX = ".done"


class FileMarkerStore:
    def __init__(self, folder: str) -> None:
        self.folder = folder

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name + SUFFIX)

    def exists(self, name: str) -> bool:
        try:
            os.lstat(self.path(name))
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StateError(f"cannot check marker {self.path(name)}: {exc.strerror}") from None
        return True

    def write(self, name: str, *, when: float, run_id: str, cmd: list[str]) -> None:
        """Write a temporary file, fsync it, rename it into place, fsync the folder."""
        ensure_folder(self.folder)
        final = self.path(name)
        temporary = os.path.join(self.folder, f".{name}{SUFFIX}.{os.getpid()}.tmp")
        body = dumps(
            {
                "name": name,
                "time": iso8601(when),
                "run_id": run_id,
                "cmd": list(cmd),
                "host": os.uname().nodename,
            }
        )
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                data = (body + "\n").encode("ascii")
                if os.write(fd, data) != len(data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(temporary, final)
            folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        except OSError as exc:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise StateError(
                f"{name} was applied but its marker {final} could not be written: {exc.strerror}"
            ) from None
