"""The record a lock's holder keeps in the lock file: what it runs, its host, pid and
start, for the message a busy lock gives and for `runner locks`. Written only into a
file that is empty or holds such a record: any other file is the user's own."""

from __future__ import annotations

import os
import time

from domain.words import holder_line

HOLDER_MAX = 4096
"""Bytes of a lock file read for the holder's record."""

RECORD_START = b'{"what":'
"""How every holder's record starts (the runner's encoder keeps its keys in order)."""


def claim(fd: int, what: str) -> bool:
    """Write who holds the lock into its file, when that file is empty or holds the record
    of a holder before. A file with anything else in it (a script that locks itself, as
    with `flock "$0"`) is the user's: it is locked and left as it is, as flock(1) leaves
    it, and a busy lock then names no holder. A read-only lock file says nothing either.
    Whether the record was written."""
    from adapters.jsonl import dumps  # noqa: PLC0415 - only a holder writes it

    record = dumps(
        {"what": what, "host": os.uname().nodename, "pid": os.getpid(), "since": time.time()}
    )
    try:
        if not ours(fd):
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode("ascii") + b"\n", 0)
    except OSError:
        return False
    return True


def ours(fd: int) -> bool:
    """Whether the lock file open at `fd` is empty or holds a holder's record: one the
    runner may write its own record into."""
    try:
        return not os.fstat(fd).st_size or os.pread(fd, len(RECORD_START), 0) == RECORD_START
    except OSError:
        return False


def record_of(fd: int) -> tuple[str, str, int, float] | None:
    """The record a holder wrote of itself into the lock file open at `fd`: what it runs,
    its host, its pid and when it took the lock; None when the file holds none."""
    import json  # noqa: PLC0415 - only a busy lock, or `locks`, reads a record

    try:
        record = json.loads(os.pread(fd, HOLDER_MAX, 0))
        what, host, pid = str(record["what"]), str(record["host"]), int(record["pid"])
        return what, host, pid, float(record["since"])
    except (OSError, ValueError, TypeError, KeyError, RecursionError, OverflowError):
        return None


def busy_holders(fds: list[int]) -> str | None:
    """Who holds the busy slots, as their files say: `apply db on web-3 (pid 42) for 3m12s`."""
    found = []
    for fd in fds:
        record = record_of(fd)
        if record is not None:
            what, host, pid, since = record
            found.append(holder_line(what, host, pid, time.time() - since))
    return "; ".join(found) or None
