"""Every statement the PostgreSQL backend sends, in one place.

Tables live in one named schema (--schema, default `public`), never wherever a
role's search_path points, so every host and role sees the same markers.
"""

from __future__ import annotations

SCHEMA_RULE = "[A-Za-z_][A-Za-z0-9_]{0,62}"


def create(schema: str) -> list[str]:
    """The schema and its three tables, if missing."""
    return [
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
        f"""CREATE TABLE IF NOT EXISTS "{schema}".runner_holders (
            namespace  text        NOT NULL,
            lock       text        NOT NULL,
            slot       integer     NOT NULL,
            what       text        NOT NULL,
            host       text        NOT NULL,
            pid        integer     NOT NULL,
            since      timestamptz NOT NULL,
            PRIMARY KEY (namespace, lock, slot))""",
    ]


def tables_exist(schema: str) -> str:
    return (
        f"SELECT to_regclass('\"{schema}\".runner_markers') IS NOT NULL"
        f" AND to_regclass('\"{schema}\".runner_holders') IS NOT NULL"
    )


TRY_LOCK = "SELECT pg_try_advisory_lock($1::bigint)"
"""Advisory lock keys are bigint; parameters travel as text, so each is cast."""
LOCK = "SELECT pg_advisory_lock($1::bigint)"
UNLOCK = "SELECT pg_advisory_unlock($1::bigint)"
SET = "SELECT set_config($1, $2, false)"
TIMEOUTS = (
    "SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', $2, false)"
)
ALIVE = "SELECT 1"


def next_token(schema: str) -> str:
    """One more than the last token of the lock, across every host (1 the first time)."""
    return (
        f'INSERT INTO "{schema}".runner_tokens (namespace, lock, token) VALUES ($1, $2, 1)'
        f' ON CONFLICT (namespace, lock) DO UPDATE SET token = "{schema}".runner_tokens.token + 1'
        " RETURNING token"
    )


def claim(schema: str) -> str:
    """Say who holds a slot of a lock, and since when (server time)."""
    return (
        f'INSERT INTO "{schema}".runner_holders (namespace, lock, slot, what, host, pid, since)'
        " VALUES ($1, $2, $3::integer, $4, $5, $6::integer, now())"
        " ON CONFLICT (namespace, lock, slot) DO UPDATE SET what = EXCLUDED.what,"
        " host = EXCLUDED.host, pid = EXCLUDED.pid, since = EXCLUDED.since"
    )


def holders(schema: str) -> str:
    return (
        f'SELECT what, host, pid, extract(epoch FROM now() - since)::float8 FROM "{schema}"'
        ".runner_holders WHERE namespace = $1 AND lock = $2 AND slot < $3::integer ORDER BY slot"
    )


def marker_exists(schema: str) -> str:
    return f'SELECT 1 FROM "{schema}".runner_markers WHERE namespace = $1 AND name = $2'


def write_marker(schema: str) -> str:
    return (
        f'INSERT INTO "{schema}".runner_markers (namespace, name, applied_at, run_id, cmd, host)'
        " VALUES ($1, $2, to_timestamp($3::float8), $4, $5, $6)"
        " ON CONFLICT (namespace, name) DO UPDATE SET applied_at = EXCLUDED.applied_at,"
        " run_id = EXCLUDED.run_id, cmd = EXCLUDED.cmd, host = EXCLUDED.host"
    )


def remove_marker(schema: str) -> str:
    return f'DELETE FROM "{schema}".runner_markers WHERE namespace = $1 AND name = $2 RETURNING 1'


def markers(schema: str) -> str:
    return (
        "SELECT name, extract(epoch FROM applied_at)::float8, run_id, cmd, host"
        f' FROM "{schema}".runner_markers WHERE namespace = $1 ORDER BY name'
    )
