"""A lock held in PostgreSQL: session-level advisory locks, a fencing token, who holds it.

The lock lives as long as its session. While the command runs, the runner's wait
loop asks `poll()` whenever the socket stirs and at least every lease/3: a
session the server ended, or one that has not answered for a whole lease, is a
lost lock, and the runner stops the command.
"""

from __future__ import annotations

import hashlib
import os
import select
import time

from adapters.postgres import sql
from adapters.postgres.session import LOCK_NOT_AVAILABLE, Lost, QueryError, Session
from adapters.signals import ending
from domain.errors import Interrupted, LockBusy, StateError, holder_line

INT_MAX_MS = 2**31 - 1
"""PostgreSQL's largest lock_timeout and statement_timeout (milliseconds)."""


def advisory_key(purpose: str, namespace: str) -> int:
    """A stable signed 64-bit key for pg_advisory_lock, the same on every host."""
    digest = hashlib.sha256(f"runner.py {purpose}:{namespace}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class Tables:
    """The schema's tables, created once (serialized across hosts) when first needed."""

    def __init__(self, session: Session, schema: str) -> None:
        self.session = session
        self.schema = schema
        self._ready = False

    def exist(self) -> bool:
        if not self._ready:
            found = self.session.query(sql.tables_exist(self.schema))[0][0]
            self._ready = found == "t"
        return self._ready

    def ensure(self) -> None:
        if self.exist():
            return
        key = advisory_key("schema", self.schema)
        self.session.query(sql.LOCK, (key,))
        try:
            for statement in sql.create(self.schema):
                self.session.query(statement)
        except QueryError as error:
            reason = str(error).rpartition(" said: ")[2]
            raise StateError(
                f"cannot create the state tables in schema {self.schema!r}: {reason} (grant this"
                " role CREATE there, create them once with a role that may, or choose --schema)"
            ) from None
        finally:
            if self.session.fileno() is not None:
                self.session.query(sql.UNLOCK, (key,))
        self._ready = True


class PgLock:
    """A lock named `lock` in `namespace`, with `slots` holders at most.

    `what` says what the holder runs, for the message a busy lock gives.
    """

    def __init__(
        self,
        session: Session,
        tables: Tables,
        namespace: str,
        lock: str,
        *,
        slots: int = 1,
        what: str,
    ) -> None:
        self.session = session
        self.tables = tables
        self.namespace = namespace
        self.lock = lock
        self.slots = slots
        self.what = what
        self._slot: int | None = None
        self._confirmed = 0.0
        self._asked = 0.0
        self._pending = False
        self._lost: str | None = None

    def key(self, slot: int) -> int:
        """The advisory lock key of `slot` (apply's is the one runner 0.2 used)."""
        purpose = "apply" if self.lock == "apply" else f"{self.lock}#{slot}"
        return advisory_key(purpose, self.namespace)

    def acquire(self, wait: float = 0.0) -> int:
        """Take a slot (queueing on the server for up to `wait` seconds); return the token."""
        self.tables.ensure()
        if self.slots == 1 and wait > 0:
            slot = 0 if self._wait_in_queue(wait) else None
        else:
            slot = self._try_slots(time.monotonic() + wait)
        if slot is None:
            raise LockBusy(self._holders())
        self._slot = slot
        rows = self.session.query(sql.next_token(self.tables.schema), (self.namespace, self.lock))
        token = int(rows[0][0] or 0)
        self.session.query(
            sql.claim(self.tables.schema),
            (self.namespace, self.lock, slot, self.what, os.uname().nodename, os.getpid()),
        )
        self._confirmed = self._asked = time.monotonic()
        return token

    def _wait_in_queue(self, wait: float) -> bool:
        """A blocking pg_advisory_lock bounded by lock_timeout: waiters are served in turn."""
        millis = min(INT_MAX_MS, max(1, round(wait * 1000)))
        lease = round(self.session.lease * 1000)
        if wait * 1000 >= INT_MAX_MS:
            self.session.query(sql.TIMEOUTS, ("0", "0"))
        else:
            self.session.query(sql.TIMEOUTS, (millis, min(INT_MAX_MS, millis + lease)))
        try:
            self.session.query(sql.LOCK, (self.key(0),), wait=wait + self.session.lease)
        except QueryError as error:
            if error.sqlstate == LOCK_NOT_AVAILABLE:
                return False
            raise
        finally:
            if self.session.fileno() is not None:
                self.session.query(sql.TIMEOUTS, ("0", lease))
        return True

    def _try_slots(self, deadline: float) -> int | None:
        """Try every slot; while none is free and time remains, try again now and then."""
        pause = 0.05
        while True:
            for slot in range(self.slots):
                if self.session.query(sql.TRY_LOCK, (self.key(slot),))[0][0] == "t":
                    return slot
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            signum = ending(self.session.watch.wait(min(pause, remaining)))
            if signum is not None:
                self.session.close()
                raise Interrupted(signum)
            pause = min(pause * 2, 0.5)

    def _holders(self) -> str | None:
        try:
            rows = self.session.query(
                sql.holders(self.tables.schema), (self.namespace, self.lock, self.slots)
            )
        except StateError:
            return None
        return (
            "; ".join(
                holder_line(str(what), str(host), int(pid or 0), float(age or 0))
                for what, host, pid, age in rows
            )
            or None
        )

    def fds(self) -> tuple[int, ...]:
        """The session's socket, for the command to keep the session (and lock) alive."""
        socket = self.session.fileno() if self._slot is not None else None
        return () if socket is None else (socket,)

    def release(self) -> None:
        if self._slot is not None and self._lost is None:
            slot, self._slot = self._slot, None
            try:
                self._settle()
                self.session.query(sql.UNLOCK, (self.key(slot),))
            except StateError:
                pass

    def lost(self) -> str | None:
        """Why the lock is no longer held, or None: asked of the server now."""
        if self._lost is None and self._slot is not None:
            try:
                self._settle()
                self.session.query(sql.ALIVE)
            except Lost as gone:
                self._lost = str(gone)
        return self._lost

    def _settle(self) -> None:
        """Wait for the answer to a check still under way, so the session takes a statement."""
        if self._pending:
            self._pending = False
            self.session.collect()

    def alert_fd(self) -> int | None:
        """A descriptor that turns readable when the lock may have been lost."""
        return None if self._lost is not None else self.session.fileno()

    def next_due(self) -> float | None:
        """The monotonic time by which `poll` must be called again."""
        if self._lost is not None or self._slot is None:
            return None
        lease = self.session.lease
        ask = self._confirmed + lease if self._pending else self._asked + lease / 3
        return min(ask, self._confirmed + lease)

    def poll(self) -> str | None:
        """Check the session without blocking: read what came, ask again when due.

        Returns why the lock was lost (the session ended, or gave no answer for a
        whole lease), or None.
        """
        if self._lost is not None or self._slot is None:
            return self._lost
        now = time.monotonic()
        try:
            self._lost = self._poll(now)
        except Exception as exc:  # whatever libpq says of a dead session, the lock is gone
            first = str(exc).split("\n", 1)[0].removeprefix("consuming input failed: ")
            self._lost = self.session.url.scrub(f"the session ended ({first.strip()})")
        if self._lost is not None:
            self.session.close()
        return self._lost

    def _poll(self, now: float) -> str | None:
        from psycopg import pq

        pgconn = self.session.pgconn()
        stirred = select.select([pgconn.socket], [], [], 0)[0]
        pgconn.consume_input()
        if self._pending and not pgconn.is_busy():
            failed = False
            while (result := pgconn.get_result()) is not None:
                failed = failed or result.status != pq.ExecStatus.TUPLES_OK
            if failed:
                return "the server ended the session"
            self._pending, self._confirmed = False, now
        if pgconn.status != pq.ConnStatus.OK:
            return "the server closed the session"
        if not self._pending and (stirred or now >= self._asked + self.session.lease / 3):
            pgconn.send_query_params(sql.ALIVE.encode(), [])
            pgconn.flush()
            self._pending, self._asked = True, now
        if now - self._confirmed >= self.session.lease:
            return f"the server did not answer for {self.session.lease:.3g}s (--lease)"
        return None
