"""Reading runs.jsonl for `stats`: streamed in batches, split across processes when large."""

from __future__ import annotations

import errno
import gc
import os
import stat
from itertools import pairwise

from adapters import batches
from adapters.lines import LineReader
from adapters.signals import ending
from domain.errors import Interrupted
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from typing import BinaryIO

    from adapters.signals import SignalWatch


SETTLE_LINES = 100_000
"""Lines read after which what waits to be counted is counted: its memory stays bounded
whatever the lines' length (about 16 batches of the runner's usual lines)."""


KEYS_HELD = 1000
"""Commands or names a read keeps apart at most (the exported ones, then the busiest); the
others are counted together under OTHER as they come. Each costs memory (an aggregate,
about 2 KB): a command line that differs at every run (a date in an argument) made one
per run, and 200,000 such lines took 3.4 GB."""

PARALLEL_FROM = 8 << 20
"""Logs from this size (bytes) up are read by one process per core it may use."""

PIECES_PER_WORKER = 4
"""A large log is cut into this many pieces per process, so a slower core takes fewer."""


class LogSummary:
    """A Summary of a log, with how many lines were read and how many were not attempts."""

    def __init__(self, summary: Summary, lines: int, malformed: int) -> None:
        self.summary = summary
        self.lines = lines
        self.malformed = malformed

    def merge(self, later: LogSummary) -> None:
        """Fold in a summary of what follows in the log (or in a later log)."""
        self.summary.merge(later.summary)
        self.lines += later.lines
        self.malformed += later.malformed


def stop_if_ended(watch: SignalWatch) -> None:
    """Raise Interrupted when a signal that ends the run has come."""
    signum = ending(watch.pending())
    if signum is not None:
        raise Interrupted(signum)


def _checker(watch: SignalWatch) -> Callable[[], None]:
    return lambda: stop_if_ended(watch)


def open_regular(path: str) -> int:
    """A descriptor on the log at `path`, opened without blocking (a FIFO in its place never
    blocks) and checked on the descriptor to be a regular file; raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    return fd


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


def whole_lines_end(fd: int) -> int:
    """The offset just past the last newline of the file open at `fd`: a line still being
    written waits."""
    end = os.fstat(fd).st_size
    while end > 0:
        start = max(0, end - (1 << 16))
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


class At:
    """A file read through a descriptor by position (pread), from `position` on: processes
    that share the descriptor each read their own range, and a rename or truncation of
    its path never points a reader at another file."""

    def __init__(self, fd: int, position: int) -> None:
        self.fd = fd
        self.position = position

    def read(self, size: int) -> bytes:
        data = os.pread(self.fd, size, self.position)
        self.position += len(data)
        return data

    def back(self, size: int) -> None:
        """Read the last `size` bytes again, with the next read."""
        self.position -= size


def summarize(
    log: str | int,
    by: str,
    since: float | None,
    watch: SignalWatch,
    workers: int | None = None,
    start: int = 0,
    end: int | None = None,
    keep: Collection[str] = (),
) -> LogSummary:
    """Summarize [start, end) of the log (a path, or a descriptor open on it) to its end by
    default, grouping runs by "cmd" or "name"; raises OSError. A large range is read by one
    process per core it may use (its affinity, and its cgroup's CPU quota). The keys of
    `keep` stay apart however many others join OTHER (see KEYS_HELD).

    A signal that ends the run raises Interrupted between two batches.
    """
    if isinstance(log, str):
        fd = open_regular(log)
        try:
            return summarize(fd, by, since, watch, workers, start, end, keep)
        finally:
            os.close(fd)
    fd = log
    end = os.fstat(fd).st_size if end is None else end
    interrupted = _checker(watch)
    if end - start < PARALLEL_FROM:
        return summarize_range(fd, start, end, by, since, interrupted, keep)
    if workers is None:
        from adapters.cores import usable_cores  # only for a large read

        workers = usable_cores()
    workers = min(workers, 32)
    if workers <= 1:
        return summarize_range(fd, start, end, by, since, interrupted, keep)
    from adapters.workers import fork_map

    spans = list(pairwise(batches.pieces(fd, start, end, workers * PIECES_PER_WORKER)))

    def piece(number: int, check: Callable[[], None]) -> LogSummary:
        start, end = spans[number]
        return summarize_range(fd, start, end, by, since, check, keep)

    parts = fork_map(piece, len(spans), workers, watch, keep=(fd,))
    total = parts[0]
    for part in parts[1:]:
        total.merge(part)
        total.summary.fold(list(keep), KEYS_HELD)
    return total


def summarize_range(
    fd: int,
    start: int,
    end: int,
    by: str,
    since: float | None,
    check: Callable[[], None] = lambda: None,
    keep: Collection[str] = (),
) -> LogSummary:
    """Summarize the lines in [start, end) of the log open at `fd` (both at line starts, or
    the end).

    `check` is called between two batches (it may raise to stop the work).
    """
    return _read(At(fd, start), end - start, by, since, check, keep)


def summarize_stream(
    handle: BinaryIO,
    by: str,
    since: float | None,
    watch: SignalWatch,
    skip: int = 0,
    keep: Collection[str] = (),
) -> LogSummary:
    """Summarize a log read as a stream (stdin, a gzip-compressed rotated log) after `skip`
    bytes, one batch at a time in one process."""
    while skip > 0:
        block = handle.read(min(skip, batches.BATCH_BYTES))
        if not block:
            break
        skip -= len(block)
    return _read(handle, None, by, since, _checker(watch), keep)


def _read(
    handle: BinaryIO | At,
    limit: int | None,
    by: str,
    since: float | None,
    check: Callable[[], None],
    keep: Collection[str],
) -> LogSummary:
    reader = LineReader(Summary(since), by)
    kept = list(keep)
    collecting = gc.isenabled()
    gc.disable()  # reading makes millions of tuples and no cycle: the collector only costs
    try:
        waiting = 0
        for chunk, count, skipped in batches.cut(handle, limit):
            check()
            if waiting >= SETTLE_LINES:
                reader.summary.settle()
                waiting = 0
            waiting += count
            reader.lines += skipped
            reader.malformed += skipped
            if count:
                reader.feed(chunk, count)
                reader.summary.fold(kept, KEYS_HELD)
    finally:
        if collecting:
            gc.enable()
    return LogSummary(reader.summary, reader.lines, reader.malformed)
