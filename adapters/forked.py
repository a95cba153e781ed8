"""What a child the runner forks for its own work (a lock waiter, a stats worker) does first."""

from __future__ import annotations

import os
import signal

from adapters.signals import REDIRECTED

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable


def become_helper(keep: Iterable[int], mask: Iterable[int] = ()) -> None:
    """Keep no descriptor but `keep` (so no pipe of the runner's stays open because of the
    child), undo the runner's signal handling (its handlers and wakeup pipe), and block
    `mask` alone."""
    start = 0
    for fd in sorted(set(keep)):
        if fd > start:  # closerange(n, n) is not empty to every Python: it closed everything
            os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, os.sysconf("SC_OPEN_MAX"))
    signal.set_wakeup_fd(-1)
    for signum in (*REDIRECTED, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, list(mask))
