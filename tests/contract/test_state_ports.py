"""One contract for apply's state, run against both backends: the state folder and PostgreSQL."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from adapters.signals import SignalWatch
from domain.errors import LockBusy
from domain.ports import Lock, MarkerStore


class Backend:
    """Locks on one shared state (made as many times as a test likes), and markers over it."""

    def __init__(self, make_lock: Callable[[str, int, str], Lock], markers: MarkerStore) -> None:
        self.make_lock = make_lock
        self.markers = markers

    def lock(self, what: str = "apply db", *, slots: int = 1, name: str = "apply") -> Lock:
        return self.make_lock(what, slots, name)


@pytest.fixture(params=["files", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The state folder, or a PostgreSQL namespace of this test's own."""
    watch = request.getfixturevalue("watch")
    if request.param == "files":
        from adapters.lock import FcntlLock
        from adapters.markers import FileMarkerStore

        state = tmp_path / "state"

        def file_lock(what: str, slots: int, name: str) -> Lock:
            path = state / ("lock" if name == "apply" else name)
            return FcntlLock(str(path), watch, what=what, slots=slots, create_folder=True)

        yield Backend(file_lock, FileMarkerStore(str(state)))
        return
    from adapters.clock import random_fraction
    from adapters.postgres.keeper import LeaseKeeper
    from adapters.postgres.lock import PgLock
    from adapters.postgres.markers import PgMarkerStore
    from adapters.postgres.session import Session
    from adapters.postgres.tables import Tables
    from adapters.postgres.url import StateUrl

    url = request.getfixturevalue("pg_url")
    namespace = request.getfixturevalue("namespace")
    opened: list[Session] = []

    def session(signals: SignalWatch | None) -> Session:
        opened.append(Session(StateUrl(url), signals, connect_timeout=5, limit=5))
        return opened[-1]

    def pg_lock(what: str, slots: int, name: str) -> Lock:
        return PgLock(
            Tables(session(watch), "public"),
            namespace,
            name if name == "apply" else f"run:{name}",
            slots=slots,
            what=what,
            lease=5,
            kill_after=1,
            keeper=lambda lock: LeaseKeeper(lock, session(None)),
            random=random_fraction,
        )

    try:
        yield Backend(pg_lock, PgMarkerStore(Tables(session(watch), "public"), namespace))
    finally:
        for each in opened:
            each.close()


def test_the_lock_is_exclusive_until_released(backend: Backend) -> None:
    """A second holder is refused while the first holds the lock, and admitted after."""
    first, second = backend.lock(), backend.lock()
    first.acquire()
    with pytest.raises(LockBusy):
        second.acquire()
    first.release()
    second.acquire()
    second.release()


def test_markers_are_written_found_listed_and_removed(backend: Backend) -> None:
    """exists, write, entries, remove: the life of a marker."""
    markers = backend.markers
    assert not markers.exists("db")
    markers.write("db", when=1_800_000_000.5, run_id="r1", cmd=["migrate", "--to", "42"])
    assert markers.exists("db")
    assert not markers.exists("other")
    (entry,) = markers.entries()
    assert entry["name"] == "db"
    assert entry["run_id"] == "r1"
    assert entry["cmd"] == ["migrate", "--to", "42"]
    assert entry["host"]
    assert str(entry["time"]).startswith("2027-01-15T")
    assert markers.remove("db")
    assert not markers.exists("db")
    assert not markers.remove("db")


def test_writing_a_marker_twice_keeps_one(backend: Backend) -> None:
    """A second write (a forgotten and re-applied step) replaces the first."""
    markers = backend.markers
    markers.write("db", when=0, run_id="r1", cmd=["a"])
    markers.write("db", when=1, run_id="r2", cmd=["b"])
    entries = markers.entries()
    assert [(e["name"], e["run_id"]) for e in entries] == [("db", "r2")]


def test_arguments_that_are_not_utf8_are_kept(backend: Backend) -> None:
    """A command argument from undecodable bytes round-trips through the marker."""
    markers = backend.markers
    odd = b"\xff\xfe".decode("utf-8", "surrogateescape")
    markers.write("db", when=0, run_id="r", cmd=["x", odd])
    assert markers.entries()[0]["cmd"] == ["x", odd]


def test_fencing_tokens_strictly_increase_across_holders(backend: Backend) -> None:
    """Every acquisition, by any holder, gets a larger token than the one before."""
    tokens: list[int] = []
    for _ in range(3):
        for lock in (backend.lock(), backend.lock()):
            token = lock.acquire()
            assert token is not None
            tokens.append(token)
            lock.release()
    assert tokens == sorted(tokens)
    assert len(set(tokens)) == 6
    assert all(isinstance(token, int) and token > 0 for token in tokens)


def test_tokens_are_kept_per_lock(backend: Backend) -> None:
    """Two locks count apart: each starts from its own last token."""
    first = backend.lock(name="nightly")
    one = first.acquire()
    first.release()
    other = backend.lock(name="hourly")
    assert other.acquire() == one
    other.release()


def test_slots_admit_that_many_holders_and_no_more(backend: Backend) -> None:
    """--slots 2: two holders at once, the third is busy; a freed slot admits it."""
    holders = [backend.lock(f"run job{n}", slots=2, name="job") for n in range(3)]
    holders[0].acquire()
    holders[1].acquire()
    with pytest.raises(LockBusy) as busy:
        holders[2].acquire()
    assert "run job0 on " in str(busy.value)
    assert "run job1 on " in str(busy.value)
    holders[0].release()
    holders[2].acquire()
    holders[1].release()
    holders[2].release()


def test_a_busy_lock_names_its_holder(backend: Backend) -> None:
    """The message says what the holder runs, where, its pid, and for how long."""
    holder = backend.lock("apply db-migrate")
    holder.acquire()
    with pytest.raises(LockBusy) as busy:
        backend.lock("apply other").acquire()
    message = str(busy.value)
    assert message.startswith("another run in progress: apply db-migrate on ")
    assert f"(pid {os.getpid()}) for " in message
    assert message.endswith("s")
    holder.release()


def test_a_held_lock_is_not_lost(backend: Backend) -> None:
    """While its holder lives, the lock says it is not lost."""
    lock = backend.lock()
    lock.acquire()
    assert lock.lost() is None
    lock.release()


def test_lock_wait_is_served_when_the_holder_lets_go(backend: Backend) -> None:
    """A waiter queued with a wait gets the lock once the holder releases it."""
    holder = backend.lock()
    holder.acquire()
    timer = threading.Timer(0.3, holder.release)
    timer.start()
    waiter = backend.lock()
    waiter.acquire(wait=20)
    timer.join()
    waiter.release()
