"""Process spawning: a command in its own session, ended with its whole group."""

from __future__ import annotations

import errno
import os
import signal
import stat

from adapters.child import Child
from adapters.reaper import become_subreaper, descendants
from domain.attempts import Outcome
from domain.errors import ExitStatus, Interrupted
from domain.words import shell_words

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from adapters.activity import Activity
    from adapters.capture import Capture
    from adapters.child import Guard
    from adapters.relay import Relay
    from adapters.signals import SignalWatch
    from adapters.watcher import Watcher


RESET_IN_CHILD = (signal.SIGPIPE, signal.SIGXFSZ)
"""Python ignores these; the command gets their default behaviour back."""


class PosixProcessRunner:
    """Runs a command with posix_spawn, never through a shell, in a new session.

    The command's process group is signalled as a whole: on timeout (SIGTERM,
    then SIGKILL after the grace), and with each signal the runner receives.
    `inherit` names descriptors the command keeps, such as the apply lock.
    `guard` is a lock that can be lost: watched in the same wait, and when it is
    lost the command is stopped as on a timeout. `environ` replaces the runner's
    own environment as the base of the command's. `stop_signal` ends a command on
    timeout or a lost lock (SIGKILL skips the grace). With `foreground`, the command
    stays in the runner's process group (and terminal), and only the command itself
    is signalled, as with `timeout --foreground`. With `preserve_status`, a timed-out
    attempt's rc is the command's own status, not 124 (`timeout --preserve-status`).

    When stdin is a regular file, every attempt reads it from where the first began.
    """

    def __init__(
        self,
        watch: SignalWatch,
        inherit: Callable[[], tuple[int, ...]] = tuple,
        *,
        guard: Guard | None = None,
        environ: Mapping[str, str] | None = None,
        stop_signal: int = signal.SIGTERM,
        foreground: bool = False,
        preserve_status: bool = False,
        capture: Capture | None = None,
        watcher: Watcher | None = None,
        idle_timeout: float = 0.0,
    ) -> None:
        self.watch = watch
        self.inherit = inherit
        self.guard = guard
        self.environ = os.environ if environ is None else environ
        self.stop_signal = stop_signal
        self.foreground = foreground
        self.preserve_status = preserve_status
        self.capture = capture
        self.watcher = watcher
        self.idle_timeout = idle_timeout
        """--idle-timeout (seconds, 0: none): the output is then relayed (adapters.relay)."""
        """Started before the first attempt that has a limit or a state lock to keep."""
        self.stdin_start = _regular_file_offset(0)
        self.subreaper = become_subreaper()

    def run(
        self, cmd: list[str], timeout: float, kill_after: float, env: dict[str, str] | None = None
    ) -> Outcome:
        early = self.watch.pending()
        if early:
            raise Interrupted(early[0])
        fds = self.inherit()
        for fd in fds:
            os.set_inheritable(fd, True)
        if self.stdin_start is not None:
            os.lseek(0, self.stdin_start, os.SEEK_SET)
        watcher = self._watcher(timeout)
        before = frozenset(descendants(os.getpid())) if self.subreaper else frozenset()
        relay, activity, actions = self._outputs()
        try:
            started = self._start(cmd, {**self.environ, **env} if env else self.environ, actions)
        finally:
            for fd in fds:
                os.set_inheritable(fd, False)
            if relay is not None:
                relay.handed()
        if isinstance(started, Outcome):
            return self._ended(started, relay, activity)
        child = Child(started, self, timeout, kill_after, before)
        child.activity, child.idle_timeout, child.watcher = (
            activity or relay,
            self.idle_timeout,
            watcher,
        )
        child.run_id = (env or {}).get("RUNNER_RUN_ID", "").encode() or None
        self.watch.group = None if self.foreground else started
        if watcher is not None:
            watcher.attempt(started, child.deadline)
        try:
            return self._ended(child.wait(), relay, activity)
        except BaseException:
            child.kill_and_reap()
            raise
        finally:
            self.watch.group = None
            if watcher is not None:
                watcher.ended()

    def _outputs(self) -> tuple[Relay | None, Activity | None, list[tuple[int, int, int]]]:
        """Where the command's stdout and stderr go: --output-on-failure's files, else the
        runner's own (inherited, untouched); with --idle-timeout, watched there where they
        can be, else through the runner, as for a ping's body in the order written."""
        capture = self.capture
        if capture is None and self.idle_timeout <= 0:
            return None, None, []
        together = _same_file(1, 2)
        kept = None if capture is None else capture.open(together)
        ordered = capture is not None and capture.ordered and kept is not None and not together
        activity = relay = None
        if self.idle_timeout > 0 and not ordered:
            from adapters.activity import watch  # noqa: PLC0415 - only with --idle-timeout

            activity = watch(kept or (1, 2), self.idle_timeout)
        if ordered or (self.idle_timeout > 0 and activity is None):
            from adapters.relay import Relay  # noqa: PLC0415 - only when output is watched

            seen = capture.seen if capture is not None and ordered else None
            relay = Relay(kept or (1, 2), together, seen)
            kept = relay.open()
        if kept is None:
            return relay, activity, []
        dups = [(os.POSIX_SPAWN_DUP2, kept[0], 1), (os.POSIX_SPAWN_DUP2, kept[1], 2)]
        return relay, activity, dups

    def _start(
        self, cmd: list[str], environment: Mapping[str, str], actions: list[tuple[int, int, int]]
    ) -> int | Outcome:
        """The command's pid, or the Outcome of a command that could not be run."""
        try:
            return self._spawn(cmd, environment, actions)
        except OSError as exc:
            rc = ExitStatus.NOT_FOUND if exc.errno == errno.ENOENT else ExitStatus.NOT_EXECUTABLE
            why = exc.strerror or str(exc)
            return Outcome(rc, error=f"cannot run {shell_words(cmd[:1])}: {why}")
        except ValueError as exc:  # '' names no program, as `env ''` says
            why = str(exc) if cmd[0] else os.strerror(errno.ENOENT)
            return Outcome(
                ExitStatus.NOT_FOUND, error=f"cannot run {shell_words(cmd[:1]) or repr('')}: {why}"
            )

    def keep_watch(self) -> None:
        """Start the watcher now: a lock that can be lost was just taken, and its lease row
        must go if the runner dies before its first attempt (deciding, say)."""
        self._watcher(0.0)

    def _watcher(self, timeout: float) -> Watcher | None:
        """The watcher, for an attempt with a limit or a lock to keep (started before the look
        at what runs already, which it is not part of)."""
        watcher = self.watcher if timeout > 0 or self.guard is not None else None
        if watcher is not None and not watcher.pid:
            watcher.start()
            if self.guard is not None and watcher.pid:
                self.guard.watch_with(watcher)
        return watcher if watcher is not None and watcher.pid else None

    def _spawn(
        self, cmd: list[str], environment: Mapping[str, str], actions: list[tuple[int, int, int]]
    ) -> int:
        """Start `cmd` (found on PATH). A script with no `#!` line is run by /bin/sh, as
        `timeout`, `flock` and bash run it; a file that is no text stays an error."""
        try:
            return self._spawn_as(cmd[0], cmd, environment, actions)
        except OSError as exc:
            script = _script(cmd[0]) if exc.errno == errno.ENOEXEC else None
            if script is None:
                raise
        return self._spawn_as("/bin/sh", ["/bin/sh", script, *cmd[1:]], environment, actions)

    def _spawn_as(
        self,
        program: str,
        argv: list[str],
        environment: Mapping[str, str],
        actions: list[tuple[int, int, int]],
    ) -> int:
        return os.posix_spawnp(
            program,
            argv,
            environment,
            setsid=not self.foreground,
            setsigdef=RESET_IN_CHILD,
            file_actions=actions,
        )

    def _ended(
        self, outcome: Outcome, relay: Relay | None = None, activity: Activity | None = None
    ) -> Outcome:
        """Tell the capture (if any) how the attempt it holds ended, once the relay (if any)
        has moved the last of the output."""
        if relay is not None:
            relay.close()
        if activity is not None:
            activity.close()
        if self.capture is not None:
            self.capture.ended(outcome.rc)
        return outcome


def _script(word: str) -> str | None:
    """The file `word` names (on PATH unless it holds a /) if it reads as text, as bash tells a
    script from a binary: no NUL in its first line's first 80 bytes."""
    import shutil  # noqa: PLC0415 - only for a script with no #! line

    path = word if "/" in word else shutil.which(word)
    try:
        with open(path or "", "rb") as handle:
            start = handle.read(80)
    except OSError:
        return None
    return path if b"\0" not in start.split(b"\n", 1)[0] else None


def _same_file(first: int, second: int) -> bool:
    """Whether two descriptors lead to one file, pipe or terminal (`2>&1`)."""
    try:
        one, other = os.fstat(first), os.fstat(second)
    except OSError:
        return False
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def _regular_file_offset(fd: int) -> int | None:
    """Where a regular file on `fd` is read from now; None for a pipe, a terminal, none."""
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        pass
    return None
