"""`runner locks` (who holds what) and `runner setup` (tables and grants for a fleet)."""

from __future__ import annotations

import json
import os
import time

from adapters.lockinfo import held_locks
from adapters.postgres import sql
from adapters.postgres.session import QueryError
from domain.errors import ExitStatus, StateError, UsageError
from domain.words import holder_line, visible
from entrypoints.backends import pg_tables

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.signals import SignalWatch
    from entrypoints.console import StreamConsole
    from entrypoints.invocation import Invocation


def locks(invocation: Invocation, home: str, watch: SignalWatch, console: StreamConsole) -> int:
    """The locks held now: on this host's state folder, or every lease of the namespace."""
    if invocation.state_url is None:
        rows = held_locks(os.path.join(home, "state"))
    else:
        rows = _leases(invocation, watch)
    if invocation.json:
        console.answer(json.dumps(rows, indent=2))
        return ExitStatus.OK
    if not rows:
        console.answer("no lock is held")
        return ExitStatus.OK
    now = time.time()
    table = [("LOCK", "TOKEN", "EXPIRES IN", "HELD BY")]
    for row in rows:
        expires = row.get("expires_in")
        table.append(
            (
                visible(str(row["lock"])) + (f"#{row['slot']}" if row.get("slot") else ""),
                "-" if row.get("token") is None else str(row["token"]),
                "-" if expires is None else f"{float(str(expires)):.0f}s",
                _holder(row, now),
            )
        )
    widths = [max(len(r[n]) for r in table) for n in range(3)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        console.answer("  ".join([*cells, line[3]]).rstrip())
    return ExitStatus.OK


def _holder(row: dict[str, object], now: float) -> str:
    if "host" not in row:
        return str(row["what"])
    if row["pid"] == 0:  # the --hold of a run that ended: EXPIRES IN says how long it lasts
        return f"{visible(str(row['what']))} on {visible(str(row['host']))} ended; held (--hold)"
    age = float(str(row["age"])) if "age" in row else now - float(str(row["since"]))
    return holder_line(str(row["what"]), str(row["host"]), int(str(row["pid"])), age)


def _leases(invocation: Invocation, watch: SignalWatch) -> list[dict[str, object]]:
    tables = pg_tables(invocation, watch)
    try:
        found = tables.call(sql.leases(tables.schema), (invocation.namespace,), create=False)
    finally:
        tables.session.close()
    return [
        {
            "lock": lock,
            "slot": int(slot or 0),
            "what": what,
            "host": host,
            "pid": int(pid or 0),
            "since": float(since or 0),
            "token": int(token or 0),
            "expires_in": float(left or 0),
            "age": float(age or 0),
        }
        for lock, slot, what, host, pid, since, token, left, age in found
    ]


def setup(invocation: Invocation, watch: SignalWatch, console: StreamConsole) -> int:
    """Create the schema and tables, and grant each --grant role what the runner needs."""
    if invocation.state_url is None:
        raise UsageError("setup: give --state URL (or RUNNER_STATE_URL): the folder needs none")
    tables = pg_tables(invocation, watch)
    try:
        tables.ensure()
        for role in invocation.grants:
            try:
                tables.session.run([(text, ()) for text in sql.grants(tables.schema, role)])
            except QueryError as error:
                raise StateError(f"cannot grant {role!r}: {error}") from None
            console.info(f"granted {role} the use of schema {tables.schema}")
    finally:
        tables.session.close()
    console.answer(f"the state tables are ready in schema {tables.schema}")
    return ExitStatus.OK
