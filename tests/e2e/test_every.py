"""`apply NAME --every PERIOD`: once per period (aligned to the epoch, in UTC), by the
state's clock: the host's for the state folder, the server's for PostgreSQL."""

from __future__ import annotations

import json
import signal
import sys
import time

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.e2e.test_hold import _ahead
from tests.procs import wait_for


def _period(every: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() // every * every))


def test_apply_every_runs_once_a_period_and_a_failure_leaves_it_to_run(lab: Lab) -> None:
    failed = lab.run("apply", "--every", "1d", "nightly", "--", "false")
    assert failed.returncode == 1
    first = lab.run("apply", "--every", "1d", "nightly", "--", "echo", "ran")
    assert (first.returncode, first.stdout) == (0, b"ran\n")
    again = lab.run("apply", "--every", "1d", "nightly", "--", "echo", "ran")
    assert again.returncode == 0
    assert again.stdout == f"already applied for the period from {_period(86400)}\n".encode()
    dry = lab.run("apply", "--every", "1d", "--dry-run", "nightly", "--", "echo", "ran")
    assert dry.stdout.startswith(b"already applied for the period from ")
    hourly = lab.run("apply", "--every", "1h", "--dry-run", "nightly", "--", "echo", "ran")
    assert hourly.stdout == (
        f"would apply nightly for the period from {_period(3600)}: would run echo ran\n".encode()
    )
    [entry] = json.loads(lab.run("applied", "--json").stdout)
    assert (entry["name"], entry["period"]) == ("nightly", _period(86400))
    assert (lab.state / f"nightly@{_period(86400)}.done").exists()
    assert not (lab.state / "nightly.done").exists()
    forgot = lab.run("forget", "--every", "1d", "nightly")
    assert forgot.returncode == 0
    assert lab.run("apply", "--every", "1d", "nightly", "--", "echo", "ran").stdout == b"ran\n"


def test_a_period_that_is_not_whole_seconds_is_refused(lab: Lab) -> None:
    for value in ("1.5s", "500ms", "0"):
        result = lab.run("apply", "--every", value, "x", "--", "true")
        assert result.returncode == 125 or value == "0", (value, result.stderr)
    assert lab.run("run", "--every", "1h", "--", "true").returncode == 125


def test_apply_every_counts_periods_by_the_server_s_clock(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """A host whose clock is an hour ahead is in the server's period, not its own."""
    lab.env["RUNNER_STATE_URL"] = pg_url
    args = ["apply", "--namespace", namespace, "--every", "1h", "hourly", "--", "echo", "ran"]
    first = lab.run(*args)
    assert (first.returncode, first.stdout) == (0, b"ran\n"), first.stderr
    ahead = _ahead([sys.executable, RUNNER, *args], lab)
    assert ahead.returncode == 0, ahead.stderr
    assert ahead.stdout.startswith(b"already applied for the period from ")


@pytest.mark.parametrize("table", ["runner_markers", "runner_leases"])
def test_a_sigterm_while_the_marker_write_waits_on_a_locked_table_ends_the_run(
    lab: Lab, pg_url: str, namespace: str, table: str
) -> None:
    """Regression: with the markers table locked, a SIGTERM did not end the runner within 2 s.
    It ends it with 143, and no marker is left."""
    import psycopg

    lab.env["RUNNER_STATE_URL"] = pg_url
    assert lab.run("apply", "--namespace", namespace, "warm", "--", "true").returncode == 0
    started, release = lab.tmp / "started", lab.tmp / "release"
    script = f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done"
    runner = lab.start("apply", "--namespace", namespace, "step", "--", "sh", "-c", script)
    wait_for(started.exists, what="the command")
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        release.touch()
        wait_for(lambda: _waits_on_a_lock(pg_url), what="the marker write to wait")
        sent = time.monotonic()
        runner.send_signal(signal.SIGTERM)
        _, err = runner.communicate(timeout=60)
        took = time.monotonic() - sent
        conn.rollback()
    assert runner.returncode == 143, err
    assert took < 2, took
    listed = lab.run("applied", "--namespace", namespace, "--json")
    assert [entry["name"] for entry in json.loads(listed.stdout)] == ["warm"]


def _waits_on_a_lock(url: str) -> bool:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND application_name = 'runner.py'"
        ).fetchone()
    return bool(found and found[0])


@pytest.mark.parametrize("stage", ["deciding", "marking"])
def test_a_runner_killed_while_its_state_waits_leaves_no_marker_and_frees_the_lock(
    lab: Lab, pg_url: str, namespace: str, stage: str
) -> None:
    """SIGKILL while the marker is looked for (before the command) or written (after it), the
    markers table locked: the watcher deletes the lease row at once, not lease + kill-after
    + 5 s later; the marker is there only if the command succeeded, and the next apply
    agrees with it."""
    import psycopg

    from tests.e2e.test_fleet import holders

    lab.env["RUNNER_STATE_URL"] = pg_url
    assert lab.run("apply", "--namespace", namespace, "warm", "--", "true").returncode == 0
    started, release = lab.tmp / "started", lab.tmp / "release"
    script = f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done"
    if stage == "deciding":
        release.touch()
    options = ("--namespace", namespace, "--kill-after", "1", "step", "--", "sh", "-c", script)
    with psycopg.connect(pg_url) as conn:
        if stage == "deciding":
            conn.execute("LOCK TABLE runner_markers IN ACCESS EXCLUSIVE MODE")
        runner = lab.start("apply", *options)
        if stage == "marking":
            wait_for(started.exists, what="the command")
            conn.execute("LOCK TABLE runner_markers IN ACCESS EXCLUSIVE MODE")
            release.touch()
        wait_for(lambda: _waits_on_a_lock(pg_url), what="the runner to wait on the table")
        runner.kill()
        runner.wait(timeout=30)
        conn.rollback()
    wait_for(lambda: not holders(pg_url, namespace), timeout=10, what="the lease row's end")
    listed = lab.run("applied", "--namespace", namespace, "--json")
    names = [entry["name"] for entry in json.loads(listed.stdout)]
    again = lab.run("apply", "--namespace", namespace, "step", "--", "echo", "ran")
    if stage == "deciding":
        assert names == ["warm"]
    # marking: the command had succeeded and its marker's statement was sent whole; the
    # server may commit it after the runner is gone (an answer lost on its way back)
    assert (again.returncode, again.stdout) == (
        (0, b"already applied\n") if "step" in names else (0, b"ran\n")
    )
