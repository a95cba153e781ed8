"""Waiting for a flock in the kernel's queue, with a deadline and an ear for signals."""

from __future__ import annotations

import fcntl
import os
import signal
import time

from adapters.forked import become_helper
from adapters.signals import ending
from domain.errors import Interrupted

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from adapters.signals import SignalWatch


def queue(
    fds: list[int],
    paths: list[str],
    deadline: float,
    watch: SignalWatch,
    take: Callable[[int, str], bool],
    mode: int = fcntl.LOCK_EX,
) -> int | None:
    """Wait in the kernel's queue for the flock on any of `fds`, until `deadline` (monotonic).

    A blocking flock cannot be given a deadline, and a signal handler that does not
    raise lets Python restart it; so a forked helper per slot blocks on the shared
    open file description while the runner watches the clock and its signals.
    When a helper gets the lock, the description (and so the runner) holds it.
    Waiters are served in the kernel's order instead of by whoever polls at the
    right moment. Returns the slot taken, or None.
    """
    everything = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    helpers: dict[int, int] = {}
    try:
        for slot, fd in enumerate(fds):
            pid = os.fork()
            if pid == 0:
                _helper(fd, deadline, everything, mode)
            helpers[pid] = slot
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, everything)
    chosen: int | None = None
    try:
        while chosen is None and helpers and time.monotonic() < deadline:
            for pid in list(helpers):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    slot = helpers.pop(pid)
                    if os.waitstatus_to_exitcode(status) == 0 and chosen is None:
                        chosen = slot
            if chosen is None and helpers:
                signum = ending(watch.wait(deadline - time.monotonic()))
                if signum is not None:
                    raise Interrupted(signum)
    finally:
        for pid in helpers:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    return _keep_one(fds, paths, chosen, take)


def _keep_one(
    fds: list[int], paths: list[str], slot: int | None, take: Callable[[int, str], bool]
) -> int | None:
    """Once every helper is gone: keep `slot` (or the first slot a helper took at the last
    moment), and unlock any other slot a helper took meanwhile."""
    for other, fd in enumerate(fds):
        if other != slot and take(fd, paths[other]):
            if slot is None:
                slot = other
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
    return slot


def _helper(fd: int, deadline: float, mask: Iterable[int], mode: int) -> None:
    """In the forked helper: block on the flock, never outliving the wait by much.

    It keeps no descriptor but the lock's, so that no pipe of the runner's stays open
    because of it.
    """
    try:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        become_helper([fd], [n for n in mask if n != signal.SIGALRM])
        signal.alarm(min(int(deadline - time.monotonic()) + 2, 1 << 30))
        fcntl.flock(fd, mode)
        os._exit(0)
    except BaseException:
        os._exit(1)
