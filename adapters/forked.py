"""What a child the runner forks for its own work (a lock waiter, stats' second reader)
does first, and whether a second process may have a core of its own."""

from __future__ import annotations

import os
import signal

from adapters.signals import REDIRECTED

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


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


def two_cores() -> bool:
    """Whether this process may use two cores: its affinity, and its cgroup's CPU quota."""
    if len(os.sched_getaffinity(0)) < 2:
        return False
    try:
        with open("/proc/self/cgroup") as own:  # cgroup v2: the line "0::/path"
            group = next(line[3:] for line in own.read().split("\n") if line.startswith("0::"))
        with open(f"/sys/fs/cgroup{group}/cpu.max") as limit:
            quota, period = limit.read().split()
    except (OSError, ValueError, StopIteration):
        return True
    return quota == "max" or int(quota) >= 2 * int(period)


def drain(fd: int, stop: Callable[[], None]) -> bytes:
    """Everything a child writes into the pipe `fd` until it closes it; `stop()` is called
    every 0.2 s at most (it raises to end the wait)."""
    import select  # noqa: PLC0415 - only for a large log

    pieces: list[bytes] = []
    while True:
        stop()
        if select.select([fd], [], [], 0.2)[0]:
            piece = os.read(fd, 1 << 20)
            if not piece:
                return b"".join(pieces)
            pieces.append(piece)
