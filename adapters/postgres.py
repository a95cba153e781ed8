"""apply's lock and markers in PostgreSQL, for many hosts sharing one apply.

The lock is a session-level advisory lock on a key derived from the namespace;
the markers are rows of `runner_markers` (the command as JSON text: arguments that are
not UTF-8 survive, which jsonb would refuse). Both live on one connection, so a lost
connection can never leave a marker behind for work whose end nobody saw. The
connection's socket is handed to the command like the flock descriptor: if the
runner is killed with SIGKILL, the session (and with it the lock) lasts as long
as any process of the command does.

psycopg 3 is imported only here, only when this backend is chosen.
"""

from __future__ import annotations

import hashlib
import os
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from adapters.jsonl import dumps, iso8601
from adapters.signals import ending
from domain.errors import Interrupted, LockBusy, StateError

if TYPE_CHECKING:
    from typing import Any

    import psycopg

    from adapters.signals import SignalWatch

TABLE = "runner_markers"
CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    namespace  text        NOT NULL,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL,
    run_id     text        NOT NULL,
    cmd        text        NOT NULL,
    host       text        NOT NULL,
    PRIMARY KEY (namespace, name)
)"""
INSTALL_HINT = "pip install 'psycopg[binary]' (or: pip install '.[postgres]')"


def advisory_key(purpose: str, namespace: str) -> int:
    """A stable signed 64-bit key for pg_advisory_lock, the same on every host."""
    digest = hashlib.sha256(f"runner.py {purpose}:{namespace}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def redact(url: str) -> str:
    """The URL with its password, if any, replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=f"{user}{host}{port}"))


class PostgresState:
    """One connection to the state database, shared by its lock and its markers."""

    def __init__(self, url: str, namespace: str, connect_timeout: float) -> None:
        self.url = url
        self.namespace = namespace
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection[Any] | None = None
        self._schema_ready = False

    def connection(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            try:
                import psycopg  # noqa: PLC0415 - only when this backend is chosen
            except ImportError:
                raise StateError(
                    f"the postgresql state backend needs psycopg 3: {INSTALL_HINT}"
                ) from None
            try:
                self._conn = psycopg.connect(
                    self.url,
                    autocommit=True,
                    connect_timeout=max(1, round(self.connect_timeout))
                    if self.connect_timeout
                    else None,
                    application_name="runner.py",
                    keepalives=1,
                    keepalives_idle=30,
                    keepalives_interval=10,
                    keepalives_count=3,
                )
            except (psycopg.Error, ValueError) as exc:
                raise StateError(self._say(f"cannot connect to {redact(self.url)}", exc)) from None
        return self._conn

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; a database failure becomes a StateError with a clear line."""
        conn = self.connection()
        import psycopg  # noqa: PLC0415 - loaded by connection() already

        try:
            cursor = conn.execute(sql.encode(), params)
            return cursor.fetchall() if cursor.description else []
        except psycopg.Error as exc:
            raise StateError(self._say(f"state database {redact(self.url)} failed", exc)) from None

    def ensure_schema(self) -> None:
        """Create the markers table once, serialized across hosts by an advisory lock."""
        if self._schema_ready:
            return
        key = advisory_key("schema", TABLE)
        self.query("SELECT pg_advisory_lock(%s)", (key,))
        try:
            self.query(CREATE)
        finally:
            self.query("SELECT pg_advisory_unlock(%s)", (key,))
        self._schema_ready = True

    def has_table(self) -> bool:
        """Whether the markers table exists (asked of the server until it does)."""
        if not self._schema_ready:
            found = self.query("SELECT to_regclass(%s) IS NOT NULL", (TABLE,))[0][0]
            self._schema_ready = bool(found)
        return self._schema_ready

    def fileno(self) -> int | None:
        """The session's socket, or None before connecting."""
        return None if self._conn is None else self._conn.fileno()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # closing a broken connection is not news
                pass
            self._conn = None

    def _say(self, what: str, exc: BaseException) -> str:
        reason = " ".join(str(exc).split())
        password = urlsplit(self.url).password
        if password:
            reason = reason.replace(password, "***")
        return f"{what}: {reason}"


class PgAdvisoryLock:
    """A session-level pg_try_advisory_lock on the namespace, held for the whole apply."""

    def __init__(self, state: PostgresState, watch: SignalWatch) -> None:
        self.state = state
        self.watch = watch
        self.key = advisory_key("apply", state.namespace)
        self._held = False

    def acquire(self, wait: float = 0.0) -> None:
        deadline = time.monotonic() + wait
        pause = 0.01
        while not self.state.query("SELECT pg_try_advisory_lock(%s)", (self.key,))[0][0]:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LockBusy()
            signum = ending(self.watch.wait(min(pause, remaining)))
            if signum is not None:
                raise Interrupted(signum)
            pause = min(pause * 2, 0.25)
        self._held = True

    def fds(self) -> tuple[int, ...]:
        """The session's socket, for the command to keep the session (and lock) alive."""
        socket = self.state.fileno() if self._held else None
        return () if socket is None else (socket,)

    def release(self) -> None:
        if self._held:
            self._held = False
            try:
                self.state.query("SELECT pg_advisory_unlock(%s)", (self.key,))
            except StateError:
                pass


class PgMarkerStore:
    """Markers as rows (namespace, name); inserted only after success, under the lock."""

    def __init__(self, state: PostgresState) -> None:
        self.state = state

    def exists(self, name: str) -> bool:
        if not self.state.has_table():
            return False
        rows = self.state.query(
            f"SELECT 1 FROM {TABLE} WHERE namespace = %s AND name = %s",
            (self.state.namespace, name),
        )
        return bool(rows)

    def write(self, name: str, *, when: float, run_id: str, cmd: list[str]) -> None:
        try:
            self.state.ensure_schema()
            self.state.query(
                f"INSERT INTO {TABLE} (namespace, name, applied_at, run_id, cmd, host)"
                " VALUES (%s, %s, to_timestamp(%s), %s, %s, %s)"
                " ON CONFLICT (namespace, name) DO UPDATE SET applied_at = EXCLUDED.applied_at,"
                " run_id = EXCLUDED.run_id, cmd = EXCLUDED.cmd, host = EXCLUDED.host",
                (self.state.namespace, name, when, run_id, dumps(list(cmd)), os.uname().nodename),
            )
        except StateError as error:
            raise StateError(f"{name} was applied but is not recorded: {error}") from None

    def remove(self, name: str) -> bool:
        if not self.state.has_table():
            return False
        rows = self.state.query(
            f"DELETE FROM {TABLE} WHERE namespace = %s AND name = %s RETURNING 1",
            (self.state.namespace, name),
        )
        return bool(rows)

    def entries(self) -> list[dict[str, object]]:
        """Every marker of the namespace, by name; a corrupt row says so and the rest stand."""
        if not self.state.has_table():
            return []
        rows = self.state.query(
            f"SELECT name, extract(epoch FROM applied_at)::float8, run_id, cmd, host FROM {TABLE}"
            " WHERE namespace = %s ORDER BY name",
            (self.state.namespace,),
        )
        import json  # noqa: PLC0415 - only listing reads markers back

        found: list[dict[str, object]] = []
        for name, epoch, run_id, cmd, host in rows:
            try:
                words = json.loads(cmd)
                if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                    raise ValueError("cmd is not a list of strings")
                found.append(
                    {
                        "name": name,
                        "time": iso8601(epoch),
                        "run_id": run_id,
                        "cmd": words,
                        "host": host,
                    }
                )
            except (ValueError, RecursionError, OverflowError, OSError) as exc:
                found.append({"name": name, "error": f"corrupt marker: {exc}"})
        return found
