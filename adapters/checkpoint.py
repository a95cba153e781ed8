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
import stat
import zlib

from adapters.files import write_atomically
from adapters.logfile import LogSummary, summarize, summarize_stream, whole_lines_end
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, BinaryIO

    from adapters.signals import SignalWatch

VERSION = 5
SIZE_MAX = 64 << 20
"""Bytes: a larger checkpoint is not one this runner wrote (its keys are bounded)."""
KEYS_MAX = 200
"""Commands or names a checkpoint keeps apart (as many as the export's labels); the others
are kept together as OTHER, so its size does not grow with every distinct command line."""
OTHER = "(other)"
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
    """The history of one log file (not a stream, not gzip), for one grouping (`by`).

    `alarm` says (once) that a checkpoint was set aside: a warning even under --quiet.
    """

    def __init__(self, log: str, by: str, alarm: Callable[[str], None]) -> None:
        self.log = log
        self.by = by
        self.alarm = alarm
        folder, name = os.path.split(log)
        self.path = os.path.join(folder, f".{name}.stats-{by}.json")
        self.series: list[str] = []
        self._position: dict[str, object] | None = None

    def update(self, watch: SignalWatch, now: float, warn: Callable[[str], None]) -> LogSummary:
        """The history so far: the checkpoint's, and every whole line written since.

        A checkpoint that is not this user's own regular file, or that does not hold
        together, is set aside with one warning, and the log is read afresh. Raises
        FileNotFoundError when there is neither a log nor a checkpoint.
        """
        try:
            total = self._load()
            return self._read_on(total, watch, now, warn)
        except _DOUBTFUL as doubt:
            if self._position is None and not isinstance(doubt, _Untrusted):
                raise
            reason = doubt if isinstance(doubt, _Untrusted) else f"{type(doubt).__name__}"
            self.alarm(
                f"set the stats checkpoint {self.path} aside ({reason}); reading the log afresh"
            )
            self.series, self._position = [], None
            return self._read_on(LogSummary(Summary(), 0, 0), watch, now, warn)

    def _read_on(
        self, total: LogSummary, watch: SignalWatch, now: float, warn: Callable[[str], None]
    ) -> LogSummary:
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

    def bound(self, total: LogSummary) -> None:
        """Keep KEYS_MAX keys apart at most: the exported ones first, then the busiest; the
        rest together under OTHER."""
        by_key = total.summary.by_key
        if len(by_key) <= KEYS_MAX:
            return
        kept = [key for key in self.series if key in by_key][:KEYS_MAX]
        busiest = sorted(by_key, key=lambda key: by_key[key].runs, reverse=True)
        for key in busiest:
            if len(kept) >= KEYS_MAX - 1:
                break
            if key not in kept and key != OTHER:
                kept.append(key)
        other = by_key.pop(OTHER, None)
        folded = {key: by_key[key] for key in kept}
        for key, aggregate in by_key.items():
            if key not in folded:
                if other is None:
                    other = aggregate
                else:
                    other.merge(aggregate)
        if other is not None:
            folded[OTHER] = other
        total.summary.by_key = folded

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
        """The saved history, or an empty one when there is none (or of another version).

        Raises _Untrusted for a checkpoint that is not this user's own regular file, is too
        large, or does not hold together.
        """
        self.series, self._position = [], None
        document = _read_own(self.path)
        if document is None:
            return LogSummary(Summary(), 0, 0)
        try:
            if document["version"] != VERSION or document["by"] != self.by:
                return LogSummary(Summary(), 0, 0)
            summary = Summary.from_state(document["summary"])
            lines, malformed = document["lines"], document["malformed"]
            series, position = document["series"], document["position"]
            if not (_count(lines) and _count(malformed) and isinstance(series, list)):
                raise ValueError("counts")
            if not all(isinstance(label, str) for label in series):
                raise ValueError("series")
            if not (
                isinstance(position, dict)
                and _count(position["dev"])
                and _count(position["ino"])
                and _count(position["offset"])
                and (position["head"] is None or isinstance(position["head"], str))
            ):
                raise ValueError("position")
        except (*_DOUBTFUL, AttributeError, IndexError) as exc:
            raise _Untrusted(f"it does not hold together: {type(exc).__name__}") from None
        self.series, self._position = series, position
        return LogSummary(summary, lines, malformed)


class _Untrusted(ValueError):
    """A checkpoint that must not be believed."""


_DOUBTFUL = (ValueError, KeyError, TypeError, RecursionError, OverflowError)
"""What a checkpoint that lies can make reading on from it raise."""


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _read_own(path: str) -> Any:
    """The checkpoint's JSON, or None when there is none; _Untrusted when it is not this
    user's own regular file of a sane size (a FIFO, a link to a device, another user's)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _Untrusted(exc.strerror or str(exc)) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Untrusted("not a regular file")
        if info.st_uid != os.geteuid():
            raise _Untrusted(f"owned by uid {info.st_uid}, not by this user")
        if info.st_size > SIZE_MAX:
            raise _Untrusted(f"{info.st_size} bytes")
        try:
            return json.loads(handle.read(SIZE_MAX + 1))
        except (ValueError, RecursionError, OSError) as exc:
            raise _Untrusted(f"not a checkpoint: {type(exc).__name__}") from None


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
