"""Wiring the state backends: the state folder (one host) or PostgreSQL (many hosts).

Loaded only by the subcommands that take a lock or read markers.
"""

from __future__ import annotations

import os

from domain.words import shell_words
from entrypoints.environ import scrubbed_environ

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Mapping

    from adapters.postgres.keeper import LeaseKeeper
    from adapters.postgres.lock import PgLock
    from adapters.postgres.session import Session
    from adapters.postgres.tables import Tables
    from adapters.signals import SignalWatch
    from domain.ports import Lock, MarkerStore
    from entrypoints.invocation import Invocation

WHAT_MAX = 60
"""Characters of the command kept in a busy lock's message."""


class Backend:
    """A lock, the markers beside it, and what the command's environment may carry.

    `guard` is the lock again when it can be lost while its command runs.
    """

    def __init__(
        self,
        lock: Lock,
        markers: MarkerStore | None,
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
        named = "/" not in invocation.lock  # a NAME: one lock whatever the current folder
        path = os.path.join(state, f"run:{invocation.lock}.lock") if named else invocation.lock
        from adapters.hold import HeldLock

        flock = FcntlLock(path, watch, what=what, slots=invocation.slots, create_folder=named)
        return Backend(HeldLock(flock, invocation.policy.hold, watch), None, environ=os.environ)
    home = os.path.join(state, "lock")
    markers = FileMarkerStore(state)
    if invocation.lock_scope == "name" and invocation.action == "apply":
        from adapters.scoped import NameLock

        outer = FcntlLock(home, watch, create_folder=True, shared=True)
        inner = FcntlLock(os.path.join(state, f"{invocation.name}.lock"), watch, what=what)
        return Backend(NameLock(outer, inner), markers, environ=os.environ)
    lock = FcntlLock(home, watch, what=what, create_folder=True)
    return Backend(lock, markers, environ=os.environ)


def _session(invocation: Invocation, watch: SignalWatch | None, limit: float) -> Session:
    """A session with the state URL's server; calls bounded by `limit` seconds."""
    from adapters.postgres.session import Session
    from adapters.postgres.url import StateUrl

    assert invocation.state_url is not None
    url = StateUrl(invocation.state_url)
    return Session(url, watch, connect_timeout=invocation.connect_timeout, limit=limit)


def pg_tables(invocation: Invocation, watch: SignalWatch) -> Tables:
    """The schema's tables, on a session of the main thread's (signals end its calls)."""
    from adapters.postgres.tables import Tables

    return Tables(_session(invocation, watch, invocation.lease), invocation.schema)


def _postgres(invocation: Invocation, watch: SignalWatch, what: str) -> Backend:
    from adapters.clock import random_fraction
    from adapters.postgres.lock import PgLock
    from adapters.postgres.markers import PgMarkerStore

    lease = invocation.lease

    def keeper(lock: PgLock) -> LeaseKeeper:
        from adapters.postgres.keeper import LeaseKeeper

        return LeaseKeeper(lock, _session(invocation, None, lease / 3))

    tables = pg_tables(invocation, watch)
    namespace = invocation.namespace
    environ = scrubbed_environ(os.environ)
    if invocation.action == "run":
        name = f"run:{invocation.lock}"
    elif invocation.lock_scope == "name":
        name = f"apply:{invocation.name}"
    else:
        name = "apply"
    lock = PgLock(
        tables,
        namespace,
        name,
        slots=invocation.slots if invocation.action == "run" else 1,
        what=what,
        lease=lease,
        kill_after=invocation.policy.kill_after,
        keeper=keeper,
        random=random_fraction,
        hold=invocation.policy.hold if invocation.action == "run" else 0.0,
    )
    markers = None if invocation.action == "run" else PgMarkerStore(tables, namespace, lock)
    return Backend(lock, markers, environ=environ, tables=tables, guard=lock)
