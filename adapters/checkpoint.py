"""stats' checkpoint: the whole history of a log counted so far, and where to read on.

Kept beside the log as `.<log>.stats-<by>.json`, or where --checkpoint says (see
adapters.saved for its form). It
names the log by device, inode and a hash of its first line, and the offset just past
the last whole line read. The next `stats` reads only what follows. When the log
was rotated (moved, truncated, replaced), once or many times, every generation beside it
not yet read is read once (see adapters.rotation); then the new log from its start.
"""

from __future__ import annotations

import os
import time

from adapters import saved
from adapters.files import write_atomically
from adapters.log_reads import why
from adapters.logfile import LogSummary, open_regular, stop_if_ended, summarize, whole_lines_end
from adapters.open_runs import packed_runs
from adapters.rotation import head_at, history, summarize_generation, unread
from adapters.stats_files import Untrusted, checkpoint_path, read_own, resolved
from domain.errors import Damaged, StateError
from domain.marks import carried
from domain.stats import OTHER, Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from adapters.signals import SignalWatch

KEYS_MAX = 200
"""Commands or names a checkpoint keeps apart (as many as the export's labels); the others
are kept together as `(other)`, so its size does not grow with every distinct command line."""
OPEN_MAX = 100_000
"""Open runs a checkpoint keeps (the latest): more means runners killed in the thousands,
and each costs the next stats' start."""
OPEN_MAX_AGE = 7 * 86400.0
"""Seconds of the log's own time (its latest attempt, or now if that is later than now: a
line from a host whose clock was years ahead): a run still open this long after its last
attempt lost its runner, and is forgotten."""
TRIES = 5
"""Reads of a log that was rotated while it was being read, before stats gives up."""


class Checkpoint:
    """The history of one log file (not a stream, not gzip), for one grouping (`by`).

    `alarm` says (once) that a checkpoint was set aside: a warning even under --quiet.
    `path`: where it is kept (--checkpoint), if not beside the log (see adapters.stats_files).
    """

    def __init__(
        self, log: str, by: str, alarm: Callable[[str], None], path: str | None = None
    ) -> None:
        self.log = log
        self.by = by
        self.alarm = alarm
        self.path = checkpoint_path(log, by, path)
        self.given = path is not None
        self.series: list[str] = []
        self.export: dict[str, Any] | None = None
        """The textfile written last: its path, identity, constant labels, and where its
        `lines` of each key exported under a label of its own are (see adapters.saved)."""
        self.placed: dict[str, Any] | None = None
        """Where this stats' export put each key's lines (None: it exports nothing)."""
        self._written = False
        self.position: dict[str, object] | None = None
        """Where the log was read to, and marks of where times begin in it (domain.marks)."""

    @property
    def _named(self) -> str:
        """The log's path, its folder's links resolved (as two cron lines may name it)."""
        return os.path.join(*resolved(self.log))

    def update(self, watch: SignalWatch, warn: Callable[[str], None]) -> LogSummary:
        """The history so far: the checkpoint's, and every whole line written since.

        A checkpoint that is not this user's own regular file, or that does not hold
        together, is set aside with one warning, and the log is read afresh. Raises
        FileNotFoundError when there is neither a log nor a checkpoint.
        """
        try:
            total = self._load()
            stop_if_ended(watch)
            return self._read_on(total, watch, warn)
        except _DOUBTFUL as doubt:
            if self.position is None and not isinstance(doubt, Untrusted):
                raise
            reason = doubt if isinstance(doubt, (Untrusted, Damaged)) else type(doubt).__name__
            return self.afresh(str(reason), watch, warn)

    def afresh(self, reason: str, watch: SignalWatch, warn: Callable[[str], None]) -> LogSummary:
        """Set the checkpoint aside (one warning) and read the log afresh."""
        self.alarm(f"set the stats checkpoint {self.path} aside ({reason}); reading the log afresh")
        self.series, self.export, self.placed, self.position = [], None, None, None
        return self._read_on(LogSummary(Summary(), 0, 0), watch, warn)

    def _read_on(
        self, total: LogSummary, watch: SignalWatch, warn: Callable[[str], None]
    ) -> LogSummary:
        """Read on from the position into `total`. The log is read through one descriptor, so
        a rename mid read changes nothing; a truncation mid read (copytruncate) is noticed,
        and the read starts again from where it began, now a rotated generation."""
        for _ in range(TRIES):
            try:
                fd = open_regular(self.log)
            except FileNotFoundError:
                if self.position is None:
                    raise
                return total
            try:
                info = os.fstat(fd)
                end, head = whole_lines_end(fd), head_at(fd)
                start = self._resume(info, head, end, total, watch, warn)
                part = summarize(fd, self.by, None, watch, start=start, end=end, keep=self.series)
                if os.fstat(fd).st_size >= end and head_at(fd) == head:
                    total.merge(part)
                    read, ever = part.summary.newest, total.summary.newest
                    marks = carried(self.position, start, read, ever, end)
                    self.position = {**self._position_of(info, head), "offset": end}
                    if marks:
                        self.position["marks"] = marks
                    clock = min(total.summary.newest, time.time())
                    total.summary.drop_open_before(clock - OPEN_MAX_AGE)
                    return total
            finally:
                os.close(fd)
        raise StateError(f"{self.log} was rotated again and again while it was read; try later")

    def _position_of(self, info: os.stat_result, head: str | None) -> dict[str, object]:
        return {"dev": info.st_dev, "ino": info.st_ino, "head": head, "log": self._named}

    def save(self, total: LogSummary) -> None:
        """Write the checkpoint atomically; raises OSError when it cannot be.

        No fsync: a checkpoint lost in a crash, or an older one, only means that
        the next `stats` reads more of the log (its offset and figures go together).
        """
        header: dict[str, object] = {
            "by": self.by,
            "position": self.position,
            "lines": total.lines,
            "malformed": total.malformed,
            "series": self.series,
            "newest": total.summary.newest,
            "open": packed_runs(total.summary.open),
        }
        header["export"] = self._export_of(total.summary)
        data = saved.write(header, total.summary)
        write_atomically(self.path, data, 0o600, durable=False)

    def bound(self, total: LogSummary) -> None:
        """Keep KEYS_MAX keys apart at most, the exported ones first, and OPEN_MAX open runs
        (see Summary.bound): the checkpoint's size does not grow with the log."""
        if total.summary.bound(self.series, KEYS_MAX, OPEN_MAX) and self.placed is not None:
            self.placed["keys"].pop(OTHER, None)  # what joined it since it was exported

    def exported(self, identity: dict[str, object], labels: list[list[str]]) -> None:
        """This stats' export was written to a textfile of `identity`, with these constant
        labels: where it put each key's lines is what the next export may copy."""
        self.export = {**identity, "labels": labels, "lines": self.placed or {}}
        self._written = True

    def _export_of(self, summary: Summary) -> dict[str, Any] | None:
        """The textfile to copy from next time: the one written now, or else the one before
        without the keys that changed since (the lines there are no longer theirs)."""
        if self.export is None or self._written:
            return self.export
        lines = self.export["lines"]
        alone = lines.get("keys")
        if type(alone) is not dict:
            return None
        kept = {key: there for key, there in alone.items() if key in summary.saved}
        return {**self.export, "lines": {**lines, "keys": kept}}

    def _resume(
        self,
        info: os.stat_result,
        head: str | None,
        end: int,
        total: LogSummary,
        watch: SignalWatch,
        warn: Callable[[str], None],
    ) -> int:
        """Where to read the log from. When it was rotated, first every generation not yet
        read to its end goes into `total`, and the position moves to the log's start."""
        saved = self.position
        if saved is None:
            self.position = {**self._position_of(info, head), "offset": 0}
            self._read_history(info, head, total, watch, warn)
            return 0
        offset = int(str(saved["offset"]))
        same = (info.st_dev, info.st_ino) == (saved["dev"], saved["ino"])
        if end >= offset and (
            (head == saved["head"] and (same or head is not None))
            or (same and saved["head"] is None)  # no first line then, or one too long to know
        ):
            return offset  # the same log, also when copied to another disk (a new inode)
        if self.given and saved.get("log") not in (None, self._named):  # a --checkpoint reused
            raise StateError(
                f"{self.path} holds the history of another log, {saved['log']}: "
                "give each log a --checkpoint of its own"
            )
        known = saved["head"]
        behind = unread(self.log, known if isinstance(known, str) else None, info)
        if behind is None and saved["head"] is not None:
            warn(
                f"{self.log} was rotated and its old part was not found beside it; "
                "lines written to it since the last stats are not counted"
            )
        for path in behind or []:
            try:
                total.merge(summarize_generation(path, self.by, watch, offset, self.series))
            except (OSError, EOFError) as exc:
                raise StateError(f"cannot read {path}: {why(exc)}") from None
            offset = 0
        self.position = {**self._position_of(info, head), "offset": 0}
        return 0

    def _read_history(
        self,
        info: os.stat_result,
        head: str | None,
        total: LogSummary,
        watch: SignalWatch,
        warn: Callable[[str], None],
    ) -> None:
        """A new checkpoint (the first stats, or one set aside: lost in a crash, damaged)
        counts the whole history still on disk, so that no exported counter falls to what
        the current log holds: every rotated generation, oldest first, into `total`. One
        that cannot be read is said and left out."""
        for path in history(self.log, head, info):
            try:
                total.merge(summarize_generation(path, self.by, watch))
            except (OSError, EOFError) as exc:
                warn(f"cannot read {path}: {why(exc)}; the runs in it are not counted")

    def _load(self) -> LogSummary:
        """The saved history, or an empty one when there is none (or of another version).

        Raises Untrusted for a checkpoint that is not this user's own regular file, is too
        large, or does not hold together.
        """
        self.series, self.export, self.placed, self.position = [], None, None, None
        raw = read_own(self.path)
        if raw is None:
            return LogSummary(Summary(), 0, 0)
        try:
            loaded = saved.read(raw, self.by)
        except (*_DOUBTFUL, AttributeError, IndexError) as exc:
            raise Untrusted(f"it does not hold together: {type(exc).__name__}") from None
        if loaded is None:
            return LogSummary(Summary(), 0, 0)
        self.series, self.export = loaded.series, loaded.export
        self.position = loaded.position
        return LogSummary(loaded.summary, loaded.lines, loaded.malformed)


_DOUBTFUL = (ValueError, KeyError, TypeError, RecursionError, OverflowError)
"""What a checkpoint that lies can make reading on from it raise."""
