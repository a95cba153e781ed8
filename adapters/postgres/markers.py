"""Markers as rows (namespace, name) of the schema's runner_markers, under the lock."""

from __future__ import annotations

import os

from adapters.jsonl import dumps, iso8601
from adapters.postgres import sql
from domain.errors import StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.postgres.lock import Tables


class PgMarkerStore:
    """Written on the lock's own session: a lost session never leaves a marker behind.

    The command is kept as JSON text (arguments that are not UTF-8 survive, which
    jsonb would refuse).
    """

    def __init__(self, tables: Tables, namespace: str) -> None:
        self.tables = tables
        self.session = tables.session
        self.namespace = namespace

    def exists(self, name: str) -> bool:
        if not self.tables.exist():
            return False
        return bool(
            self.session.query(sql.marker_exists(self.tables.schema), (self.namespace, name))
        )

    def write(self, name: str, *, when: float, run_id: str, cmd: list[str]) -> None:
        try:
            self.tables.ensure()
            self.session.query(
                sql.write_marker(self.tables.schema),
                (self.namespace, name, repr(when), run_id, dumps(list(cmd)), os.uname().nodename),
            )
        except StateError as error:
            raise StateError(f"{name} was applied but is not recorded: {error}") from None

    def remove(self, name: str) -> bool:
        if not self.tables.exist():
            return False
        return bool(
            self.session.query(sql.remove_marker(self.tables.schema), (self.namespace, name))
        )

    def entries(self) -> list[dict[str, object]]:
        """Every marker of the namespace, by name; a corrupt row says so and the rest stand."""
        if not self.tables.exist():
            return []
        rows = self.session.query(sql.markers(self.tables.schema), (self.namespace,))
        import json

        found: list[dict[str, object]] = []
        for name, epoch, run_id, cmd, host in rows:
            try:
                words = json.loads(cmd or "")
                if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                    raise ValueError("cmd is not a list of strings")
                when = iso8601(float(epoch or "nan"))
            except (ValueError, RecursionError, OverflowError, OSError) as exc:
                found.append({"name": name, "error": f"corrupt marker: {exc}"})
                continue
            found.append({"name": name, "time": when, "run_id": run_id, "cmd": words, "host": host})
        return found
