"""Wiring the state backends: the state folder (one host) or PostgreSQL (many hosts).

Loaded only by the subcommands that take a lock or read markers.
"""

from __future__ import annotations

import os

from domain.apply import shell_words

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Mapping

    from adapters.lock import FcntlLock
    from adapters.markers import FileMarkerStore
    from adapters.postgres.lock import PgLock, Tables
    from adapters.postgres.markers import PgMarkerStore
    from adapters.signals import SignalWatch
    from entrypoints.invocation import Invocation

WHAT_MAX = 60
"""Characters of the command kept in a busy lock's message."""


class Backend:
    """A lock, the markers beside it, and what the command's environment may carry.

    `guard` is the lock again when it can be lost while its command runs.
    """

    def __init__(
        self,
        lock: FcntlLock | PgLock,
        markers: FileMarkerStore | PgMarkerStore | None,
        *,
        environ: Mapping[str, str],
        tables: Tables | None = None,
        guard: PgLock | None = None,
    ) -> None:
        self.lock = lock
        self.markers = markers
        self.environ = environ
        self.tables = tables
        self.guard = guard

    def close(self) -> None:
        if self.tables is not None:
            self.tables.session.close()


def open_backend(invocation: Invocation, home: str, watch: SignalWatch) -> Backend:
    """The lock (apply's, forget's, or run's --lock) and, but for run, the markers."""
    action = invocation.action
    what = f"{action} {invocation.name}"
    if action == "run":
        words = shell_words(invocation.cmd)
        what = "run " + (words if len(words) <= WHAT_MAX else words[: WHAT_MAX - 3] + "...")
    if invocation.state_url is None:
        return _files(invocation, os.path.join(home, "state"), watch, what)
    return _postgres(invocation, watch, what)


def _files(invocation: Invocation, state: str, watch: SignalWatch, what: str) -> Backend:
    from adapters.lock import FcntlLock
    from adapters.markers import FileMarkerStore

    if invocation.action == "run":
        assert invocation.lock is not None
        lock = FcntlLock(invocation.lock, watch, what=what, slots=invocation.slots)
        return Backend(lock, None, environ=os.environ)
    lock = FcntlLock(os.path.join(state, "lock"), watch, what=what, create_folder=True)
    return Backend(lock, FileMarkerStore(state), environ=os.environ)


def _postgres(invocation: Invocation, watch: SignalWatch, what: str) -> Backend:
    from adapters.postgres.lock import PgLock, Tables
    from adapters.postgres.markers import PgMarkerStore
    from adapters.postgres.session import Session
    from adapters.postgres.url import StateUrl

    assert invocation.state_url is not None
    url = StateUrl(invocation.state_url)
    session = Session(
        url,
        watch,
        connect_timeout=invocation.connect_timeout,
        lease=invocation.lease,
        kill_after=invocation.policy.kill_after,
    )
    tables = Tables(session, invocation.schema)
    namespace = invocation.namespace
    environ = dict(os.environ)
    if "RUNNER_STATE_URL" in environ:
        environ["RUNNER_STATE_URL"] = url.shown
    if invocation.action == "run":
        assert invocation.lock is not None
        lock = PgLock(
            session, tables, namespace, f"run:{invocation.lock}", slots=invocation.slots, what=what
        )
        return Backend(lock, None, environ=environ, tables=tables, guard=lock)
    lock = PgLock(session, tables, namespace, "apply", what=what)
    markers = PgMarkerStore(tables, namespace)
    return Backend(lock, markers, environ=environ, tables=tables, guard=lock)
