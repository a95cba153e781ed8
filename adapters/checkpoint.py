"""stats' checkpoint: the whole history of a log counted so far, and where to read on.

Kept beside the log as `.<log>.stats-<by>.json` (JSON: never code to run). It names
the log by device, inode and a hash of its first line, and the offset just past
the last whole line read. The next `stats` reads only what follows. When the log
was rotated (moved, truncated, replaced), the old file is looked for beside it
(`runs.jsonl.1`, `runs.jsonl.1.gz`, `runs.jsonl-DATE…`) by its first line, so that
its last lines are counted once; then the new log is read from its start.
"""

from __future__ import annotations

import json
import os
import zlib

from adapters.files import write_atomically
from adapters.logfile import LogSummary, summarize, summarize_stream, whole_lines_end
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    from adapters.signals import SignalWatch

VERSION = 5
HEAD_MAX = 1 << 16
"""Bytes of the first line that identify a log."""
OPEN_MAX_AGE = 7 * 86400.0
"""Seconds: a run still open this long after its last attempt lost its runner; forgotten."""
GZIP_MAGIC = b"\x1f\x8b"


def open_log(path: str) -> BinaryIO:
    """A log for reading, decompressed when it is gzip (by its first bytes, not its name)."""
    handle = open(path, "rb")  # noqa: SIM115 - handed to the caller
    if handle.read(2) == GZIP_MAGIC:
        handle.close()
        import gzip  # noqa: PLC0415 - only for a compressed log

        return gzip.open(path, "rb")  # type: ignore[return-value]
    handle.seek(0)
    return handle


def is_gzip(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def head_of(path: str) -> str | None:
    """The log's first whole line as its length and CRC-32, or None when it has none yet.

    With the inode, enough to know a log again (zlib loads far faster than hashlib).
    """
    try:
        with open_log(path) as handle:
            first = handle.readline(HEAD_MAX)
    except (OSError, EOFError):
        return None
    if not first.endswith(b"\n"):
        return None
    return f"{len(first)}:{zlib.crc32(first):08x}"


class Checkpoint:
    """The history of one log file (not a stream, not gzip), for one grouping (`by`)."""

    def __init__(self, log: str, by: str) -> None:
        self.log = log
        self.by = by
        folder, name = os.path.split(log)
        self.path = os.path.join(folder, f".{name}.stats-{by}.json")
        self.series: list[str] = []
        self._position: dict[str, object] | None = None

    def update(self, watch: SignalWatch, now: float, warn: Callable[[str], None]) -> LogSummary:
        """The history so far: the checkpoint's, and every whole line written since.

        Raises FileNotFoundError when there is neither a log nor a checkpoint.
        """
        total = self._load()
        try:
            info = os.stat(self.log)
        except FileNotFoundError:
            if self._position is None:
                raise
            return total
        end = whole_lines_end(self.log)
        head = head_of(self.log)
        start = self._resume(info, head, end, total, watch, warn)
        if end > start:
            total.merge(summarize(self.log, self.by, None, watch, start=start, end=end))
        total.summary.drop_open_before(now - OPEN_MAX_AGE)
        self._position = {"dev": info.st_dev, "ino": info.st_ino, "head": head, "offset": end}
        return total

    def save(self, total: LogSummary) -> None:
        """Write the checkpoint atomically; raises OSError when it cannot be.

        No fsync: a checkpoint lost in a crash, or an older one, only means that
        the next `stats` reads more of the log (its offset and figures go together).
        """
        document = {
            "version": VERSION,
            "by": self.by,
            "position": self._position,
            "lines": total.lines,
            "malformed": total.malformed,
            "series": self.series,
            "summary": total.summary.state(),
        }
        data = json.dumps(document, separators=(",", ":")).encode()
        write_atomically(self.path, data, 0o600, durable=False)

    def _resume(
        self,
        info: os.stat_result,
        head: str | None,
        end: int,
        total: LogSummary,
        watch: SignalWatch,
        warn: Callable[[str], None],
    ) -> int:
        """Where to read the log from; first, the rest of its rotated-away part, if any."""
        saved = self._position
        if saved is None:
            return 0
        offset = int(str(saved["offset"]))
        same = (info.st_dev, info.st_ino) == (saved["dev"], saved["ino"])
        if same and head == saved["head"] and end >= offset:
            return offset
        old = self._rotated(saved["head"])  # type: ignore[arg-type]
        if old is not None:
            with open_log(old) as handle:
                total.merge(summarize_stream(handle, self.by, None, watch, skip=offset))
        elif saved["head"] is not None:
            warn(
                f"{self.log} was rotated and its old part was not found beside it; "
                "lines written to it since the last stats are not counted"
            )
        return 0

    def _rotated(self, head: str | None) -> str | None:
        """The rotated file whose first line is the one the checkpoint knew."""
        if head is None:
            return None
        import glob  # noqa: PLC0415 - only after a rotation

        dated = sorted(glob.glob(glob.escape(self.log) + "-*"), key=_mtime, reverse=True)
        for candidate in [self.log + ".1", self.log + ".1.gz", *dated]:
            if os.path.isfile(candidate) and head_of(candidate) == head:
                return candidate
        return None

    def _load(self) -> LogSummary:
        """The saved history, or an empty one (a missing or unreadable checkpoint starts over)."""
        try:
            with open(self.path, "rb") as handle:
                document = json.load(handle)
            if document["version"] != VERSION or document["by"] != self.by:
                raise ValueError("another version or grouping")
            summary = Summary.from_state(document["summary"])
            total = LogSummary(summary, int(document["lines"]), int(document["malformed"]))
            self.series = [str(label) for label in document["series"]]
            self._position = document["position"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            self.series, self._position = [], None
            return LogSummary(Summary(), 0, 0)
        return total


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
