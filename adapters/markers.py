"""Markers: `<state>/NAME.done`, written only after success, atomically and durably."""

from __future__ import annotations

import os
import stat

from adapters.files import sync_folder, write_atomically
from adapters.jsonl import dumps, iso8601
from adapters.state import ensure_folder
from domain.errors import StateError

SUFFIX = ".done"


class FileMarkerStore:
    def __init__(self, folder: str) -> None:
        self.folder = folder

    def now(self) -> float:
        import time  # noqa: PLC0415 - only apply --every asks

        return time.time()

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
        ensure_folder(self.folder)
        body = dumps(
            {
                "name": name,
                "time": iso8601(when),
                "run_id": run_id,
                "cmd": list(cmd),
                "host": os.uname().nodename,
            }
        )
        final = self.path(name)
        try:
            write_atomically(final, (body + "\n").encode("ascii"), 0o600)
        except OSError as exc:
            raise StateError(
                f"{name} was applied but its marker {final} could not be written: "
                f"{exc.strerror or exc}"
            ) from None

    def remove(self, name: str) -> bool:
        """Delete the marker durably; False when there was none."""
        try:
            os.unlink(self.path(name))
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StateError(f"cannot remove marker {self.path(name)}: {exc.strerror}") from None
        try:
            sync_folder(self.folder)
        except OSError as exc:
            raise StateError(f"cannot sync state folder {self.folder}: {exc.strerror}") from None
        return True

    def entries(self) -> list[dict[str, object]]:
        """Every marker's record, by name; an unreadable one says why instead."""
        import json  # noqa: PLC0415 - only listing reads markers back

        try:
            names = sorted(
                entry[: -len(SUFFIX)] for entry in os.listdir(self.folder) if entry.endswith(SUFFIX)
            )
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StateError(f"cannot list state folder {self.folder}: {exc.strerror}") from None
        found: list[dict[str, object]] = []
        for name in names:
            try:
                record = json.loads(_read_small(self.path(name)))
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
            except OSError as exc:
                record = {"error": f"unreadable marker: {exc.strerror or exc}"}
            except (ValueError, RecursionError):  # a parser's position means nothing here
                record = {"error": "corrupt marker: not the record an apply writes"}
            found.append({**record, "name": name})
        return found


MARKER_MAX = 1 << 20
"""Bytes: a marker is a line of JSON; anything larger is not one of ours."""


def _read_small(path: str) -> bytes:
    """A marker's bytes; never blocks on a FIFO, follows no link, reads at most MARKER_MAX."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        data = os.read(fd, MARKER_MAX + 1)
    finally:
        os.close(fd)
    if len(data) > MARKER_MAX:
        raise ValueError(f"larger than {MARKER_MAX} bytes")
    return data
