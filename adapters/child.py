"""One started command: waited for, signalled on timeout, signals and a lost lock, and
swept up after, with everything it started."""

from __future__ import annotations

import os
import signal
import time

from adapters.reaper import alive, descendants, group_alive, signal_outside
from adapters.signals import PASSED_ON
from domain.attempts import Outcome
from domain.errors import ExitStatus

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Protocol

    from adapters.activity import Activity
    from adapters.relay import Relay
    from adapters.signals import SignalWatch
    from adapters.watcher import Watcher

    class Settings(Protocol):
        """What a child is started with (adapters.process.PosixProcessRunner's options)."""

        subreaper: bool
        watch: SignalWatch
        guard: Guard | None
        stop_signal: int
        preserve_status: bool
        foreground: bool

    class Guard(Protocol):
        """A lock that can be lost while its command runs (PostgreSQL's)."""

        def alert_fd(self) -> int | None:
            """A descriptor that turns readable when the lock may have been lost."""

        def next_due(self) -> float | None:
            """The monotonic time by which `poll` must be called again."""

        def poll(self) -> str | None:
            """Check without blocking; why the lock was lost, or None."""

        def watch_with(self, watcher: Watcher) -> None:
            """Tell `watcher` how long the lock holds, at every confirmation."""


SWEEP_INTERVAL = 0.01
SWEEP_INTERVAL_MAX = 0.25
"""Seconds between checks for what is left after the command's leader ended: from the
first, doubling to the second (an ending child wakes the runner sooner: SIGCHLD)."""

RESCAN = 1.0
"""Seconds between looks for new processes while a sweep tracks the ones it found."""

KILL_WAIT = 5.0
"""Seconds to wait for SIGKILLed processes to vanish (one stuck in the kernel may not)."""


class Child:
    """One started command: waited for, signalled, and swept up after."""

    def __init__(
        self,
        pid: int,
        runner: Settings,
        timeout: float,
        kill_after: float,
        before: frozenset[int],
    ) -> None:
        self.pid = pid
        self.subreaper = runner.subreaper
        self.before = before
        self.tracked: set[int] = set()
        self.scanned = 0.0
        self.watch = runner.watch
        self.guard = runner.guard
        self.stop_signal = runner.stop_signal
        self.preserve_status = runner.preserve_status
        self.foreground = runner.foreground
        self.kill_after = kill_after
        self.lost: str | None = None
        now = time.monotonic()
        self.deadline = now + timeout if timeout > 0 else None
        self.kill_at: float | None = None
        self.killed_at: float | None = None
        self.signalled: int | None = None
        self.timed_out = False
        self.watcher: Watcher | None = None
        """Told when the command is asked to end, so that it does not ask twice."""
        self.run_id: bytes | None = None
        """The run's RUNNER_RUN_ID: processes a nested runner started carry another."""
        self.activity: Activity | Relay | None = None
        self.idle_timeout = 0.0
        """--idle-timeout: with `activity` (the writes seen where the output goes, or the
        relay it goes through), an attempt that writes nothing for this long is ended as on
        a timeout."""
        self.idle = False

    def wait(self) -> Outcome:
        status = self._reap()
        while status is None:
            now = time.monotonic()
            if self.deadline is not None and now >= self.deadline:
                self.deadline = None
                if self.signalled is None and self.lost is None:
                    self.timed_out = True
                    self._terminate(self.stop_signal, now)
            idle_at = self._check_idle(now)
            guarded = self._check_guard(now)
            self._kill_when_due(now)
            due = guarded.next_due() if guarded else None
            wake = min(
                (t for t in (self.deadline, self.kill_at, due, idle_at) if t is not None),
                default=None,
            )
            timeout = None if wake is None else max(0.0, wake - now)
            self._on_signals(self.watch.wait(timeout, guarded.alert_fd() if guarded else None))
            status = self._reap()
        if self.guard is not None and self.lost is None and not self.timed_out:
            self.lost = self.guard.poll()  # ended by the watcher for a lapsed lease
        if self.deadline is not None and time.monotonic() >= self.deadline:
            # ended past its timeout while the runner was stopped: by the watcher, for it
            self.timed_out = self.signalled is None and self.lost is None
        ended = self.timed_out or self.signalled is not None or self.lost is not None
        if ended and not self.foreground:
            self._sweep()
        code = os.waitstatus_to_exitcode(status)
        died_of = -code if code < 0 else None
        if self.timed_out and not self.preserve_status:
            rc = int(ExitStatus.TIMEOUT)
        else:
            rc = code if code >= 0 else ExitStatus.SIGNAL_BASE - code
        timed_out: bool | str = "idle" if self.idle else self.timed_out
        return Outcome(
            rc, timed_out=timed_out, signal=self.signalled, lost=self.lost, died_of=died_of
        )

    def _check_idle(self, now: float) -> float | None:
        """End an attempt that wrote nothing for --idle-timeout, as a timeout; when to look
        again (None: not to)."""
        activity = self.activity if self.idle_timeout > 0 else None
        if activity is None or self.idle or self.timed_out or self.signalled is not None:
            return None
        idle_at = activity.seen_at() + self.idle_timeout
        if now < idle_at:
            return min(idle_at, now + activity.look_every)
        self.idle = self.timed_out = True
        self._terminate(self.stop_signal, now)
        return None

    def _check_guard(self, now: float) -> Guard | None:
        """Ask the lock whether it still holds; stop the command the moment it does not."""
        if self.guard is None or self.lost is not None:
            return None
        self.lost = self.guard.poll()
        if self.lost is None:
            return self.guard
        if self.signalled is None and not self.timed_out:
            self._terminate(self.stop_signal, now)
        return None

    def kill_and_reap(self) -> None:
        """Leave nothing behind when waiting failed: SIGKILL the group and everything the
        command started, collect the leader, and wait (KILL_WAIT at most) for the rest to go.

        The wait cannot use the signal watch, which may be what failed."""
        self._signal_group(signal.SIGKILL)
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        deadline = time.monotonic() + KILL_WAIT
        while time.monotonic() < deadline and (
            self._left() if self.subreaper else group_alive(self.pid)
        ):
            self._reap()
            time.sleep(SWEEP_INTERVAL)

    def _on_signals(self, received: list[int]) -> None:
        for signum in received:
            if signum in PASSED_ON:
                self._signal_group(signum)
            elif self.signalled is None:
                self.signalled = signum
                self._terminate(signum, time.monotonic())
            elif signum == self.signalled:
                self._kill()
            else:
                self._signal_group(signum)

    def _terminate(self, signum: int, now: float) -> None:
        """Ask the group to end; a stopped process is woken so that it can."""
        if signum == signal.SIGKILL:
            self._kill()
            return
        if self.watcher is not None:
            self.watcher.stopping(now + self.kill_after)
        self._signal_group(signum)
        self._signal_group(signal.SIGCONT)
        if self.kill_at is None and self.killed_at is None and self.kill_after > 0:
            self.kill_at = now + self.kill_after

    def _kill_when_due(self, now: float) -> None:
        if self.kill_at is not None and now >= self.kill_at:
            self._kill()

    def _kill(self) -> None:
        if self.watcher is not None and self.killed_at is None:
            self.watcher.stopping(time.monotonic())
        self._signal_group(signal.SIGKILL)
        self.kill_at = None
        if self.killed_at is None:
            self.killed_at = time.monotonic()

    def _signal_group(self, signum: int) -> None:
        """The whole group and every other process the command started, wherever it went;
        with --foreground, the command alone (as timeout does)."""
        if not self.foreground:
            self.watch.signal_group(signum)
            signal_outside(self._left(), self.watch.group, signum, self.run_id)
            return
        try:
            os.kill(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def _sweep(self) -> None:
        """After the leader ended: wait out the grace, then kill whatever the command left,
        in its group or out of it."""
        interval = SWEEP_INTERVAL
        while self._left() if self.subreaper else group_alive(self.pid):
            now = time.monotonic()
            self._kill_when_due(now)
            if self.killed_at is not None:
                if now - self.killed_at > KILL_WAIT:
                    return
                self._kill()
            self._on_signals(self.watch.wait(interval))
            interval = min(interval * 2, SWEEP_INTERVAL_MAX)
            self._reap()

    def _left(self) -> set[int]:
        """What the command started that still runs: the processes found before, checked
        one by one, and every RESCAN seconds (or when none is left) a new look for more."""
        if not self.subreaper:
            return set()
        self.tracked = {pid for pid in self.tracked if alive(pid)}
        now = time.monotonic()
        if not self.tracked or now - self.scanned >= RESCAN:
            self.tracked = descendants(os.getpid(), self.before)
            self.scanned = now
        return self.tracked

    def _reap(self) -> int | None:
        """Collect ended children, adopted orphans included; the command's status or None."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid == 0:
                return None
            if pid == self.pid:
                return status
