"""apply, applied and forget on PostgreSQL, through the real CLI, against a real server."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.procs import UNTIL, alive, processes_with, read_pid, wait_for

if TYPE_CHECKING:
    import psycopg


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
    """20 runner processes, one name, one database: one application; while it runs, the
    others exit 3 (busy). The command runs until the test lets it end."""
    release = pg.tmp / "release"
    cmd = ["sh", "-c", f"echo once >> {pg.applied_log}; {UNTIL.format(release=release)}"]
    runners = [pg.start("apply", "--namespace", namespace, "shared", "--", *cmd) for _ in range(20)]
    wait_for(lambda: sum(r.poll() is not None for r in runners) == 19, 120, "the others to end")
    release.touch()
    codes = [runner.wait(timeout=60) for runner in runners]
    assert pg.applications() == ["once"]
    assert sorted(codes) == [0] + [3] * 19


def test_a_sigkilled_runners_command_ends_and_then_its_lease_frees(pg: Lab, namespace: str) -> None:
    """Regression: SIGKILL left the command running and the lease in place until it expired
    (lease + kill-after + 5 s). The watcher ends the command, then deletes the row: the
    next apply runs the step well before the lease could have expired, never beside it."""
    pidfile, release = pg.tmp / "pid", pg.tmp / "release"
    cmd = ["sh", "-c", f"echo $$ > {pidfile}; {UNTIL.format(release=release)}"]
    options = ("--lease", "1s", "--kill-after", "1")
    runner = pg.start("apply", "--namespace", namespace, *options, "db", "--", *cmd)
    command = read_pid(str(pidfile))
    runner.kill()
    runner.wait(timeout=10)
    killed = time.monotonic()
    wait_for(lambda: apply(pg, "db", "--", "true").returncode != 3, 30, "the lease's release")
    assert not alive(command)
    assert time.monotonic() - killed < 1 + 1 + 5 - 1
    assert apply(pg, "db", "--", "true").stdout == b"already applied\n"


def holding(pg: Lab, namespace: str, *options: str) -> tuple[subprocess.Popen[bytes], Path]:
    """apply db -- a command that runs until the returned file exists (it has started)."""
    started, release = pg.tmp / "started", pg.tmp / "release"
    cmd = ["sh", "-c", f"touch {started}; {UNTIL.format(release=release)}"]
    runner = pg.start("apply", "--namespace", namespace, *options, "db", "--", *cmd)
    wait_for(started.exists, what="the command to start")
    return runner, release


def test_a_terminated_connection_is_ridden_out(pg: Lab, pg_url: str, namespace: str) -> None:
    """The server ends the runner's connections: it reconnects, renews, and the apply ends well."""
    import psycopg

    runner, release = holding(pg, namespace, "--lease", "1s")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for _ in range(3):
            wait_for(lambda: bool(_runner_backends(conn)), what="the runner to (re)connect")
            for pid in _runner_backends(conn):
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    release.touch()
    assert runner.wait(timeout=30) == 0
    assert rows(pg_url, namespace) == ["db"]


def _runner_backends(conn: psycopg.Connection[tuple[object, ...]]) -> list[object]:
    found = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'runner.py'"
    ).fetchall()
    return [pid for (pid,) in found]


def test_a_lease_taken_by_another_holder_stops_the_command_and_records_nothing(
    pg: Lab, pg_url: str, namespace: str
) -> None:
    """The lease row is no longer ours (it lapsed and another host claimed it): the next
    renewal finds out, the command is stopped, exit 125, no row."""
    import psycopg

    runner, _ = holding(pg, namespace, "--lease", "1s")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE runner_leases SET owner = 'another host' WHERE namespace = %s", (namespace,)
        )
    assert runner.wait(timeout=30) == 125
    assert runner.stderr is not None
    message = runner.stderr.read()
    assert message.startswith(b"runner: error: lost the lock: the lease was no longer this run's")
    assert message.endswith(b"; command stopped\n")
    assert rows(pg_url, namespace) == []
    assert processes_with(pg.token) == []


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


def test_sigterm_while_the_marker_is_written_leaves_no_marker_later(
    pg: Lab, pg_url: str, namespace: str
) -> None:
    """Regression: the write committed after the runner had exited 143. Now the statement
    is cancelled (and would find no lease besides): no marker, then or later."""
    import psycopg

    assert apply(pg, "warm", "--", "true").returncode == 0
    with psycopg.connect(pg_url) as blocker:
        blocker.execute("LOCK TABLE runner_markers IN SHARE MODE")
        runner = pg.start("apply", "--namespace", namespace, "db", "--", "true")
        wait_for(lambda: _waits_to_write(pg_url), what="the marker's write to wait")
        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=10) == 143
        blocker.rollback()
    wait_for(lambda: not _waits_to_write(pg_url) and not _active(pg_url), what="quiet")
    assert rows(pg_url, namespace) == ["warm"]


def _waits_to_write(url: str) -> bool:
    from tests.e2e.test_fleet import sql

    waiting = "SELECT 1 FROM pg_locks WHERE NOT granted AND mode = 'RowExclusiveLock'"
    return bool(sql(url, waiting + " AND relation = 'runner_markers'::regclass"))


def _active(url: str) -> bool:
    """Whether a runner.py connection is still running a statement."""
    from tests.e2e.test_fleet import sql

    busy = "SELECT 1 FROM pg_stat_activity WHERE application_name = 'runner.py'"
    return bool(sql(url, busy + " AND state = 'active'"))
