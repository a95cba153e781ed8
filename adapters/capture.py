"""--output-on-failure, as moreutils' chronic: the command's output is shown only if the run fails.

Each attempt writes its stdout and stderr into two private files (created unlinked,
mode 0600, on disk in TMPDIR, so memory does not grow with output). If the run
fails, every attempt's output is written out in order, stdout to the runner's stdout
and stderr to its stderr, each attempt announced on stderr; a success writes
nothing. The bytes are copied as they are. An attempt that ended with no room left in
TMPDIR is announced as maybe cut short (the command's own writes failed).
"""

from __future__ import annotations

import os
import tempfile

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO

TAIL = 10 * 1024
"""Bytes of the last attempt's output kept for a failure ping's body."""


class Capture:
    """The output of each attempt of one run, in files of its own."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self.kept: list[tuple[IO[bytes], IO[bytes]]] = []
        self.codes: list[int] = []
        self.full: list[bool] = []
        """Whether the folder of each attempt's files had no room left when it ended: the
        command's writes may have failed, its output cut short."""
        self.notes: list[list[str]] = [[]]
        """The runner's own lines about each attempt (`hold`), said after its output: the
        first list for what came before any attempt."""

    def open(self) -> tuple[int, int] | None:
        """Files for the next attempt's stdout and stderr: their descriptors; None (said
        once on stderr) when none can be made: that attempt's output then passes through."""
        try:
            out = tempfile.TemporaryFile(prefix="runner-out-")  # noqa: SIM115 - kept for the run
        except OSError as exc:
            self._cannot(exc)
            return None
        try:
            err = tempfile.TemporaryFile(prefix="runner-err-")  # noqa: SIM115 - kept for the run
        except OSError as exc:
            out.close()
            self._cannot(exc)
            return None
        self.kept.append((out, err))
        self.notes.append([])
        return out.fileno(), err.fileno()

    def hold(self, line: str) -> None:
        """Keep a line of the runner's own about the current attempt, to say with its output
        if the run fails (a run that succeeds says nothing at all)."""
        self.notes[-1].append(line)

    def _cannot(self, exc: OSError) -> None:
        where = tempfile.gettempdir()
        self.warn(
            f"--output-on-failure: cannot keep output in {where} ({exc.strerror or exc}); "
            "this attempt's output is passed through"
        )

    def ended(self, rc: int) -> None:
        """The attempt whose files were opened last ended with `rc`."""
        if len(self.codes) < len(self.kept):
            self.codes.append(rc)
            self.full.append(_no_room(self.kept[-1][0]))

    def replay(self, say: Callable[[str], None]) -> None:
        """Write every attempt's output out, in order, each announced on stderr and followed
        by the runner's lines about it (`say` writes one). A stdout or stderr that cannot be
        written is left."""
        where = tempfile.gettempdir()
        for line in self.notes[0]:
            say(line)
        ends = zip(self.kept, self.codes, self.full, self.notes[1:], strict=False)
        for number, ((out, err), rc, full, notes) in enumerate(ends, 1):
            cut = f"; {where} was full: it may be cut short" if full else ""
            _write(2, f"runner: output of attempt {number} (rc={rc}{cut}):\n".encode())
            _copy(out, 1)
            _copy(err, 2)
            for line in notes:
                say(line)

    def tail(self, limit: int = TAIL) -> bytes:
        """The end of the last attempt's stdout, then of its stderr, `limit` bytes at most in
        all: when that cuts any, a first line says how many bytes were cut, and the end of
        stderr (where a job says why it failed) is kept before stdout's."""
        if not self.kept:
            return b""
        out, err = self.kept[-1]
        total = sum(kept.seek(0, os.SEEK_END) for kept in (out, err))
        if total <= limit:
            return _end(out, limit) + _end(err, limit)
        keep = limit
        for _ in range(3):  # the notice's own length, which its numbers change
            notice = f"[runner: the first {total - keep} bytes of {total} were cut]\n".encode()
            keep = limit - len(notice)
        if keep < limit // 2:  # a limit too small for a notice: the output alone
            notice, keep = b"", limit
        joined = _end(out, keep) + _end(err, keep)
        return notice + joined[len(joined) - keep :]

    def close(self) -> None:
        for out, err in self.kept:
            out.close()
            err.close()
        self.kept = []


def _no_room(kept: IO[bytes]) -> bool:
    """Whether the filesystem of `kept` has no block left that this user may write."""
    try:
        found = os.fstatvfs(kept.fileno())
    except OSError:
        return False
    return (found.f_bfree if os.geteuid() == 0 else found.f_bavail) == 0


def _copy(source: IO[bytes], fd: int) -> None:
    source.seek(0)
    while block := source.read(1 << 16):
        if not _write(fd, block):
            return


def _write(fd: int, data: bytes) -> bool:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        return False
    return True


def _end(source: IO[bytes], limit: int) -> bytes:
    size = source.seek(0, os.SEEK_END)
    source.seek(max(0, size - limit))
    return source.read(limit)
