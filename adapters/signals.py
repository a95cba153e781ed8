"""Signals as events: recorded by the kernel into a pipe, read when the runner waits."""

from __future__ import annotations

import os
import select
import signal

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Signals the runner passes on to the command and then exits with 128 + N."""

LONGEST_WAIT = 3600.0
"""Seconds one wait may block; callers loop, so a year-long timeout fits any time_t."""


def _ignore(signum: int, frame: object) -> None:
    """The wakeup pipe is the record; the Python-level handler has nothing to do."""


class SignalWatch:
    """Catches SIGTERM, SIGINT, SIGHUP and SIGCHLD from the moment it is built.

    Each signal is written as one byte into a non-blocking pipe by the C-level
    handler (`signal.set_wakeup_fd`), so none is lost between two checks and a
    wait wakes at once. Nothing raises inside a handler: the runner is never
    interrupted in the middle of writing a marker or spawning a process.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous = {
            signum: signal.signal(signum, _ignore) for signum in (*FORWARDED, signal.SIGCHLD)
        }

    def close(self) -> None:
        """Put back the handlers that were there before (for embedding and tests)."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._read)
        os.close(self._write)

    def wait(self, timeout: float | None) -> list[int]:
        """Wait up to `timeout` seconds (None: no limit) for any signal.

        Return the forwarded signals received since the last call, oldest first;
        SIGCHLD only wakes the waiter. A wait may end early (at most an hour, or on
        SIGCHLD) with nothing to report: callers check their own deadlines.
        """
        if timeout is None or timeout > 0:
            limit = LONGEST_WAIT if timeout is None else min(timeout, LONGEST_WAIT)
            select.select([self._read], [], [], limit)
        return self.pending()

    def pending(self) -> list[int]:
        """The forwarded signals received since the last call, without waiting."""
        received: list[int] = []
        while True:
            try:
                chunk = os.read(self._read, 256)
            except BlockingIOError:
                return received
            if not chunk:
                return received
            received.extend(b for b in chunk if b in FORWARDED)
