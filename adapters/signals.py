"""Signals as events: recorded by the kernel into a pipe, read when the runner waits."""

from __future__ import annotations

import os
import select
import signal

ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
"""Signals that end the run: passed on to the command, then the runner ends (128+N)."""

PASSED_ON = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGWINCH)
"""Signals passed on to the command as they are; what follows is the command's choice."""

FORWARDED = ENDING + PASSED_ON
"""Every signal a waiter is told of."""

JOB_CONTROL = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
"""Signals that stop the runner: the command's group is stopped with it."""

REDIRECTED = (*FORWARDED, *JOB_CONTROL, signal.SIGCONT)
"""Signals whose default action would stop or end the runner behind its command's back."""

REENTER_BY_SIGNAL = frozenset({signal.SIGINT, signal.SIGQUIT})
"""After these the runner ends by the signal itself, so that a calling shell stops too."""

LONGEST_WAIT = 3600.0
"""Seconds one wait may block; callers loop, so a year-long timeout fits any time_t."""


def _ignore(signum: int, frame: object) -> None:
    """The wakeup pipe is the record; the Python-level handler has nothing to do."""


def _quit(signum: int, frame: object) -> None:
    """SIGQUIT once the work is done: the process ends by it, with no core file."""
    end_by_signal(signum)


class SignalWatch:
    """Catches the runner's signals from the moment it is built, whatever its parent left.

    Each signal is written as one byte into a non-blocking pipe by the C-level
    handler (`signal.set_wakeup_fd`), so none is lost between two checks and a
    wait wakes at once. Nothing raises inside a handler: the runner is never
    interrupted in the middle of writing a marker or spawning a process.

    The signals it relies on are unblocked, since a parent may have blocked them;
    the command inherits that mask, so the signals passed on reach it. SIGCHLD is
    caught even when the parent ignored it. A signal of REDIRECTED that the parent
    ignored (as `nohup` does with SIGHUP) stays ignored, for the runner and its
    command alike. `group` is the process group that job control stops and
    continues with the runner, while a command runs.
    """

    def __init__(self) -> None:
        self.group: int | None = None
        self.ended: int | None = None
        """The first signal read that ends the run, once one has come."""
        self.inherited_mask = signal.pthread_sigmask(
            signal.SIG_UNBLOCK, (*REDIRECTED, signal.SIGCHLD)
        )
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous = {signal.SIGCHLD: signal.signal(signal.SIGCHLD, _ignore)}
        for signum in REDIRECTED:
            if signal.getsignal(signum) != signal.SIG_IGN:
                self._previous[signum] = signal.signal(signum, _ignore)

    def close(self) -> None:
        """Put back the handlers and mask that were there before (for embedding and tests)."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        signal.pthread_sigmask(signal.SIG_SETMASK, self.inherited_mask)
        os.close(self._read)
        os.close(self._write)

    def fileno(self) -> int:
        """The pipe's reading end: readable once a signal has come (for select)."""
        return self._read

    def wait(self, timeout: float | None, also: int | tuple[int, ...] | None = None) -> list[int]:
        """Wait up to `timeout` seconds (None: no limit) for any signal, or for `also` (one
        descriptor or several) to turn readable.

        Return the FORWARDED signals received since the last call, oldest first;
        SIGCHLD, and the descriptor `also` turning readable, only wake the waiter.
        A wait may end early (at most an hour) with nothing to report: callers
        check their own deadlines.
        """
        if timeout is None or timeout > 0:
            limit = LONGEST_WAIT if timeout is None else min(timeout, LONGEST_WAIT)
            extra = () if also is None else (also,) if isinstance(also, int) else also
            select.select([self._read, *extra], [], [], limit)
        return self.pending()

    def pending(self) -> list[int]:
        """The FORWARDED signals received since the last call, without waiting.

        A stop signal stops the runner here, with `group`; SIGCONT is passed on.
        """
        received: list[int] = []
        while True:
            try:
                chunk = os.read(self._read, 256)
            except BlockingIOError:
                return received
            if not chunk:
                return received
            for signum in chunk:
                if signum in FORWARDED:
                    received.append(signum)
                    if signum in ENDING and self.ended is None:
                        self.ended = signum
                elif signum in JOB_CONTROL:
                    self._suspend()
                elif signum == signal.SIGCONT:
                    self.signal_group(signal.SIGCONT)

    def put_back(self, received: list[int]) -> None:
        """Return signals read by a waiter that does not act on them (a ping), so that the
        next `pending` reports them to the one that does."""
        try:
            os.write(self._write, bytes(received))
        except BlockingIOError:  # a pipe full of signals: the waiter will still wake
            pass

    def final(self) -> list[int]:
        """Hand the ending signals back to their default action, then return what `pending`
        returns: from here on such a signal ends the process by itself, so none that comes
        on the way out is recorded and then lost (for work that has nothing left to
        protect). SIGQUIT is ended by `end_by_signal`, from a handler, so that it writes
        no core file (and `resource` is imported only if one comes)."""
        for signum in ENDING:
            if signal.getsignal(signum) is _ignore:
                signal.signal(signum, _quit if signum == signal.SIGQUIT else signal.SIG_DFL)
        return self.pending()

    def signal_group(self, signum: int) -> None:
        """Send `signum` to `group`; one that has ended, or that we may not signal, is left."""
        if self.group is not None:
            try:
                os.killpg(self.group, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def _suspend(self) -> None:
        """Stop the command's group, then the runner; once continued, continue the group."""
        self.signal_group(signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGSTOP)
        self.signal_group(signal.SIGCONT)


def ending(received: list[int]) -> int | None:
    """The first signal of `received` that ends a run, or None."""
    return next((signum for signum in received if signum in ENDING), None)


def end_by_signal(signum: int) -> None:
    """End this process by `signum` at its default disposition (no core file for QUIT)."""
    if signum == signal.SIGQUIT:
        import resource  # noqa: PLC0415 - only on the way out

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signum,))
    os.kill(os.getpid(), signum)
