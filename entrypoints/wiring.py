"""The adapters the composition root builds for one invocation (cosmicpython's bootstrap).

`cli.main` takes a Wiring: this one builds the real adapters; tests hand it one of
fakes, so that the command line, the wiring and the domain run together in process
and cannot drift apart from the unit tests' world. Each adapter module is imported
only when the invocation needs it.
"""

from __future__ import annotations

import os

from entrypoints.environ import SCRUBBED

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

    from adapters.capture import Capture
    from adapters.signals import SignalWatch
    from domain.ports import AttemptSink, Clock, ProcessRunner
    from entrypoints.backends import Backend
    from entrypoints.invocation import Invocation


class Wiring:
    """The real adapters."""

    def watch(self) -> SignalWatch:
        from adapters.signals import SignalWatch

        return SignalWatch()

    def backend(self, invocation: Invocation, home: str, watch: SignalWatch) -> Backend | None:
        """The lock and markers the invocation needs: none for a run without --lock."""
        if invocation.action == "run" and invocation.lock is None:
            return None
        from entrypoints.backends import open_backend

        return open_backend(invocation, home, watch)

    def processes(
        self,
        invocation: Invocation,
        watch: SignalWatch,
        backend: Backend | None,
        capture: Capture | None,
    ) -> ProcessRunner:
        from adapters.process import PosixProcessRunner

        environ = os.environ if backend is None else backend.environ
        if any(name in environ for name in SCRUBBED):
            from entrypoints.environ import scrubbed_environ

            environ = scrubbed_environ(environ)
        guard = None if backend is None else backend.guard
        policy, watcher = invocation.policy, None
        if policy.timeout > 0 or policy.deadline > 0 or policy.idle_timeout or guard is not None:
            from adapters.watcher import Watcher

            release = None if guard is None else guard.release_elsewhere
            watcher = Watcher(invocation.stop_signal, policy.kill_after, release)
        runner = PosixProcessRunner(
            watch,
            inherit=tuple if backend is None else getattr(backend.lock, "fds", tuple),
            guard=guard,
            environ=environ,
            stop_signal=invocation.stop_signal,
            preserve_status=invocation.preserve_status,
            foreground=invocation.foreground,
            capture=capture,
            watcher=watcher,
            idle_timeout=policy.idle_timeout,
        )
        if guard is not None:
            guard.on_held = runner.keep_watch
        return runner

    def clock(self, watch: SignalWatch) -> Clock:
        from adapters.clock import SystemClock

        return SystemClock(watch)

    def random(self) -> Callable[[], float]:
        from adapters.clock import random_fraction

        return random_fraction

    def sink(self, path: str, warn: Callable[[str], None]) -> Sink:
        from adapters.jsonl import JsonlSink

        return JsonlSink(path, warn)


if TYPE_CHECKING:
    from typing import Protocol

    class Sink(AttemptSink, Protocol):
        def close(self) -> None: ...
