"""The thread that keeps a held lease renewed, whatever the runner's main thread is doing.

A command running, a backoff wait, a marker being written: the lease is renewed
through all of them, on a connection of the thread's own, which no signal
interrupts. When the lease is lost the thread says why (`lost`) and makes
`alert_fd()` readable, so the main thread's waits wake and stop the command.
"""

from __future__ import annotations

import os
import select
import threading
import time

from domain.lease import keep

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Protocol

    from adapters.postgres.session import Session

    class Leased(Protocol):
        """The lock whose lease is kept (adapters.postgres.lock.PgLock)."""

        lease: float

        def renew(self, session: Session, within: float) -> bool: ...


STOP_WAIT = 0.5
"""Seconds a stopping runner waits for a renewal under way (a SIGTERM bounds it to 2 s)."""


class LeaseKeeper:
    """Renews `lock`'s lease through `session` every lease/3 until stopped or lost."""

    def __init__(self, lock: Leased, session: Session) -> None:
        self.lock = lock
        self.session = session
        self.lost: str | None = None
        self.renewals = 0
        self._stop_read, self._stop_write = os.pipe()
        self._alert_read, self._alert_write = os.pipe()
        self._thread = threading.Thread(target=self._run, name="lease", daemon=True)
        self._thread.start()

    def renew(self, within: float) -> bool:
        """The LeaseStore port, for domain.lease.keep."""
        self.renewals += 1
        return self.lock.renew(self.session, within)

    def _run(self) -> None:
        try:
            self.lost = keep(self, self.lock.lease, time.monotonic, self._wait)
        except Exception as bug:  # a keeper that cannot keep has lost the lease
            self.lost = f"the lease keeper failed: {type(bug).__name__}: {bug}"
        finally:
            self.session.close()
        if self.lost is not None:
            os.write(self._alert_write, b"!")

    def _wait(self, seconds: float) -> bool:
        """Wait `seconds`; True when told to stop meanwhile."""
        return bool(select.select([self._stop_read], [], [], seconds)[0])

    def alert_fd(self) -> int:
        return self._alert_read

    def stop(self) -> None:
        """Stop renewing, and wait STOP_WAIT at most for the thread. A renewal under way ends
        within its own bound; one stuck longer (a locked table) is left to it: the thread is
        a daemon, and its descriptors stay open until it ends, so that no file opened
        meanwhile could take one of their numbers."""
        os.write(self._stop_write, b"!")
        self._thread.join(STOP_WAIT)
        if self._thread.is_alive():
            return
        for fd in (self._stop_read, self._stop_write, self._alert_read, self._alert_write):
            os.close(fd)
