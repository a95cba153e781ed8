"""A process outside the command's group that ends the command when the runner cannot.

A runner killed with SIGKILL (the OOM killer, a container runtime) or stopped with
SIGSTOP would leave its command running past every limit: its --timeout, its
--deadline, and, with a state lock, the lease another host waits on. The watcher is
forked before the first attempt of a run that has a limit or a state lock, and told
through a pipe what the limits are. When the pipe closes with an attempt under way
(the runner is gone), or when a limit passes that the runner did not act on (it is
stopped), it ends the command as the runner would: --signal to the command's group
and to everything the command started, SIGKILL after --kill-after. With a state lock
it then deletes the run's lease row, so the lock is free at once, as a flock is when
its last holder ends.

It finds what the command started as the runner's own sweep does: the descendants of
the runner (a child subreaper), looked for every second while an attempt runs, and
those of the command at the moment it acts; a process is signalled only while it is
the one found (same pid, same start time).
"""

from __future__ import annotations

import os
import select
import signal
import time

from adapters.forked import become_helper
from adapters.reaper import descendants, group_alive, started_at
from adapters.signals import ENDING, JOB_CONTROL

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

MARGIN = 0.5
"""Seconds after a limit before the watcher acts: a runner that still runs acts first."""
LOOK_EVERY = 1.0
"""Seconds between two looks for the processes an attempt started."""
KILL_WAIT = 5.0
"""Seconds to wait for SIGKILLed processes to vanish."""
RELEASE_WAIT = 30.0
"""Seconds the lease row's deletion may take before the watcher gives up on it."""
NEVER = float("inf")


class Watcher:
    """The runner's side: starts the watcher once, and tells it of each attempt.

    Times are the monotonic clock's (the same in every process of the machine).
    `release`, run in the watcher, deletes the run's lease row on a connection of its own.
    """

    def __init__(
        self, stop_signal: int, kill_after: float, release: Callable[[], None] | None = None
    ) -> None:
        self.stop_signal = stop_signal
        self.kill_after = kill_after
        self.release = release
        self.pid = 0
        self._write = -1

    def start(self) -> None:
        """Fork the watcher, once; where it cannot be forked the run goes on without one."""
        if self.pid:
            return
        read, write = os.pipe()
        runner = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return
        if pid == 0:
            code = 1
            try:
                _serve(read, runner, self.stop_signal, self.kill_after, self.release)
                code = 0
            finally:
                os._exit(code)
        os.close(read)
        self.pid, self._write = pid, write

    def attempt(self, group: int, stop_at: float | None) -> None:
        """An attempt runs in process group `group`; the runner stops it at `stop_at`."""
        self._tell(f"A {group} {NEVER if stop_at is None else stop_at!r}")

    def stopping(self, kill_at: float) -> None:
        """The runner has asked the command to end, and SIGKILLs it at `kill_at`."""
        self._tell(f"S {kill_at!r}")

    def ended(self) -> None:
        """The attempt is over: nothing it started is left."""
        self._tell("E")

    def lease_until(self, until: float) -> None:
        """A renewal was confirmed: the lease holds for the command until `until`."""
        self._tell(f"L {until!r}")

    def released(self) -> None:
        """The runner deleted its lease row itself."""
        self._tell("F")

    def _tell(self, line: str) -> None:
        if self._write < 0:
            return
        try:
            os.write(self._write, line.encode() + b"\n")  # one write: whole, under PIPE_BUF
        except OSError:  # the watcher is gone: the run goes on as without one
            os.close(self._write)
            self._write = -1


class _Attempt:
    """What the watcher knows of the attempt under way."""

    def __init__(self, group: int, stop_at: float) -> None:
        self.group = group
        self.stop_at = stop_at
        self.kill_at = NEVER
        self.found: dict[int, int] = {}
        """The processes the attempt started, by pid: their start times."""


def _serve(
    read: int, runner: int, stop_signal: int, kill_after: float, release: Callable[[], None] | None
) -> None:
    """The watcher: read the runner's lines until it goes, ending the command when due."""
    become_helper(keep=(read,))
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    os.setpgid(0, 0)  # out of the runner's group: a terminal's ^C or ^Z is not for it
    for signum in (*ENDING, *JOB_CONTROL):
        signal.signal(signum, signal.SIG_IGN)  # a signal to every process: the runner's to act on
    state = _State(runner, stop_signal, kill_after, release)
    rest = b""
    while True:
        wait = state.tick()
        if not select.select([read], [], [], wait)[0]:
            continue
        data = os.read(read, 4096)
        if not data:  # the runner is gone
            state.runner_gone()
            return
        lines = (rest + data).split(b"\n")
        rest = lines.pop()
        for line in lines:
            state.told(line)


class _State:
    """What the watcher knows: the attempt under way, the lease, whether the row is held."""

    def __init__(
        self, runner: int, stop_signal: int, kill_after: float, release: Callable[[], None] | None
    ) -> None:
        self.runner, self.me = runner, os.getpid()
        self.stop_signal, self.kill_after = stop_signal, kill_after
        self.release = release
        self.attempt: _Attempt | None = None
        self.lease = NEVER
        self.looked = 0.0

    def told(self, line: bytes) -> None:
        kind, *numbers = line.split()
        attempt = self.attempt
        if kind == b"A":
            self.attempt, self.looked = _Attempt(int(numbers[0]), float(numbers[1])), 0.0
        elif kind == b"S" and attempt is not None:
            attempt.kill_at = float(numbers[0])
            attempt.stop_at = NEVER  # asked to end already: the SIGKILL is what is due
        elif kind == b"E":
            self.attempt = None
        elif kind == b"L":
            self.lease = float(numbers[0])
        elif kind == b"F":
            self.release = None

    def tick(self) -> float | None:
        """Act on what is due; the seconds until something is (None: nothing is)."""
        attempt = self.attempt
        if attempt is None:
            return None
        now = time.monotonic()
        if now - self.looked >= LOOK_EVERY:
            _look(attempt, self.runner, self.me)
            self.looked = now
        if attempt.kill_at != NEVER:  # the runner is ending it: only its SIGKILL can be late
            due = attempt.kill_at + MARGIN
        else:
            due = min(attempt.stop_at, self.lease) + MARGIN
        if now < due:
            return min(due, self.looked + LOOK_EVERY) - now
        self.end()  # the runner did not act: it is stopped
        if self.lease <= now:
            self.free()
        return None

    def end(self) -> None:
        if self.attempt is not None:
            _end(self.attempt, self.runner, self.me, self.stop_signal, self.kill_after)
            self.attempt = None

    def free(self) -> None:
        """Delete the lease row, bounded: a deletion that hangs ends with the watcher."""
        release, self.release = self.release, None
        if release is None:
            return
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(int(RELEASE_WAIT))
        try:
            release()
        except Exception:  # the row then expires on the server by itself
            pass
        signal.alarm(0)

    def runner_gone(self) -> None:
        self.end()
        self.free()


def _look(attempt: _Attempt, runner: int, me: int) -> None:
    """Note what runs under the runner now (the attempt's processes, wherever they went)."""
    for pid in descendants(runner, frozenset({me})):
        if pid not in attempt.found:
            start = started_at(pid)
            if start is not None:
                attempt.found[pid] = start


def _end(attempt: _Attempt, runner: int, me: int, stop_signal: int, kill_after: float) -> None:
    """End the attempt as the runner would: `stop_signal` (and SIGCONT, so that a stopped
    process can act on it), SIGKILL after `kill_after`, or at the runner's own SIGKILL time
    when it had asked already; then wait for everything to vanish."""
    _look(attempt, runner, me)
    for pid in descendants(attempt.group):
        attempt.found.setdefault(pid, started_at(pid) or 0)
    limit = attempt.kill_at
    if limit == NEVER:
        limit = time.monotonic() + kill_after
        if stop_signal != signal.SIGKILL:
            _signal(attempt, stop_signal)
    _signal(attempt, signal.SIGCONT)
    while time.monotonic() < limit and _left(attempt):
        time.sleep(0.01)
    _signal(attempt, signal.SIGKILL)
    limit = time.monotonic() + KILL_WAIT
    while time.monotonic() < limit and _left(attempt):
        time.sleep(0.01)


def _signal(attempt: _Attempt, signum: int) -> None:
    try:
        os.killpg(attempt.group, signum)
    except (ProcessLookupError, PermissionError):
        pass
    for pid, start in attempt.found.items():
        if started_at(pid) == start:
            try:
                os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):
                pass


def _left(attempt: _Attempt) -> bool:
    """Whether anything of the attempt still runs (zombies do not)."""
    if group_alive(attempt.group):
        return True
    return any(started_at(pid) == start for pid, start in attempt.found.items())
