"""--output-on-failure, as moreutils' chronic: the command's output is shown only if the run fails.

Each attempt writes its stdout and stderr into private files (created unlinked, mode
0600, on disk in TMPDIR, so memory does not grow with output): one file for both when
the runner's stdout and stderr are one destination (cron's mail, a terminal, a log
opened with `2>&1`), so that they stay in the order written, else a file each. If the
run fails, every attempt's output is written out in order, stdout to the runner's
stdout and stderr to its stderr, each attempt announced on stderr; a success writes
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
RECENT = 1 << 20
"""Bytes of an attempt's output kept in the order read, for a ping's body, when its
stdout and stderr go to two files (the most any Ping-Body-Limit is given of it)."""


class Capture:
    """The output of each attempt of one run, in files of its own."""

    def __init__(self, warn: Callable[[str], None], *, ordered: bool = False) -> None:
        self.warn = warn
        self.ordered = ordered
        """Whether the end of the output is wanted in the order written (a ping's body): two
        files are then fed by the runner, which keeps what it moves in `recent`."""
        self.kept: list[tuple[IO[bytes], IO[bytes] | None]] = []
        """Each attempt's stdout file and stderr file (None: in the stdout file too)."""
        self.recent: list[bytearray] = []
        self.moved: list[int] = []
        """The bytes of each attempt's output `seen` in all, and the newest of them."""
        self.codes: list[int] = []
        self.full: list[bool] = []
        """Whether the folder of each attempt's files had no room left when it ended: the
        command's writes may have failed, its output cut short."""
        self.notes: list[list[str]] = [[]]
        """The runner's own lines about each attempt (`hold`), said after its output: the
        first list for what came before any attempt."""

    def open(self, together: bool = False) -> tuple[int, int] | None:
        """Files for the next attempt's stdout and stderr: their descriptors (one file for
        both when `together`); None (said once on stderr) when none can be made: that
        attempt's output then passes through."""
        try:
            out = tempfile.TemporaryFile(prefix="runner-out-")  # noqa: SIM115 - kept for the run
        except OSError as exc:
            self._cannot(exc)
            return None
        err = None
        if not together:
            try:
                err = tempfile.TemporaryFile(prefix="runner-err-")  # noqa: SIM115 - for the run
            except OSError as exc:
                out.close()
                self._cannot(exc)
                return None
        self.kept.append((out, err))
        self.notes.append([])
        self.recent.append(bytearray())
        self.moved.append(0)
        return out.fileno(), (out if err is None else err).fileno()

    def seen(self, data: bytes) -> None:
        """The runner moved `data` from the current attempt's stdout or stderr to its file:
        keep it, in that order, for `tail` (called by one stream at a time)."""
        recent = self.recent[-1]
        recent += data
        self.moved[-1] += len(data)
        if len(recent) > 2 * RECENT:
            del recent[: len(recent) - RECENT]

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
            if err is not None:
                _copy(err, 2)
            for line in notes:
                say(line)

    def tail(self, limit: int = TAIL) -> bytes:
        """The end of the last attempt's output, stdout and stderr in the order written,
        `limit` bytes at most: when that cuts any, a first line says how many bytes were
        cut. Of two files, what was `seen` (nothing unless `ordered`)."""
        if not self.kept:
            return b""
        out, err = self.kept[-1]
        if err is None:
            total = out.seek(0, os.SEEK_END)
            newest = _end(out, limit)
        else:
            total, newest = self.moved[-1], bytes(self.recent[-1][-limit:])
        if total <= limit:
            return newest
        keep = limit
        for _ in range(3):  # the notice's own length, which its numbers change
            notice = f"[runner: the first {total - keep} bytes of {total} were cut]\n".encode()
            keep = limit - len(notice)
        if keep < limit // 2:  # a limit too small for a notice: the output alone
            notice, keep = b"", limit
        return notice + newest[len(newest) - keep :]

    def close(self) -> None:
        for out, err in self.kept:
            out.close()
            if err is not None:
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
