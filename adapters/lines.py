"""Attempt lines as the runner writes them, decoded into a Summary (for `stats`)."""

from __future__ import annotations

import json
from datetime import datetime
from operator import itemgetter

from adapters.jsonl import SIGNALLED_RC, TIMEOUT_RC
from domain.words import shell_words, visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.stats import Summary

_FIELDS = itemgetter("ts", "cmd", "attempt", "rc", "duration_ms", "run_id")
_parse_ts = datetime.fromisoformat

LIMITS = {"attempt": 1_000_000_000, "rc": 255, "duration_ms": 10**13}
"""The largest value of each number field (1 to it for attempt, 0 to it for the others)."""

_BROKEN = (
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    OverflowError,
    OSError,
    RecursionError,
)
"""What a hostile line can make decoding raise: the line is malformed, nothing more."""


class LineReader:
    """Decodes batches of lines into `summary`, counting the lines and the malformed ones."""

    def __init__(self, summary: Summary, by: str) -> None:
        self.summary = summary
        self.by = by
        self.lines = 0
        self.malformed = 0
        self._keys: dict[tuple[str, ...], str] = {}

    def feed(self, batch: list[bytes]) -> None:
        """Decode a batch as one JSON array (one line at a time if any line is broken)."""
        self.lines += len(batch)
        try:
            records = json.loads(b"[" + b",".join(batch) + b"]")
        except (ValueError, RecursionError):
            records = [_decode(line) for line in batch]
        add, keys, by_name = self.summary.add, self._keys, self.by == "name"
        for record in records:
            try:
                ts, cmd, attempt, rc, duration, run_id = _FIELDS(record)
                started = _parse_ts(ts).timestamp()
                key = visible(record.get("name", "-")) if by_name else keys.get(tuple(cmd))
                if key is None:
                    key = self._new_key(cmd)
            except _BROKEN:
                self.malformed += 1
                continue
            if (
                type(attempt) is not int
                or type(rc) is not int
                or type(duration) is not int
                or type(run_id) is not str
                or type(key) is not str
                or type(cmd) is not list
                or not 1 <= attempt <= LIMITS["attempt"]
                or not 0 <= rc <= LIMITS["rc"]
                or not 0 <= duration <= LIMITS["duration_ms"]
            ):
                self.malformed += 1
                continue
            outcome = None
            if rc == TIMEOUT_RC or rc >= SIGNALLED_RC or "timed_out" in record:
                outcome = _said(record, rc)
            add(run_id, key, started, attempt, rc, duration, "delay_ms" in record, outcome)

    def _new_key(self, cmd: list[object]) -> str:
        if not isinstance(cmd, list) or not all(type(word) is str for word in cmd):
            raise TypeError
        words: list[str] = cmd  # type: ignore[assignment]
        key = self._keys[tuple(words)] = shell_words(words)
        return key


def _said(record: dict[str, object], rc: int) -> str | None:
    """How the line says an attempt with a timeout's or a signal's rc ended: `timed_out` and
    `signal` tell the runner's timeout and a real signal from a command that merely exited
    with that code; a line without them (written before they were) is read by its rc."""
    said = record.get("timed_out")
    if said is True:
        return "timeout"
    if rc == TIMEOUT_RC:
        return None if said is None else "failure"
    if "signal" not in record:
        return None
    return "signal" if record["signal"] else "failure"


def _decode(line: bytes) -> object:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None
