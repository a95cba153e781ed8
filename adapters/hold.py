"""`run --lock FILE --hold DURATION` on one host: the lock stays taken for DURATION after it
was taken, even when its command ended sooner (ShedLock's lockAtLeastFor).

The hold is written when the lock is taken, beside it (`FILE.hold`: the wall-clock time
it ends and what ran), so it holds whatever happens to the run, a SIGKILL included.
Every run of the lock reads it once it has the flock: while a hold lasts the lock is
busy, or, with --lock-wait, waited out within the wait. Times are this host's clock.
"""

from __future__ import annotations

import os
import time

from domain.errors import Interrupted, LockBusy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.lock import FcntlLock
    from adapters.signals import SignalWatch

HOLD_MAX = 4096
"""Bytes of a hold file read: the time and what ran, nothing more."""


class HeldLock:
    """A flock whose every holder respects the holds of those before it, and keeps its own."""

    def __init__(self, lock: FcntlLock, hold: float, watch: SignalWatch) -> None:
        self.lock = lock
        self.hold = hold
        self.watch = watch
        self.path = lock.path + ".hold"

    def acquire(self, wait: float = 0.0) -> int | None:
        """The flock, once no hold of an earlier run lasts (waited out within `wait`)."""
        deadline = time.monotonic() + wait
        token = self.lock.acquire(wait)
        try:
            self._wait_out(deadline)
            if self.hold > 0:
                self._keep(time.time() + self.hold)
        except BaseException:
            self.lock.release()
            raise
        return token

    def _wait_out(self, deadline: float) -> None:
        found = held_until(self.path)
        if found is None:
            return
        until, what = found
        left = until - time.time()
        if left <= 0:
            return
        if time.monotonic() + left > deadline:
            raise LockBusy(f"{what} ended; the lock is held until {moment(until)} (--hold)")
        from adapters.signals import ending  # noqa: PLC0415 - only a wait for a hold

        end = time.monotonic() + left
        while (remaining := end - time.monotonic()) > 0:
            signum = ending(self.watch.wait(remaining))
            if signum is not None:
                raise Interrupted(signum)

    def _keep(self, until: float) -> None:
        from adapters.files import write_atomically  # noqa: PLC0415
        from adapters.jsonl import dumps  # noqa: PLC0415

        record = dumps({"until": until, "what": self.lock.what})
        write_atomically(self.path, record.encode("ascii") + b"\n", 0o600, durable=False)

    def lost(self) -> str | None:
        return self.lock.lost()

    def fds(self) -> tuple[int, ...]:
        return self.lock.fds()

    def release(self) -> None:
        self.lock.release()


def held_until(path: str) -> tuple[float, str] | None:
    """When the hold kept in `path` ends (epoch seconds) and what ran; None without one.

    A file that cannot be read, or holds anything else, is no hold: a damaged hold never
    keeps a lock taken for ever."""
    import json  # noqa: PLC0415 - only a lock with a hold file

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        record = json.loads(os.read(fd, HOLD_MAX))
        until, what = record["until"], record["what"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    finally:
        os.close(fd)
    if type(until) not in (int, float) or type(what) is not str or not until < 1e12:
        return None
    return float(until), what


def moment(epoch: float) -> str:
    """A time as an operator reads it: `2026-12-04 05:30:00 UTC` (this host's zone)."""
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(epoch))
