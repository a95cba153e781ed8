"""The composition root: reads the command line, builds the adapters, maps errors to codes."""

from __future__ import annotations

import os
import signal
import sys

from domain.errors import ExitStatus, Interrupted, RunnerError
from entrypoints.args import Invocation, parse

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn, TextIO

    from adapters.lock import FcntlLock
    from adapters.markers import FileMarkerStore
    from adapters.postgres import PgAdvisoryLock, PgMarkerStore
    from adapters.signals import SignalWatch

PROJECT_HOME = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
"""The folder of runner.py: the home when neither --home nor RUNNER_HOME is given."""


class StreamConsole:
    """Answers on stdout; `runner:` lines on stderr, one line each."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    def say(self, text: str, *, always: bool = False) -> None:
        if always or not self.quiet:
            _write(sys.stdout, text)

    def info(self, text: str) -> None:
        if not self.quiet:
            self.warn(text)

    def warn(self, text: str) -> None:
        _write(sys.stderr, "runner: " + " ".join(text.split("\n")))


def _write(stream: TextIO | None, line: str) -> None:
    """Write one line; a closed or broken stream is not worth a traceback."""
    if stream is None:
        return
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the runner; return its exit code. No exception escapes for any input.

    The signal handlers stay in place after it returns; see `exit_with`.
    """
    from adapters.signals import SignalWatch

    watch = SignalWatch()
    console = StreamConsole()
    try:
        invocation = parse(sys.argv[1:] if argv is None else argv, os.environ)
        console.quiet = invocation.quiet
        if invocation.action in ("help", "version"):
            from entrypoints.usage import USAGE, VERSION

            text = USAGE.rstrip("\n") if invocation.action == "help" else f"runner.py {VERSION}"
            console.say(text, always=True)
            return ExitStatus.OK
        if invocation.action in ("run", "apply"):
            return _execute(invocation, watch, console)
        return _manage(invocation, watch, console)
    except Interrupted as stop:
        return stop.exit_code
    except RunnerError as error:
        console.warn(f"error: {error}" if error.status == ExitStatus.RUNNER_ERROR else str(error))
        return error.status
    except Exception as bug:  # the promise is one line and no traceback, for any input
        console.warn(f"internal error: {type(bug).__name__}: {bug}")
        return ExitStatus.RUNNER_ERROR


def _execute(invocation: Invocation, watch: SignalWatch, console: StreamConsole) -> int:
    """Wire the real adapters; a run without --lock loads nothing of locks and markers."""
    from adapters.clock import SystemClock, random_fraction
    from adapters.jsonl import JsonlSink
    from adapters.process import PosixProcessRunner
    from domain import flows

    home = invocation.home or PROJECT_HOME
    state = os.path.join(home, "state")
    backend = _backend(invocation, state) if invocation.action == "apply" else None
    lock = backend.lock if backend is not None else _run_lock(invocation)
    processes = PosixProcessRunner(watch, inherit=tuple if lock is None else lock.fds)
    sink = JsonlSink(os.path.join(home, "runs.jsonl"), console.warn)
    run_id = os.urandom(8).hex()
    attempts = flows.Attempts(processes, SystemClock(watch), sink, console, run_id, random_fraction)
    try:
        if backend is None:
            return flows.run(invocation.cmd, invocation.policy, attempts=attempts, lock=lock)
        from domain.apply import apply

        return apply(
            invocation.name,
            invocation.cmd,
            invocation.policy,
            dry_run=invocation.dry_run,
            attempts=attempts,
            lock=backend.lock,
            markers=backend.markers,
            console=console,
        )
    finally:
        sink.close()
        if backend is not None:
            backend.close()


def _manage(invocation: Invocation, watch: SignalWatch, console: StreamConsole) -> int:
    """stats, applied and forget."""
    home = invocation.home or PROJECT_HOME
    if invocation.action == "stats":
        from entrypoints.stats import stats

        return stats(invocation, home, console)

    backend = _backend(invocation, os.path.join(home, "state"))
    try:
        if invocation.action == "applied":
            from entrypoints.stats import applied

            return applied(backend.markers.entries(), invocation.json, console)

        from adapters.clock import SystemClock
        from domain.manage import forget

        return forget(
            invocation.name,
            dry_run=invocation.dry_run,
            lock_wait=invocation.policy.lock_wait,
            lock=backend.lock,
            markers=backend.markers,
            clock=SystemClock(watch),
            console=console,
        )
    finally:
        backend.close()


class _Backend:
    """apply's lock and markers, from the state folder or from PostgreSQL."""

    def __init__(
        self,
        lock: FcntlLock | PgAdvisoryLock,
        markers: FileMarkerStore | PgMarkerStore,
        close: Callable[[], None] = lambda: None,
    ) -> None:
        self.lock = lock
        self.markers = markers
        self.close = close


def _backend(invocation: Invocation, state: str) -> _Backend:
    if invocation.state_url is None:
        from adapters.lock import FcntlLock
        from adapters.markers import FileMarkerStore

        lock = FcntlLock(os.path.join(state, "lock"), create_folder=True)
        return _Backend(lock, FileMarkerStore(state))

    from adapters.postgres import PgAdvisoryLock, PgMarkerStore, PostgresState

    database = PostgresState(invocation.state_url, invocation.namespace, invocation.connect_timeout)
    return _Backend(PgAdvisoryLock(database), PgMarkerStore(database), database.close)


def _run_lock(invocation: Invocation) -> FcntlLock | None:
    """run's --lock FILE, or none."""
    if invocation.lock is None:
        return None
    from adapters.lock import FcntlLock

    return FcntlLock(invocation.lock)


def exit_with(status: int) -> NoReturn:
    """Exit with `status`, ignoring signals that come once the work is done.

    Python puts back the default handlers while it shuts down; a SIGTERM in that
    window would otherwise kill a runner whose apply has already succeeded.
    """
    from adapters.signals import FORWARDED

    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    sys.exit(status)
