"""One contract for apply's state, run against both backends: the state folder and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from domain.errors import LockBusy
from domain.ports import Lock, MarkerStore

Backend = tuple[Callable[[], Lock], MarkerStore]


@pytest.fixture(params=["files", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A way to make locks on one shared state, and a marker store over it."""
    watch = request.getfixturevalue("watch")
    if request.param == "files":
        from adapters.lock import FcntlLock
        from adapters.markers import FileMarkerStore

        state = tmp_path / "state"
        yield (
            (lambda: FcntlLock(str(state / "lock"), watch, create_folder=True)),
            FileMarkerStore(str(state)),
        )
        return
    from adapters.postgres import PgAdvisoryLock, PgMarkerStore, PostgresState

    url = request.getfixturevalue("pg_url")
    namespace = request.getfixturevalue("namespace")
    opened: list[PostgresState] = []

    def connect() -> PostgresState:
        opened.append(PostgresState(url, namespace, 5))
        return opened[-1]

    try:
        yield (lambda: PgAdvisoryLock(connect(), watch)), PgMarkerStore(connect())
    finally:
        for database in opened:
            database.close()


def test_the_lock_is_exclusive_until_released(backend: Backend) -> None:
    """A second holder is refused while the first holds the lock, and admitted after."""
    make_lock, _ = backend
    first, second = make_lock(), make_lock()
    first.acquire()
    with pytest.raises(LockBusy):
        second.acquire()
    first.release()
    second.acquire()
    second.release()


def test_a_held_lock_names_the_descriptors_a_command_inherits(backend: Backend) -> None:
    """While held, the lock can be handed to the command; after release there is nothing."""
    lock = make = backend[0]()
    lock.acquire()
    assert len(make.fds()) == 1  # type: ignore[attr-defined]
    lock.release()
    assert make.fds() == ()  # type: ignore[attr-defined]


def test_markers_are_written_found_listed_and_removed(backend: Backend) -> None:
    """exists, write, entries, remove: the life of a marker."""
    _, markers = backend
    assert not markers.exists("db")
    markers.write("db", when=1_800_000_000.5, run_id="r1", cmd=["migrate", "--to", "42"])
    assert markers.exists("db")
    assert not markers.exists("other")
    (entry,) = markers.entries()  # type: ignore[attr-defined]
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
    _, markers = backend
    markers.write("db", when=0, run_id="r1", cmd=["a"])
    markers.write("db", when=1, run_id="r2", cmd=["b"])
    entries = markers.entries()  # type: ignore[attr-defined]
    assert [(e["name"], e["run_id"]) for e in entries] == [("db", "r2")]


def test_arguments_that_are_not_utf8_are_kept(backend: Backend) -> None:
    """A command argument from undecodable bytes round-trips through the marker."""
    _, markers = backend
    odd = b"\xff\xfe".decode("utf-8", "surrogateescape")
    markers.write("db", when=0, run_id="r", cmd=["x", odd])
    assert markers.entries()[0]["cmd"] == ["x", odd]  # type: ignore[attr-defined]
