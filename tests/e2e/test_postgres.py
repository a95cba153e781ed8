"""apply, applied and forget on PostgreSQL, through the real CLI, against a real server."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.procs import processes_with, read_pid, wait_for


@pytest.fixture
def pg(lab: Lab, pg_url: str, namespace: str) -> Lab:
    """The lab, with apply's state in PostgreSQL under a namespace of its own."""
    lab.env["RUNNER_STATE_URL"] = pg_url
    lab.env["RUNNER_TEST_NAMESPACE"] = namespace
    return lab


def apply(
    lab: Lab, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return lab.run("apply", "--namespace", lab.env["RUNNER_TEST_NAMESPACE"], *args, env=env)


def rows(pg_url: str, namespace: str) -> list[str]:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        if not conn.execute("SELECT to_regclass('runner_markers') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
            return []
        found = conn.execute(
            "SELECT name FROM runner_markers WHERE namespace = %s ORDER BY name", (namespace,)
        )
        return [name for (name,) in found.fetchall()]


def test_apply_once_then_already_applied(pg: Lab, pg_url: str, namespace: str) -> None:
    """The marker is a row; the second apply skips; the state folder is never made."""
    assert apply(pg, "db").returncode == 0
    second = apply(pg, "db")
    assert (second.returncode, second.stdout) == (0, b"already applied\n")
    assert len(pg.applications()) == 1
    assert rows(pg_url, namespace) == ["db"]
    assert not pg.state.exists()


def test_failure_and_dry_run_leave_no_row(pg: Lab, pg_url: str, namespace: str) -> None:
    """APPLY_FAIL=1 exits 1 without a row; --dry-run runs and writes nothing."""
    assert apply(pg, "db", env={"APPLY_FAIL": "1"}).returncode == 1
    dry = apply(pg, "--dry-run", "other")
    assert dry.returncode == 0
    assert b"would apply other" in dry.stdout
    assert rows(pg_url, namespace) == []
    assert len(pg.applications()) == 1


def test_namespaces_keep_state_apart(pg: Lab) -> None:
    """The same NAME in two namespaces is two applications."""
    assert apply(pg, "db").returncode == 0
    other = pg.run("apply", "--namespace", "elsewhere" + pg.token[:8], "db")
    assert other.returncode == 0
    assert len(pg.applications()) == 2


def test_twenty_concurrent_applies_apply_exactly_once(pg: Lab, namespace: str) -> None:
    """20 runner processes, one name, one database: one application."""
    cmd = ["sh", "-c", f"echo once >> {pg.applied_log}; sleep 0.3"]
    runners = [pg.start("apply", "--namespace", namespace, "shared", "--", *cmd) for _ in range(20)]
    codes = [runner.wait(timeout=60) for runner in runners]
    assert pg.applications() == ["once"]
    assert set(codes) <= {0, 3}
    assert codes.count(3) >= 1


def test_a_sigkilled_runner_keeps_the_lock_while_its_command_lives(pg: Lab, namespace: str) -> None:
    """The session's socket lives on in the command: no other apply until it ends."""
    pidfile, release = pg.tmp / "pid", pg.tmp / "release"
    cmd = ["sh", "-c", f"echo $$ > {pidfile}; while [ ! -e {release} ]; do sleep 0.02; done"]
    runner = pg.start("apply", "--namespace", namespace, "db", "--", *cmd)
    read_pid(str(pidfile))
    runner.kill()
    runner.wait(timeout=10)
    second = apply(pg, "db", "--", "true")
    assert second.returncode == 3
    assert b"another run in progress" in second.stderr
    release.touch()
    wait_for(lambda: processes_with(pg.token) == [], what="the orphaned command to end")
    wait_for(lambda: apply(pg, "db", "--", "true").returncode != 3, what="the session to close")
    assert apply(pg, "db", "--", "true").stdout == b"already applied\n"


def test_a_lost_connection_mid_apply_records_nothing(pg: Lab, pg_url: str, namespace: str) -> None:
    """The session dies while the command runs: the command is stopped, exit 125, no row."""
    import psycopg

    started, release = pg.tmp / "started", pg.tmp / "release"
    cmd = ["sh", "-c", f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done"]
    runner = pg.start("apply", "--namespace", namespace, "db", "--", *cmd)
    wait_for(started.exists, what="the command to start")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'runner.py' AND pid <> pg_backend_pid()"
        )
    assert runner.wait(timeout=30) == 125
    assert runner.stderr is not None
    message = runner.stderr.read()
    assert message.startswith(b"runner: error: lost the lock: the session ended")
    assert message.endswith(b"; command stopped\n")
    assert rows(pg_url, namespace) == []


def test_applied_and_forget(pg: Lab, pg_url: str, namespace: str) -> None:
    """applied lists the rows of the namespace; forget deletes one, under the lock."""
    apply(pg, "db")
    listing = pg.run("applied", "--namespace", namespace).stdout.decode()
    assert listing.splitlines()[1].startswith("db ")
    assert pg.run("forget", "--namespace", namespace, "db").returncode == 0
    assert rows(pg_url, namespace) == []


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def test_connection_problems_are_one_line_and_125(
    lab: Lab, pg_url: str, silent_server: int
) -> None:
    """Refused, wrong password, unknown database, no answer: one runner: line, no password."""
    parts = urlsplit(pg_url)
    password = parts.password or ""
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    closed_port = free.getsockname()[1]
    free.close()
    urls = {
        "refused": f"postgresql://runner:{password}@127.0.0.1:{closed_port}/postgres",
        "password": pg_url.replace(f":{password}@", ":wrong-secret@"),
        "database": pg_url.rsplit("/", 1)[0] + "/no_such_db",
        "timeout": f"postgresql://runner:{password}@127.0.0.1:{silent_server}/postgres",
    }
    for problem, url in urls.items():
        result = lab.run("apply", "--state", url, "--connect-timeout", "1", "db", timeout=20)
        assert result.returncode == 125, problem
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1, (problem, lines)
        assert lines[0].startswith("runner: error: cannot connect to postgresql://runner@")
        assert password not in result.stderr.decode()
        assert "wrong-secret" not in result.stderr.decode()
    assert lab.applications() == []
    assert not lab.log.exists() or password not in lab.log.read_text()


def test_without_psycopg_the_runner_says_how_to_install_it(lab: Lab, pg_url: str) -> None:
    """No driver (site-packages off): exit 125 with the install command."""
    result = subprocess.run(
        [sys.executable, "-S", RUNNER, "apply", "--state", pg_url, "db"],
        env=lab.env,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert result.returncode == 125
    assert b"pip install" in result.stderr
    assert lab.applications() == []


def test_a_bad_state_url_is_a_usage_error(lab: Lab) -> None:
    """--state must be a postgresql:// URL."""
    result = lab.run("apply", "--state", "mysql://x", "db")
    assert result.returncode == 125
    assert b"postgresql://" in result.stderr


def test_applied_lists_a_corrupt_row_by_name_and_the_rest(
    pg: Lab, pg_url: str, namespace: str
) -> None:
    """A row whose command is not JSON (or not a list of strings) is listed as corrupt."""
    import psycopg

    for name in ("good", "bad", "odd"):
        assert apply(pg, name, "--", "true").returncode == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE runner_markers SET cmd = %s WHERE namespace = %s AND name = 'bad'",
            ("[" * 100_000, namespace),
        )
        conn.execute(
            "UPDATE runner_markers SET cmd = '{\"a\": 1}', applied_at = 'infinity'"
            " WHERE namespace = %s AND name = 'odd'",
            (namespace,),
        )
    listed = pg.run("applied", "--namespace", namespace)
    assert listed.returncode == 0, listed.stderr
    rows_shown = {line.split()[0]: line for line in listed.stdout.decode().splitlines()[1:]}
    assert "corrupt marker" in rows_shown["bad"]
    assert "corrupt marker" in rows_shown["odd"]
    assert "true" in rows_shown["good"]
