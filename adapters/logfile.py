"""Reading runs.jsonl for `stats`: streamed in batches, split across processes when large."""

from __future__ import annotations

import json
import os
from datetime import datetime
from itertools import pairwise
from operator import itemgetter

from domain.apply import shell_words
from domain.stats import Summary

_FIELDS = itemgetter("ts", "cmd", "attempt", "rc", "duration_ms", "run_id")
_parse_ts = datetime.fromisoformat

BATCH_BYTES = 1 << 20
"""Lines are decoded about a mebibyte at a time, as one JSON array."""

PARALLEL_FROM = 8 << 20
"""Logs from this size (bytes) up are read by one process per core."""

PIECES_PER_WORKER = 4
"""A large log is cut into this many pieces per process, so a slower core takes fewer."""


class LogSummary:
    """A Summary of a log, with how many lines were read and how many were not attempts."""

    def __init__(self, summary: Summary, lines: int, malformed: int) -> None:
        self.summary = summary
        self.lines = lines
        self.malformed = malformed


def summarize(path: str, by: str, since: float | None, workers: int | None = None) -> LogSummary:
    """Summarize the log at `path`, grouping runs by "cmd" or "name"; raises OSError."""
    size = os.stat(path).st_size
    workers = workers or os.cpu_count() or 1
    if workers == 1 or size < PARALLEL_FROM:
        return summarize_range(path, 0, size, by, since)
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    bounds = _split(path, size, workers * PIECES_PER_WORKER)
    spans = list(pairwise(bounds))
    with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
        parts = list(
            pool.map(
                summarize_range,
                [path] * len(spans),
                [start for start, _ in spans],
                [end for _, end in spans],
                [by] * len(spans),
                [since] * len(spans),
            )
        )
    total = parts[0]
    for part in parts[1:]:
        total.summary.merge(part.summary)
        total.lines += part.lines
        total.malformed += part.malformed
    return total


def _split(path: str, size: int, parts: int) -> list[int]:
    """Byte offsets that cut the file into `parts` pieces at line boundaries."""
    bounds = [0]
    with open(path, "rb") as handle:
        for n in range(1, parts):
            handle.seek(max(bounds[-1], size * n // parts))
            handle.readline()
            bounds.append(min(handle.tell(), size))
    bounds.append(size)
    return sorted(set(bounds))


def summarize_range(path: str, start: int, end: int, by: str, since: float | None) -> LogSummary:
    """Summarize the lines that begin in [start, end) of the log."""
    reader = _Reader(Summary(since), by)
    with open(path, "rb") as handle:
        handle.seek(start)
        position = start
        while position < end:
            batch = handle.readlines(BATCH_BYTES)
            if not batch:
                break
            for index, line in enumerate(batch):
                position += len(line)
                if position >= end:
                    batch = batch[: index + 1]
                    break
            reader.feed(batch)
    return LogSummary(reader.summary, reader.lines, reader.malformed)


class _Reader:
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
        except ValueError:
            records = [_decode(line) for line in batch]
        add, keys, by_name = self.summary.add, self._keys, self.by == "name"
        for record in records:
            try:
                ts, cmd, attempt, rc, duration, run_id = _FIELDS(record)
                started = _parse_ts(ts).timestamp()
                key = record.get("name", "-") if by_name else keys.get(tuple(cmd))
                if key is None:
                    key = self._new_key(cmd)
            except (KeyError, TypeError, ValueError, AttributeError):
                self.malformed += 1
                continue
            if (
                type(attempt) is not int
                or type(rc) is not int
                or type(duration) is not int
                or type(run_id) is not str
                or type(key) is not str
                or type(cmd) is not list
                or attempt < 1
                or duration < 0
            ):
                self.malformed += 1
                continue
            add(run_id, key, started, attempt, rc, duration, "delay_ms" in record)

    def _new_key(self, cmd: list[object]) -> str:
        if not isinstance(cmd, list) or not all(type(word) is str for word in cmd):
            raise TypeError
        words: list[str] = cmd  # type: ignore[assignment]
        key = self._keys[tuple(words)] = shell_words(words)
        return key


def _decode(line: bytes) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return None
