"""A connection to the state database, driven through libpq's non-blocking interface.

Every call is sent as one pipeline (its bounds set with SET LOCAL, then its
statements, then a sync: one transaction, one round trip) and waited for on the
socket together with the runner's signals, under a deadline: a signal ends the
call at once (Interrupted, after asking the server to cancel it), a silent server
ends it at the deadline (Lost). Nothing outlives a call on the server's side: no
startup options, no session settings, no prepared statements, so PgBouncer in
transaction or session mode serves it as the server itself would.

A lost connection is opened again by the next call. With `until`, a call that
finds the server unreachable, restarting or full (`too many clients`) is tried
again, with growing pauses, until that monotonic time.
"""

from __future__ import annotations

import select
import time

from adapters.postgres.connect import Unreachable, connect, wait_on
from adapters.postgres.sql import SETTINGS
from adapters.signals import ending
from domain.errors import Interrupted, StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from psycopg.pq.abc import PGconn, PGresult

    from adapters.postgres.url import StateUrl
    from adapters.signals import SignalWatch

Rows = list[tuple[str | None, ...]]

TRANSIENT = frozenset({"53300", "57P01", "57P02", "57P03", "40001", "40P01", "55P03"})
"""Server answers worth another try: too many clients, shutting down or starting up,
a serialization failure or deadlock, a lock wait that ran out."""

CANCEL_WAIT = 1.0
"""Seconds to wait for the server to confirm a cancelled statement, on a signal."""


class Lost(StateError):
    """The connection ended or stopped answering."""


class QueryError(StateError):
    """The server refused a statement; `sqlstate` says why."""

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class Session:
    """Calls to one server that a signal or a deadline can always end.

    `limit` (seconds) bounds each call, on both sides: the server is told to give
    up (statement and lock timeouts) no later than the runner does. `watch` is
    None for a caller outside the main thread, which signals never interrupt.
    """

    def __init__(
        self,
        url: StateUrl,
        watch: SignalWatch | None,
        *,
        connect_timeout: float,
        limit: float,
    ) -> None:
        self.url = url
        self.watch = watch
        self.connect_timeout = connect_timeout
        self.limit = limit
        self._pgconn: PGconn | None = None

    def close(self) -> None:
        if self._pgconn is not None:
            self._pgconn.finish()
            self._pgconn = None

    def query(
        self,
        sql: str,
        params: tuple[object, ...] = (),
        *,
        until: float | None = None,
        limit: float | None = None,
    ) -> Rows:
        """Run one statement; return its rows as text. See `run`."""
        return self.run([(sql, params)], until=until, limit=limit)[-1]

    def run(
        self,
        statements: list[tuple[str, tuple[object, ...]]],
        *,
        until: float | None = None,
        limit: float | None = None,
    ) -> list[Rows]:
        """Run `statements` as one transaction; return the rows of each, as text.

        Each try is bounded by `limit` seconds (the session's own by default).
        Raises QueryError (the server refused), Lost or Unreachable (no server to
        ask: tried again until `until`, when given), or Interrupted.
        """
        pause = 0.05
        while True:
            try:
                return self._exchange(statements, self.limit if limit is None else limit)
            except (Lost, Unreachable, QueryError) as failure:
                transient = not isinstance(failure, QueryError) or failure.sqlstate in TRANSIENT
                left = (until or 0) - time.monotonic()
                if not transient or left <= 0:
                    raise
            self._sleep(min(pause, left))
            pause = min(pause * 2, 1.0)

    def _exchange(
        self, statements: list[tuple[str, tuple[object, ...]]], limit: float
    ) -> list[Rows]:
        if self._pgconn is None:
            patience = min(self.connect_timeout or limit, limit)
            deadline = time.monotonic() + patience
            self._pgconn = connect(self.url, self.watch, deadline, patience)
        from psycopg import pq

        pgconn = self._pgconn
        deadline = time.monotonic() + limit
        millis = str(min(2**31 - 1, max(1, round(limit * 1000))))
        try:
            for text, params in [(SETTINGS, (millis,)), *statements]:
                values = [
                    None if p is None else str(p).encode("utf-8", "surrogateescape") for p in params
                ]
                pgconn.send_query_params(text.encode(), values)
            pgconn.pipeline_sync()
            while pgconn.flush():
                self._wait_for(pgconn, deadline, limit, write=True)
            results: list[PGresult] = []
            while True:
                pgconn.consume_input()
                if pgconn.is_busy():
                    self._wait_for(pgconn, deadline, limit)
                    continue
                result = pgconn.get_result()
                if result is None:
                    continue
                if result.status == pq.ExecStatus.PIPELINE_SYNC:
                    break
                results.append(result)
        except Interrupted:
            self._cancel(pgconn)
            raise
        except Exception as exc:  # whatever libpq says of a connection that broke
            raise self._lost(str(exc).split("\n", 1)[0]) from None
        if pgconn.status != pq.ConnStatus.OK:
            raise self._lost(_text(pgconn.error_message) or "connection closed")
        return self._rows(results)

    def _rows(self, results: list[PGresult]) -> list[Rows]:
        from psycopg import pq

        for result in results:
            if result.status == pq.ExecStatus.FATAL_ERROR:
                state = result.error_field(pq.DiagnosticField.SQLSTATE)
                primary = result.error_field(pq.DiagnosticField.MESSAGE_PRIMARY)
                message = _text(primary or result.error_message) or "unknown error"
                said = self.url.explain(f"the state database {self.url.shown} said", message)
                raise QueryError(said, _text(state))
        return [
            [
                tuple(_text(result.get_value(r, c)) for c in range(result.nfields))
                for r in range(result.ntuples)
            ]
            for result in results[1:]  # the first is the SET LOCAL bounds
        ]

    def _lost(self, reason: str) -> Lost:
        """The connection is of no further use: close it (the next call opens another)."""
        self.close()
        return Lost(self.url.explain(f"lost the connection to {self.url.shown}", reason))

    def _wait_for(
        self, pgconn: PGconn, deadline: float, limit: float, *, write: bool = False
    ) -> None:
        """Wait until the socket is ready, a signal comes, or the deadline passes."""
        wait_on(self.watch, pgconn.socket, deadline, write)
        if time.monotonic() >= deadline:
            raise self._lost(f"no answer within {limit:.3g}s")

    def _sleep(self, seconds: float) -> None:
        if self.watch is None:
            time.sleep(seconds)
            return
        signum = ending(self.watch.wait(seconds))
        if signum is not None:
            raise Interrupted(signum)

    def _cancel(self, pgconn: PGconn) -> None:
        """Ask the server to cancel what runs (so that nothing commits after we left), then close.

        Bounded by CANCEL_WAIT; a server that does not answer is left to its timeouts.
        """
        from psycopg import pq

        try:
            cancel = pgconn.cancel_conn()
            cancel.start()
            deadline = time.monotonic() + CANCEL_WAIT
            status: int = pq.PollingStatus.WRITING
            while status not in (pq.PollingStatus.OK, pq.PollingStatus.FAILED):
                left = deadline - time.monotonic()
                reading = status == pq.PollingStatus.READING
                sockets = [cancel.socket]
                if left <= 0 or not any(
                    select.select(sockets if reading else [], [] if reading else sockets, [], left)
                ):
                    break
                status = cancel.poll()
            cancel.finish()
        except Exception:  # a cancel is a courtesy: the statement timeout ends it anyway
            pass
        self.close()


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace").strip()
