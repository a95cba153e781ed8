"""Every statement the PostgreSQL backend sends, in one place.

Tables live in one named schema (--schema, default `public`), never wherever a
role's search_path points, so every host and role sees the same rows. A lock is
a row of runner_leases with an expiry by the server's clock: no statement holds
a session-level lock or setting, so every one works through PgBouncer in
transaction mode as well as straight to the server.
"""

from __future__ import annotations


def create(schema: str) -> list[str]:
    """The schema and its tables, if missing (one transaction, serialized across hosts)."""
    return [
        "SELECT pg_advisory_xact_lock(hashtext('runner.py schema ' || $1))",
        f'CREATE SCHEMA IF NOT EXISTS "{schema}"',
        f"""CREATE TABLE IF NOT EXISTS "{schema}".runner_markers (
            namespace  text        NOT NULL,
            name       text        NOT NULL,
            applied_at timestamptz NOT NULL,
            run_id     text        NOT NULL,
            cmd        text        NOT NULL,
            host       text        NOT NULL,
            PRIMARY KEY (namespace, name))""",
        f"""CREATE TABLE IF NOT EXISTS "{schema}".runner_tokens (
            namespace  text   NOT NULL,
            lock       text   NOT NULL,
            token      bigint NOT NULL,
            PRIMARY KEY (namespace, lock))""",
        f"""CREATE TABLE IF NOT EXISTS "{schema}".runner_leases (
            namespace  text        NOT NULL,
            lock       text        NOT NULL,
            slot       integer     NOT NULL,
            owner      text        NOT NULL,
            what       text        NOT NULL,
            host       text        NOT NULL,
            pid        integer     NOT NULL,
            since      timestamptz NOT NULL,
            expires    timestamptz NOT NULL,
            token      bigint      NOT NULL,
            PRIMARY KEY (namespace, lock, slot))""",
        f"""CREATE TABLE IF NOT EXISTS "{schema}".runner_waiters (
            namespace  text        NOT NULL,
            lock       text        NOT NULL,
            owner      text        NOT NULL,
            seen       timestamptz NOT NULL,
            PRIMARY KEY (namespace, lock, owner))""",
    ]


def grants(schema: str, role: str) -> list[str]:
    """What a runtime role needs, and nothing more: use the schema, read and write the rows."""
    names = ("runner_markers", "runner_tokens", "runner_leases", "runner_waiters")
    tables = ", ".join(f'"{schema}".{name}' for name in names)
    return [
        f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"',
        f'GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO "{role}"',
    ]


SETTINGS = "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true)"
"""Sent before each statement, in the same transaction: bounds that end with it (SET LOCAL)."""

SCHEMA_EXISTS = "SELECT 1 FROM pg_namespace WHERE nspname = $1"
"""Whether a schema is there at all: tables missing from a schema that is are no state yet."""

NOW = "SELECT extract(epoch FROM now())::float8"
"""The server's clock, epoch seconds."""

UNDEFINED_TABLE = "42P01"
READ_ONLY = "25006"
INSUFFICIENT_PRIVILEGE = "42501"


def claim(schema: str) -> str:
    """Take the lowest free slot of a lock: a new token, and a lease until `now() + $7` seconds.

    $1 namespace, $2 lock, $3 slots, $4 owner, $5 what, $6 host, $7 lease (seconds),
    $8 pid. A slot is free when its lease expired, or when it is the caller's own
    (an answer lost on the way back). The token counter's row lock orders racing
    claimants; a claimant that loses the race gets no row (its token is skipped).
    """
    return f"""
        WITH free AS (
            SELECT s AS slot FROM generate_series(0, $3::integer - 1) AS s
            WHERE NOT EXISTS (
                SELECT 1 FROM "{schema}".runner_leases AS h
                WHERE h.namespace = $1 AND h.lock = $2 AND h.slot = s
                  AND h.expires > now() AND h.owner <> $4)
            ORDER BY s LIMIT 1),
        bumped AS (
            INSERT INTO "{schema}".runner_tokens AS t (namespace, lock, token)
            SELECT $1, $2, 1 FROM free
            ON CONFLICT (namespace, lock) DO UPDATE SET token = t.token + 1
            RETURNING token)
        INSERT INTO "{schema}".runner_leases AS l
            (namespace, lock, slot, owner, what, host, pid, since, expires, token)
        SELECT $1, $2, free.slot, $4, $5, $6, $8::integer, now(),
               now() + make_interval(secs => $7::float8), bumped.token
        FROM free, bumped
        ON CONFLICT (namespace, lock, slot) DO UPDATE SET
            owner = EXCLUDED.owner, what = EXCLUDED.what, host = EXCLUDED.host,
            pid = EXCLUDED.pid, since = EXCLUDED.since, expires = EXCLUDED.expires,
            token = EXCLUDED.token
        WHERE l.expires <= now() OR l.owner = EXCLUDED.owner
        RETURNING slot, token"""


WAITING = "10 seconds"
"""How recently a waiter must have tried to count as waiting."""


def wait_note(schema: str) -> str:
    """After a claim in the same transaction: unless it succeeded, note the caller ($3) as a
    waiter of the lock ($1, $2) and count the waiters seen lately (the caller included)."""
    return f"""
        WITH noted AS (
            INSERT INTO "{schema}".runner_waiters AS w (namespace, lock, owner, seen)
            SELECT $1, $2, $3, now()
            WHERE NOT EXISTS (
                SELECT 1 FROM "{schema}".runner_leases
                WHERE namespace = $1 AND lock = $2 AND owner = $3)
            ON CONFLICT (namespace, lock, owner) DO UPDATE SET seen = now()
            RETURNING 1)
        SELECT 1 + count(*) FROM "{schema}".runner_waiters
        WHERE namespace = $1 AND lock = $2 AND owner <> $3
          AND seen > now() - interval '{WAITING}'"""


def stop_waiting(schema: str) -> str:
    """The caller ($3) waits no more; waiters not seen for a minute are forgotten too."""
    return (
        f'DELETE FROM "{schema}".runner_waiters WHERE namespace = $1 AND lock = $2'
        " AND (owner = $3 OR seen < now() - interval '1 minute')"
    )


def renew(schema: str) -> str:
    """Extend the caller's lease to `now() + $4` seconds; no row when it is no longer the caller's.

    $1 namespace, $2 lock, $3 owner, $4 lease (seconds). A lease that lapsed is
    not renewed, even when nobody took it meanwhile.
    """
    return (
        f'UPDATE "{schema}".runner_leases SET expires = now() + make_interval(secs => $4::float8)'
        " WHERE namespace = $1 AND lock = $2 AND owner = $3 AND expires > now() RETURNING 1"
    )


def release(schema: str) -> str:
    """Free the caller's lease at once ($1 namespace, $2 lock, $3 owner)."""
    return f'DELETE FROM "{schema}".runner_leases WHERE namespace = $1 AND lock = $2 AND owner = $3'


def hold(schema: str) -> str:
    """Before `release`, in its transaction: keep the caller's lease taken until $4 seconds
    after it was taken, when that is still to come (--hold). A held row has no owner (none
    can renew it) and pid 0; it frees itself when it expires, as any lease does."""
    return (
        f"UPDATE \"{schema}\".runner_leases SET owner = '', pid = 0,"
        " expires = since + make_interval(secs => $4::float8)"
        " WHERE namespace = $1 AND lock = $2 AND owner = $3"
        " AND since + make_interval(secs => $4::float8) > now()"
    )


def holders(schema: str) -> str:
    """Who holds a lock's slots now: what, host, pid (0: a --hold after the run), seconds
    held, and when the lease expires (epoch seconds, by the server's clock)."""
    return (
        "SELECT what, host, pid, extract(epoch FROM now() - since)::float8,"
        f' extract(epoch FROM expires)::float8 FROM "{schema}"'
        ".runner_leases WHERE namespace = $1 AND lock = $2 AND slot < $3::integer"
        " AND expires > now() ORDER BY slot"
    )


def leases(schema: str) -> str:
    """Every lease of a namespace that has not expired, for `runner locks`: its age and
    what is left of it by the server's clock, whatever the host's says."""
    return (
        "SELECT lock, slot, what, host, pid, extract(epoch FROM since)::float8, token,"
        " extract(epoch FROM expires - now())::float8, extract(epoch FROM now() - since)::float8"
        f' FROM "{schema}".runner_leases WHERE namespace = $1 AND expires > now()'
        " ORDER BY lock, slot"
    )


def marker_exists(schema: str) -> str:
    return f'SELECT 1 FROM "{schema}".runner_markers WHERE namespace = $1 AND name = $2'


def write_marker(schema: str, *, guarded: bool) -> str:
    """Record `name` as applied ($1 namespace, $2 name, $3 epoch seconds, $4 run id,
    $5 command as JSON, $6 host).

    `guarded`: only while the caller's lease ($7 lock, $8 owner) still holds; no row
    comes back, and nothing is written, when it is gone.
    """
    guard = (
        f' WHERE EXISTS (SELECT 1 FROM "{schema}".runner_leases WHERE namespace = $1'
        " AND lock = $7 AND owner = $8 AND expires > clock_timestamp())"
        if guarded
        else ""
    )
    return (
        f'INSERT INTO "{schema}".runner_markers (namespace, name, applied_at, run_id, cmd, host)'
        f" SELECT $1, $2, to_timestamp($3::float8), $4, $5, $6{guard}"
        " ON CONFLICT (namespace, name) DO UPDATE SET applied_at = EXCLUDED.applied_at,"
        " run_id = EXCLUDED.run_id, cmd = EXCLUDED.cmd, host = EXCLUDED.host RETURNING 1"
    )


def remove_marker(schema: str) -> str:
    return f'DELETE FROM "{schema}".runner_markers WHERE namespace = $1 AND name = $2 RETURNING 1'


def markers(schema: str) -> str:
    return (
        "SELECT name, extract(epoch FROM applied_at)::float8, run_id, cmd, host"
        f' FROM "{schema}".runner_markers WHERE namespace = $1 ORDER BY name'
    )
