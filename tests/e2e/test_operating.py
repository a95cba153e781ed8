"""Operating a fleet: `runner locks` shows who holds what; `runner setup` prepares a server
for a runtime role that may not create anything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import Lab
from tests.e2e.test_fleet import HOLD, Host, sql
from tests.e2e.test_lock_scope import holding
from tests.procs import wait_for


def test_locks_on_one_host_names_the_holder_and_its_token(lab: Lab) -> None:
    """The state folder's held locks: what, where, pid, the token; none once released."""
    assert lab.run("locks").stdout == b"no lock is held\n"
    runner, release = holding(lab, [], "db")
    table = lab.run("locks").stdout.decode().splitlines()
    assert table[0].split() == ["LOCK", "TOKEN", "EXPIRES", "IN", "HELD", "BY"]
    assert table[1].startswith("lock ")
    assert "apply db on " in table[1]
    assert f"(pid {runner.pid})" in table[1]
    (entry,) = json.loads(lab.run("locks", "--json").stdout)
    assert (entry["lock"], entry["what"], entry["pid"], entry["token"]) == (
        "lock",
        "apply db",
        runner.pid,
        1,
    )
    release.touch()
    assert runner.wait(timeout=30) == 0
    assert lab.run("locks", "--json").stdout == b"[]\n"


def test_locks_across_the_fleet_shows_every_lease(lab: Lab, pg_url: str, namespace: str) -> None:
    """With --state: each live lease of the namespace, its token and when it expires."""
    host = Host(lab, "web-1", pg_url, namespace)
    holder = host.start(HOLD, "--lease", "30s")
    try:
        wait_for(host.started.exists, what="the holder")
        shown = lab.run("locks", "--state", pg_url, "--namespace", namespace, "--json")
        (lease,) = json.loads(shown.stdout)
        assert lease["lock"] == "run:nightly"
        assert lease["pid"] == holder.pid
        assert 30 < lease["expires_in"] <= 30 + 10 + 5
        table = lab.run("locks", "--state", pg_url, "--namespace", namespace).stdout.decode()
        assert "run:nightly" in table
        assert f"(pid {holder.pid})" in table
    finally:
        host.release.touch()
        assert holder.wait(timeout=30) == 0
    after = lab.run("locks", "--state", pg_url, "--namespace", namespace, "--json")
    assert json.loads(after.stdout) == []


def test_setup_grants_a_runtime_role_exactly_what_it_needs(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """A role with no CREATE cannot make the tables; after `setup --grant` it applies."""
    role, schema = "g" + namespace, "s" + namespace
    sql(pg_url, f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    url = pg_url.replace(pg_url.split("//")[1].split("@", maxsplit=1)[0], f"{role}:pw")
    options = ["--state", url, "--schema", schema, "--namespace", namespace]
    refused = lab.run("apply", *options, "step", "--", "true")
    assert refused.returncode == 125
    assert b"runner setup --state URL --grant ROLE" in refused.stderr
    made = lab.run("setup", "--state", pg_url, "--schema", schema, "--grant", role)
    assert made.returncode == 0, made.stderr
    assert made.stdout == f"the state tables are ready in schema {schema}\n".encode()
    applied = lab.run("apply", *options, "step", "--", "true")
    assert applied.returncode == 0, applied.stderr
    assert lab.run("apply", *options, "step", "--", "true").stdout == b"already applied\n"
    creates = sql(pg_url, f"SELECT has_schema_privilege('{role}', '{schema}', 'CREATE')")
    assert creates == [(False,)]


def test_setup_needs_a_state_url(lab: Lab) -> None:
    """The state folder needs no setup: asking for one says what is missing."""
    result = lab.run("setup", "--grant", "app")
    assert result.returncode == 125
    assert b"give --state URL" in result.stderr


FENCE = Path(__file__).resolve().parents[2] / "contrib" / "fence.sql"


def test_the_fencing_recipe_refuses_a_stale_holder(lab: Lab, pg_url: str, namespace: str) -> None:
    """Regression: the README's fencing recipe exited 0 (UPDATE 0) for a stale holder.

    contrib/fence.sql, as the README runs it: the newest holder writes; an older token
    fails (psql exits non-zero), so its apply is not marked and its work rolls back."""
    if shutil.which("psql") is None:
        pytest.skip("psql is not installed")
    sql(pg_url, f"CREATE SCHEMA {namespace}")
    sql(pg_url, f"CREATE TABLE {namespace}.fence (resource text PRIMARY KEY, token bigint)")
    sql(pg_url, f"CREATE TABLE {namespace}.work (token bigint)")
    work = lab.tmp / "work.sql"
    work.write_text("INSERT INTO work VALUES (:token);\n")
    psql = (
        f'psql "$DB" -q -1 -v ON_ERROR_STOP=1 -v token="$RUNNER_FENCING_TOKEN" -f {FENCE} -f {work}'
    )
    options = ["--state", pg_url, "--namespace", namespace]
    env = {"DB": pg_url, "PGOPTIONS": f"-csearch_path={namespace}"}
    first = lab.run("apply", *options, "step1", "--", "sh", "-c", psql, env=env)
    assert first.returncode == 0, first.stderr
    second = lab.run("apply", *options, "step2", "--", "sh", "-c", psql, env=env)
    assert second.returncode == 0, second.stderr
    stale = "RUNNER_FENCING_TOKEN=1; " + psql
    refused = lab.run("apply", *options, "step3", "--", "sh", "-c", stale, env=env)
    assert refused.returncode == 1
    assert b"stale fencing token 1" in refused.stderr
    assert sql(pg_url, f"SELECT token FROM {namespace}.work ORDER BY token") == [(1,), (2,)]
