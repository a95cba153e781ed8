"""How many runs of a job in a row have failed, read from the end of the attempt log, so that
`--ping-fail-after N` survives restarts: the count is the log's, not the process's."""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

READ_MAX = 8 << 20
"""Bytes of the log's end read at most: a job whose runs are further back has none here."""


def counter(
    path: str, name: str | None, cmd: list[str], run_id: str, most: int
) -> Callable[[], int]:
    """`failed_in_a_row` of these, when it is asked (at the run's end)."""
    return lambda: failed_in_a_row(path, name, cmd, run_id, most)


def failed_in_a_row(path: str, name: str | None, cmd: list[str], run_id: str, most: int) -> int:
    """How many of the job's last runs failed one after the other (`most` at most), newest
    first: a run is its newest line (rc 0: it succeeded, which ends the count). The job is
    `name` when given, else the command line of runs with no name; run `run_id` (the one
    ending now) is left out. A log that cannot be read has no failures."""
    seen: set[str] = {run_id}
    failed = 0
    for record in _newest_first(path):
        if not isinstance(record, dict) or record.get("run_id") in seen:
            continue
        if (record.get("name") != name) or (name is None and record.get("cmd") != cmd):
            continue
        seen.add(str(record.get("run_id")))
        if record.get("rc") == 0:
            break
        failed += 1
        if failed >= most:
            break
    return failed


def _newest_first(path: str) -> Iterator[object]:
    """The decoded lines of the log's last READ_MAX bytes, newest first, decoded as they are
    asked for (a line that is no JSON is left out; so is the first, cut, one)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        end = os.fstat(fd).st_size
        start = max(0, end - READ_MAX)
        data = os.pread(fd, end - start, start)
    except OSError:
        return
    finally:
        os.close(fd)
    lines = data.split(b"\n")
    for line in reversed(lines[1:] if start > 0 else lines):
        if line.strip():
            try:
                yield json.loads(line)
            except (ValueError, RecursionError):
                continue
