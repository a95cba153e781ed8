"""--idle-timeout without touching the output: writes seen where the output goes.

The command keeps the runner's stdout and stderr (or --output-on-failure's files) as
they are, and the kernel tells the runner (inotify, IN_MODIFY) when they are written
to. A watch tells of one write and goes (IN_ONESHOT); the runner looks now and then and
sets it again: streaming costs nothing per byte (a watch that stayed would cost the
kernel an event for every write). That holds for a regular file, a terminal and a
pipe or FIFO (when this kernel reports writes on pipes: tried once on a pipe of the
runner's own); any other destination (/dev/null, which every process writes to, a
socket), or no inotify at all, leaves the output to the relay (adapters.relay).

What is seen is every write to those destinations, by whoever makes it: under cron the
mail pipe is the job's alone, a log shared with other jobs is not.
"""

from __future__ import annotations

import os
import stat
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

IN_MODIFY = 0x2
IN_ONESHOT = 0x80000000
LOOK_EVERY = 1.0
"""Seconds at most between two looks at what was written (a tenth of --idle-timeout
when that is shorter): an idle attempt is ended that much late at most."""
LOOK_AT_LEAST = 0.05
"""Seconds at least between two looks."""

_pipes_report: bool | None = None
"""Whether this kernel reports writes on pipes (None: not tried yet)."""


class Activity:
    """The writes to an attempt's destinations, seen by looking now and then (`seen_at`)."""

    def __init__(
        self, fd: int, add: Callable[[int, bytes, int], int], paths: list[bytes], idle: float
    ) -> None:
        self.fd = fd
        self.add = add
        self.paths = paths
        self.last = time.monotonic()
        """When a write was last seen (or the attempt began): monotonic seconds."""
        self.look_every = max(LOOK_AT_LEAST, min(LOOK_EVERY, idle / 10))
        self.blind = False
        """Whether a watch could not be set again: the writes can no longer be seen, and
        the attempt is taken as writing (never ended for a silence it cannot see)."""

    def arm(self) -> bool:
        """Set a watch for the next write to each destination; False when one cannot be."""
        return all(self.add(self.fd, path, IN_MODIFY | IN_ONESHOT) >= 0 for path in self.paths)

    def seen_at(self) -> float:
        """When the output was last written to, as far as a look now tells."""
        written = False
        try:
            while os.read(self.fd, 4096):  # the events say only that there were writes
                written = True
        except OSError:  # BlockingIOError: none (more)
            pass
        if written or self.blind:
            self.last = time.monotonic()
            self.blind = self.blind or not self.arm()  # (never seen to fail)
        return self.last

    def close(self) -> None:
        os.close(self.fd)


def watch(destinations: tuple[int, int], idle_timeout: float) -> Activity | None:
    """An Activity of both destinations, or None when either cannot be watched in place."""
    if not all(_watchable(fd) for fd in destinations):
        return None
    notify = _inotify()
    if notify is None:
        return None
    init, add = notify
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        return None
    paths = [f"/proc/self/fd/{each}".encode() for each in dict.fromkeys(destinations)]
    activity = Activity(fd, add, paths, idle_timeout)
    if not activity.arm():
        activity.close()
        return None
    return activity


def _watchable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if stat.S_ISREG(mode) or (stat.S_ISCHR(mode) and os.isatty(fd)):
        return True
    return stat.S_ISFIFO(mode) and _pipes_reported()


def _pipes_reported() -> bool:
    """Whether a write to a pipe of the runner's own is reported (once a process)."""
    global _pipes_report  # noqa: PLW0603 - what the kernel does does not change
    if _pipes_report is None:
        _pipes_report = False
        notify = _inotify()
        if notify is not None:
            init, add = notify
            read, write = os.pipe()
            fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                if fd >= 0 and add(fd, f"/proc/self/fd/{write}".encode(), IN_MODIFY) >= 0:
                    os.write(write, b"x")
                    _pipes_report = bool(os.read(fd, 4096))
            except OSError:
                pass
            finally:
                for each in (read, write, fd) if fd >= 0 else (read, write):
                    os.close(each)
    return _pipes_report


def _inotify() -> tuple[Callable[[int], int], Callable[[int, bytes, int], int]] | None:
    """libc's inotify_init1 and inotify_add_watch; None where there are none."""
    import ctypes  # noqa: PLC0415 - only with --idle-timeout

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
