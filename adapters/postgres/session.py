"""One session with the state database, driven through libpq's non-blocking interface.

psycopg's blocking calls restart their waits after a signal whose handler does not
raise, and nothing bounds a wait on a server that stopped answering. Here every
call is sent, then waited for on the socket together with the runner's signals,
under a deadline: a signal ends the session at once (Interrupted), a silent
server ends it at the deadline (StateError). The server is told to give up no
sooner than we do (statement and lock timeouts, TCP keepalives).
"""

from __future__ import annotations

import math
import select
import time
from contextlib import contextmanager

from adapters.postgres import sql
from adapters.signals import ending
from domain.errors import Interrupted, StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

    from psycopg.pq.abc import PGconn, PGresult

    from adapters.postgres.url import StateUrl
    from adapters.signals import SignalWatch

INSTALL_HINT = "pip install 'psycopg[binary]' (or: pip install '.[postgres]')"
LOCK_NOT_AVAILABLE = "55P03"
MARGIN = 5.0
"""Seconds the server waits beyond the runner before it gives up on a silent runner."""


class Lost(StateError):
    """The session ended or stopped answering."""


class Session:
    """A connection, its settings, and calls that a signal or a deadline can always end.

    `lease` (seconds) bounds every call but a lock wait, and is how long the
    server keeps a silent session: lease + `kill_after` + MARGIN, so that it
    frees a lock only after the runner has given up and stopped its command.
    """

    def __init__(
        self,
        url: StateUrl,
        watch: SignalWatch,
        *,
        connect_timeout: float,
        lease: float,
        kill_after: float,
    ) -> None:
        self.url = url
        self.watch = watch
        self.connect_timeout = connect_timeout
        self.lease = lease
        self.patience = lease + (kill_after or lease) + MARGIN
        self._pgconn: PGconn | None = None
        self._closed = False

    def pgconn(self) -> PGconn:
        """The connection, opened on first use within --connect-timeout; never reopened.

        A session that was closed (or lost) stays closed: its locks went with it.
        """
        if self._pgconn is None:
            if self._closed:
                raise Lost(f"the session with {self.url.shown} is closed")
            self._pgconn = self._connect()
        return self._pgconn

    def fileno(self) -> int | None:
        """The session's socket, or None before connecting."""
        return None if self._pgconn is None else self._pgconn.socket

    def close(self) -> None:
        self._closed = True
        if self._pgconn is not None:
            self._pgconn.finish()
            self._pgconn = None

    def query(
        self, sql: str, params: tuple[object, ...] = (), *, wait: float | None = None
    ) -> list[tuple[str | None, ...]]:
        """Run one statement; return its rows as text. `wait` overrides the lease bound.

        Raises StateError (Lost when the session is gone), or Interrupted.
        """
        self.send(sql, params)
        return self.collect(wait)

    def send(self, sql: str, params: tuple[object, ...] = ()) -> None:
        """Send one statement (the connection is non-blocking: what does not fit in the
        socket's buffer is flushed as it drains, within the lease); see `collect`."""
        pgconn = self.pgconn()
        values = [None if p is None else str(p).encode("utf-8", "surrogateescape") for p in params]
        with self._failures():
            pgconn.send_query_params(sql.encode(), values)
            deadline = time.monotonic() + self.lease
            while pgconn.flush():
                self._wait_for(pgconn, deadline, self.lease, write=True)

    def collect(self, wait: float | None = None) -> list[tuple[str | None, ...]]:
        """The answer to the statement sent last, waited for up to `wait` (or the lease)."""
        pgconn = self.pgconn()
        limit = self.lease if wait is None else wait
        deadline = time.monotonic() + limit
        with self._failures():
            while True:
                pgconn.consume_input()
                if not pgconn.is_busy():
                    break
                self._wait_for(pgconn, deadline, limit)
            return self._results(pgconn)

    @contextmanager
    def _failures(self) -> Iterator[None]:
        """libpq's errors as Lost; on a signal, the session is closed before it ends us."""
        try:
            yield
        except _psycopg().OperationalError as exc:
            raise self.lost(str(exc)) from None
        except Interrupted:
            self.close()
            raise

    def _notice_gone_clients(self) -> None:
        """Have the server check, while a statement waits, that we are still there.

        A waiter that was ended (a signal during --lock-wait) then leaves the
        server's queue within a second. Servers older than PostgreSQL 14 lack the
        setting; they notice when the lock is granted.
        """
        try:
            self.query(sql.SET, ("client_connection_check_interval", "1000"))
        except QueryError:
            pass

    def lost(self, reason: str) -> Lost:
        """The session is of no further use: close it and say why."""
        self.close()
        return Lost(self.url.scrub(f"lost the session with {self.url.shown}: {reason}"))

    def _results(self, pgconn: PGconn) -> list[tuple[str | None, ...]]:
        from psycopg import pq

        rows: list[tuple[str | None, ...]] = []
        failure: PGresult | None = None
        while (result := pgconn.get_result()) is not None:
            if result.status == pq.ExecStatus.TUPLES_OK:
                rows += [
                    tuple(_text(result.get_value(r, c)) for c in range(result.nfields))
                    for r in range(result.ntuples)
                ]
            elif result.status != pq.ExecStatus.COMMAND_OK:
                failure = result
        if failure is not None:
            state = failure.error_field(pq.DiagnosticField.SQLSTATE)
            primary = failure.error_field(pq.DiagnosticField.MESSAGE_PRIMARY)
            message = _text(primary or failure.error_message) or "unknown error"
            said = f"the state database {self.url.shown} said: {message}"
            raise QueryError(self.url.scrub(said), _text(state))
        if pgconn.status != pq.ConnStatus.OK:
            raise self.lost(_text(pgconn.error_message) or "connection closed")
        return rows

    def _wait_for(
        self, pgconn: PGconn, deadline: float, limit: float, *, write: bool = False
    ) -> None:
        """Wait until the socket is ready, a signal comes, or the deadline passes."""
        _wait(self.watch, pgconn.socket, deadline, write)
        if time.monotonic() >= deadline:
            raise self.lost(f"no answer within {limit:.3g}s")

    def _connect(self) -> PGconn:
        psycopg = _psycopg()
        from psycopg import pq
        from psycopg.conninfo import make_conninfo

        patience = math.ceil(self.patience)
        try:
            conninfo = make_conninfo(
                self.url.conninfo,
                password=self.url.password,
                application_name="runner.py",
                keepalives=1,
                keepalives_idle=max(1, math.ceil(self.lease / 3)),
                keepalives_interval=max(1, math.ceil(self.lease / 9)),
                keepalives_count=3,
                tcp_user_timeout=math.ceil(self.lease * 1000),
                options=" ".join(
                    (
                        f"-c statement_timeout={math.ceil(self.lease * 1000)}",
                        "-c lock_timeout=0",
                        f"-c tcp_keepalives_idle={patience}",
                        "-c tcp_keepalives_interval=1",
                        "-c tcp_keepalives_count=1",
                        f"-c tcp_user_timeout={patience * 1000}",
                    )
                ),
            )
        except psycopg.ProgrammingError as exc:
            raise StateError(
                self.url.scrub(f"invalid --state URL {self.url.shown}: {exc}")
            ) from None
        deadline = time.monotonic() + (self.connect_timeout or 365 * 86400.0)
        pgconn = pq.PGconn.connect_start(conninfo.encode())
        try:
            poll: int = pq.PollingStatus.WRITING
            while True:
                if pgconn.status == pq.ConnStatus.BAD or poll == pq.PollingStatus.FAILED:
                    reason = _text(pgconn.error_message) or "connection failed"
                    raise StateError(
                        self.url.scrub(f"cannot connect to {self.url.shown}: {reason}")
                    )
                if poll == pq.PollingStatus.OK:
                    pgconn.nonblocking = 1
                    self._pgconn = pgconn
                    self._notice_gone_clients()
                    return pgconn
                if time.monotonic() >= deadline:
                    raise StateError(
                        f"cannot connect to {self.url.shown}: no answer within "
                        f"{self.connect_timeout:.3g}s (--connect-timeout)"
                    )
                _wait(self.watch, pgconn.socket, deadline, poll == pq.PollingStatus.WRITING)
                poll = pgconn.connect_poll()
        except BaseException:
            pgconn.finish()
            raise


def _wait(watch: SignalWatch, socket: int, deadline: float, write: bool) -> None:
    """Wait for `socket` (to read, or to write), a signal, or the deadline; a signal raises.

    One wait lasts an hour at most; callers loop until their own deadline.
    """
    remaining = min(max(0.0, deadline - time.monotonic()), 3600.0)
    ready = ([socket], []) if not write else ([], [socket])
    select.select([watch.fileno(), *ready[0]], ready[1], [], remaining)
    signum = ending(watch.pending())
    if signum is not None:
        raise Interrupted(signum)


class QueryError(StateError):
    """The server refused a statement; `sqlstate` says why (55P03: a lock wait ran out)."""

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace").strip()


def _psycopg() -> ModuleType:
    try:
        import psycopg
    except ImportError:
        raise StateError(f"the postgresql state backend needs psycopg 3: {INSTALL_HINT}") from None
    return psycopg
