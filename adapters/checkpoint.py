"""stats' checkpoint: the history of one log counted so far, and where to read on.

One JSON document, `{"version": 15, "crc32": …, "body": …}`, kept beside the log as
`.<log>.stats-<by>.json` or where --checkpoint says. Its body names the log's file at
the last read (device, inode, the length and CRC-32 of its first line, and the offset
just past the last whole line read) and the first lines of the rotated generations
that were beside it then, all counted. The next `stats` reads what follows the offset;
after a rotation (however many), the generation that holds the offset is read on from
it, every generation not counted before is read whole, then the new log from its start.
A checkpoint of another version, damaged anywhere, or not this user's own regular file
is not used: the whole history on disk is read again, so no counter falls.
"""

from __future__ import annotations

import json
import os
from binascii import crc32

from adapters import stats_state
from adapters.files import write_atomically
from adapters.log_read import read_file, read_range
from adapters.rotation import head_at, known_generations
from adapters.stats_files import Untrusted, open_regular, read_own, resolved, whole_lines_end
from domain.errors import StateError
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Bound = tuple[Callable[[str], str], int]
    """How a key's label is found, and how many keys a read keeps apart at most."""

VERSION = 15
KEYS_MAX = 200
"""Commands or names a checkpoint keeps apart (as many as the export's labels)."""
OPEN_MAX = 100_000
"""Open runs a checkpoint keeps, the latest: more means runners killed in the thousands."""
GENERATIONS_MAX = 1000
"""First lines of counted generations kept: more than any logrotate config keeps."""
TRIES = 5
"""Reads of a log truncated while it was read, before stats gives up."""


class Checkpoint:
    """The history of one plain log file, for one grouping (`by`). `alarm` says, once, why
    a checkpoint was not used (a warning, even under --quiet)."""

    def __init__(
        self, log: str, by: str, path: str, given: bool, alarm: Callable[[str], None]
    ) -> None:
        self.log, self.by, self.path, self.given, self.alarm = log, by, path, given, alarm
        self.exported: list[str] = []
        """The label values exported so far, in the order they were first exported."""
        self._body: dict[str, Any] | None = None
        self._at: dict[str, Any] = {}
        self._counted: list[str] = []
        self._loaded: Summary | None = None

    def update(
        self, stop: Callable[[], None], warn: Callable[[str], None], bound: Bound | None = None
    ) -> Summary:
        """The whole history: the checkpoint's, and what the log and its generations hold
        past it. Raises FileNotFoundError when there is no log and no checkpoint, StateError
        when a part of it cannot be read (the checkpoint then stays as it was)."""
        self._body = self._read()
        for tried in range(TRIES):
            body = self._body
            if body is None:
                summary = Summary()
            elif tried:  # a read begun again: from the checkpoint again
                summary = stats_state.load(body["summary"])
            else:
                summary = self._loaded or Summary()
            self.exported = [] if body is None else list(body["exported"])
            if bound is not None:
                summary.bound = (bound[0], self.exported, bound[1])
            try:
                fd = open_regular(self.log)
            except FileNotFoundError:
                if body is None:
                    raise
                self._at, self._counted = body["at"], body["counted"]
                return summary  # the log is gone: the history is what was counted
            try:
                info, head, end = os.fstat(fd), head_at(fd), whole_lines_end(fd)
                start = self._read_behind(info, head, end, summary, stop, warn)
                whole = read_range(fd, start, end, summary, self.by, stop)
                if whole and os.fstat(fd).st_size >= end and head_at(fd) == head:
                    self._at = {"dev": info.st_dev, "ino": info.st_ino, "head": head, "offset": end}
                    if body is not None and start:  # read on in the same file: as they were
                        self._counted = body["counted"]
                        return summary
                    found = known_generations(self.log, info)
                    self._counted = [first for _, first in found if first != head][
                        -GENERATIONS_MAX:
                    ]
                    return summary
            finally:
                os.close(fd)
        raise StateError(
            f"{self.log} was rotated again and again while it was read ({TRIES} times): try again"
        )

    def _read_behind(
        self, info: os.stat_result, head: str | None, end: int, summary: Summary,
        stop: Callable[[], None], warn: Callable[[str], None],
    ) -> int:  # fmt: skip
        """Read what the generations hold that was not counted; where to read the log from."""
        if self._body is None:  # the whole history on disk, oldest first
            for path, first in known_generations(self.log, info):
                if first != head:
                    try:
                        read_file(path, 0, summary, self.by, stop)
                    except (OSError, EOFError) as exc:
                        warn(f"cannot read {path}: {why(exc)}; the runs in it are not counted")
            return 0
        at, counted = self._body["at"], set(self._body["counted"])
        if head is not None and head == at["head"] and end >= at["offset"]:
            return int(at["offset"])  # the same log, also when copied to another disk
        if self.given and self._body["log"] != self._name():
            raise StateError(
                f"{self.path} holds the history of another log, {self._body['log']}: "
                "give each log a --checkpoint of its own"
            )
        found = False
        for path, first in known_generations(self.log, info):
            if first == at["head"] or (first not in counted and first != head):
                skip = at["offset"] if first == at["head"] else 0
                found = found or bool(skip)
                try:
                    read_file(path, skip, summary, self.by, stop)
                except (OSError, EOFError) as exc:
                    raise StateError(f"cannot read {path}: {why(exc)}") from None
        if not found and at["offset"]:
            warn(
                f"{self.log} was rotated and its old part was not found beside it; "
                "lines written to it since the last stats are not counted"
            )
        return 0

    def _read(self) -> dict[str, Any] | None:
        """The body, or None when there is none or it cannot be believed (said once)."""
        try:
            raw = read_own(self.path)
            if raw is None:
                return None
            doc = json.loads(raw)
            if type(doc) is not dict or doc.get("version") != VERSION:
                raise Untrusted("written by another version of runner")
            body, said = doc["body"], doc["crc32"]
            head = b'{"version":%d,"crc32":"%s","body":' % (VERSION, said.encode())
            if not (raw.startswith(head) and raw.endswith(b"}\n")) or (
                crc32(raw[len(head) : -2]) != int(said, 16)
            ):
                raise Untrusted("damaged: its checksum does not match")
            if body["by"] != self.by or type(body["exported"]) is not list:
                raise Untrusted("damaged: it is not a checkpoint of this grouping")
            loaded = stats_state.load(body["summary"])  # every value checked, once
            at = body["at"]
            if not (
                type(at["offset"]) is int and at["offset"] >= 0 and type(body["counted"]) is list
            ):
                raise Untrusted("damaged: its position is not one stats writes")
            self._loaded = loaded
            return body  # type: ignore[no-any-return]
        except Untrusted as exc:
            reason = str(exc)
        except (ValueError, KeyError, TypeError, RecursionError):
            reason = "damaged: it holds values no stats writes"
        self.alarm(
            f"not using the stats checkpoint {self.path} ({reason}): "
            f"counting {self.log} and its rotated generations afresh"
        )
        return None

    def save(self, summary: Summary) -> None:
        """Keep the history (at most KEYS_MAX keys apart, OPEN_MAX open runs); raises OSError."""
        body = {
            "by": self.by,
            "log": self._name(),
            "at": self._at,
            "counted": self._counted,
            "exported": self.exported,
            "summary": stats_state.dump(summary),
        }
        data = _encode(body)
        doc = b'{"version":%d,"crc32":"%08x","body":%s}\n' % (VERSION, crc32(data), data)
        write_atomically(self.path, doc, 0o600, durable=False)

    def _name(self) -> str:
        return os.path.join(*resolved(self.log))


def _encode(body: object) -> bytes:
    return json.dumps(body, separators=(",", ":"), allow_nan=False, check_circular=False).encode()


def why(exc: OSError | EOFError) -> str:
    """A read's failure in a few words."""
    if isinstance(exc, EOFError):
        return "a compressed log cut short"
    return exc.strerror or str(exc)
