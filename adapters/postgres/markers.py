"""Markers as rows (namespace, name) of the schema's runner_markers."""

from __future__ import annotations

import os
import time

from adapters.jsonl import dumps, iso8601
from adapters.postgres import sql
from domain.errors import StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.postgres.lock import PgLock
    from adapters.postgres.tables import Tables


class PgMarkerStore:
    """Markers of one namespace; with `lock`, written only while its lease holds.

    A marker is written in the same statement that checks the lease, so a run that
    lost its lock (or was stopped mid-write: the statement is cancelled) never
    leaves one behind. A server restart shorter than the lease is ridden out.
    The command is kept as JSON text (arguments that are not UTF-8 survive, which
    jsonb would refuse).
    """

    def __init__(self, tables: Tables, namespace: str, lock: PgLock | None = None) -> None:
        self.tables = tables
        self.namespace = namespace
        self.lock = lock

    def _until(self) -> float:
        """How long an unreachable server is waited for: the lease while one is held."""
        session = self.tables.session
        patience = self.lock.lease if self.lock is not None else session.connect_timeout
        return time.monotonic() + patience

    def now(self) -> float:
        """The server's clock, whatever this host's says."""
        rows = self.tables.call(sql.NOW, (), until=self._until(), create=False)
        return float(rows[0][0] or 0)

    def exists(self, name: str) -> bool:
        schema = self.tables.schema
        return bool(
            self.tables.call(
                sql.marker_exists(schema), (self.namespace, name), until=self._until(), create=False
            )
        )

    def write(self, name: str, *, when: float, run_id: str, cmd: list[str]) -> None:
        params: tuple[object, ...] = (
            self.namespace,
            name,
            repr(when),
            run_id,
            dumps(list(cmd)),
            os.uname().nodename,
        )
        if self.lock is not None:
            params += (self.lock.lock, self.lock.owner)
        text = sql.write_marker(self.tables.schema, guarded=self.lock is not None)
        try:
            written = self.tables.call(text, params, until=self._until())
        except StateError as error:
            raise StateError(f"{name} was applied but is not recorded: {error}") from None
        if not written:
            raise StateError(f"{name} was applied but is not recorded: the lock's lease was lost")

    def remove(self, name: str) -> bool:
        schema = self.tables.schema
        return bool(
            self.tables.call(
                sql.remove_marker(schema), (self.namespace, name), until=self._until(), create=False
            )
        )

    def entries(self) -> list[dict[str, object]]:
        """Every marker of the namespace, by name; a corrupt row says so and the rest stand."""
        rows = self.tables.call(
            sql.markers(self.tables.schema), (self.namespace,), until=self._until(), create=False
        )
        import json

        found: list[dict[str, object]] = []
        for name, epoch, run_id, cmd, host in rows:
            try:
                words = json.loads(cmd or "")
                if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                    raise ValueError("cmd is not a list of strings")
                when = iso8601(float(epoch or "nan"))
            except (ValueError, RecursionError, OverflowError, OSError):
                found.append({"name": name, "error": "corrupt marker: not the row an apply writes"})
                continue
            found.append({"name": name, "time": when, "run_id": run_id, "cmd": words, "host": host})
        return found
