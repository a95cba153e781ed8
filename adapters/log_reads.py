"""The logs `stats` is given, read whole; or a --since window of one, from a mark.

A checkpoint's position names the log it read (device, inode, first line), how far, and
marks of where times begin in it (see domain.marks). While the log is still that file, a
window is read from the latest mark before it to the position: what reading the whole
log would count, in a small part of the time.
"""

from __future__ import annotations

import os
import stat
import sys

from adapters.logfile import LogSummary, open_regular, summarize, summarize_stream
from adapters.rotation import head_at, is_compressed, open_log
from domain.errors import StateError
from domain.marks import start
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.signals import SignalWatch


def read_whole(logs: list[str], by: str, since: float | None, watch: SignalWatch) -> LogSummary:
    """Every log, in the order given, as one: files split across cores, streams in one go."""
    total = LogSummary(Summary(since), 0, 0)
    for path in logs:
        try:
            if path == "-":
                total.merge(summarize_stream(sys.stdin.buffer, by, since, watch))
            elif is_compressed(path):
                with open_log(path) as handle:
                    total.merge(summarize_stream(handle, by, since, watch))
            else:
                total.merge(summarize(path, by, since, watch))
        except (OSError, EOFError) as exc:
            raise unreadable(path, exc) from None
    return total


def window(
    logs: list[str], by: str, since: float, watch: SignalWatch, position: dict[str, object] | None
) -> LogSummary:
    """The runs that started at `since` or later: with a checkpoint's `position` in the one
    log, read from its latest mark before `since`; else the logs whole."""
    if position is not None:
        try:
            found = _from_mark(logs[0], by, position, since, watch)
        except OSError as exc:
            raise unreadable(logs[0], exc) from None
        if found is not None:
            return found
    return read_whole(logs, by, since, watch)


def _from_mark(
    log: str, by: str, position: dict[str, object], since: float, watch: SignalWatch
) -> LogSummary | None:
    """The window in `log` up to the position; None when the log is no longer the file it
    names (rotated, truncated since), to be read whole. Raises OSError."""
    end = int(str(position["offset"]))
    marks = position.get("marks")
    begin = start(marks, since) if type(marks) is list else 0
    try:
        fd = open_regular(log)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (position["dev"], position["ino"]):
            return None
        if info.st_size < end or head_at(fd) != position["head"]:
            return None
        if begin and os.pread(fd, 1, begin - 1) != b"\n":  # not where a line begins: whole
            begin = 0
        return summarize(fd, by, since, watch, start=begin, end=end)
    finally:
        os.close(fd)


def refuse_unless_regular(path: str) -> None:
    """A log given by name must be a regular file: opening a FIFO would block, deaf to
    signals, until someone writes to it. `-` reads a stream."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # said when it is read
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise StateError(f"cannot read {path}: not a regular file (read a stream with --log -)")


def unreadable(path: str, exc: OSError | EOFError) -> StateError:
    if isinstance(exc, IsADirectoryError):
        return StateError(f"{path} is a folder, not an attempt log")
    if isinstance(exc, FileNotFoundError):
        return StateError(f"no attempt log at {path}")
    return StateError(f"cannot read {path}: {why(exc)}")


def why(exc: OSError | EOFError) -> str:
    if isinstance(exc, EOFError):
        return "a compressed log cut short"
    return exc.strerror or str(exc)
