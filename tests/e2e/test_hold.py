"""`run --lock NAME --hold DURATION`: once per period across a fleet (ShedLock's
lockAtLeastFor), on both backends; and `locks` by the state's clock."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.e2e.test_fleet import MARK, Host, holders, sql
from tests.procs import wait_for


def test_a_held_file_lock_refuses_the_next_run_and_says_until_when(lab: Lab) -> None:
    first = lab.run("run", "--lock", "nightly", "--hold", "1h", "--", "true")
    assert first.returncode == 0, first.stderr
    again = lab.run("run", "--lock", "nightly", "--", "echo", "again")
    assert again.returncode == 3
    assert again.stdout == b""
    message = again.stderr.decode()
    assert "run true ended; the lock is held until 20" in message
    assert "(--hold)" in message
    code = lab.run("run", "--conflict-exit-code", "75", "--lock", "nightly", "--", "true")
    assert code.returncode == 75
    listed = json.loads(lab.run("locks", "--json").stdout)
    assert [row["lock"] for row in listed] == ["run:nightly.lock"]
    assert listed[0]["held_until"] > time.time() + 3500


def test_a_hold_is_the_same_whatever_the_outcome_and_a_waiter_waits_it_out(lab: Lab) -> None:
    failed = lab.run("run", "--lock", "nightly", "--hold", "2s", "--", "false")
    assert failed.returncode == 1
    began = time.monotonic()
    waited = lab.run("run", "--lock", "nightly", "--lock-wait", "30", "--", "echo", "later")
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout == b"later\n"
    assert time.monotonic() - began >= 1  # what was left of the 2 s hold


def test_a_hold_outlives_a_runner_killed_with_sigkill(lab: Lab) -> None:
    started = lab.tmp / "started"
    runner = lab.start(
        "run", "--lock", "nightly", "--hold", "1h", "--timeout", "1h", "--", "sh", "-c",
        f"touch {started}; exec sleep 300",
    )  # fmt: skip
    wait_for(started.exists, what="the command")
    runner.kill()
    runner.wait(timeout=30)
    wait_for(lambda: lab.run("run", "--lock", "nightly", "--", "true").returncode == 3)
    assert b"(--hold)" in lab.run("run", "--lock", "nightly", "--", "true").stderr


def test_a_hold_needs_a_lock(lab: Lab) -> None:
    result = lab.run("run", "--hold", "5m", "--", "true")
    assert result.returncode == 125
    assert b"--hold goes with --lock" in result.stderr
    assert lab.run("apply", "--hold", "5m", "step").returncode == 125


def test_a_held_lease_refuses_every_other_host_by_the_server_s_clock(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """A host whose clock is an hour ahead sees the hold as the server keeps it."""
    first, second = (Host(lab, f"web-{n}", pg_url, namespace) for n in (1, 2))
    done = first.start(MARK, "--hold", "1h")
    assert done.wait(timeout=30) == 0, done.stderr.read() if done.stderr else b""
    [(lock, _, pid)] = holders(pg_url, namespace)
    assert (lock, pid) == ("run:nightly", 0)
    ahead = _ahead([*second.runner("--lock", "nightly"), "--", "touch", str(second.started)], lab)
    assert ahead.returncode == 3
    assert b"ended; the lock is held until 20" in ahead.stderr
    until = sql(
        pg_url,
        "SELECT extract(epoch FROM expires - since)::float8 FROM runner_leases"
        " WHERE namespace = %s",
        (namespace,),
    )[0][0]
    assert until == pytest.approx(3600, abs=1)
    assert not second.started.exists()


def test_a_job_on_every_host_runs_once_for_a_hold_however_far_apart_their_cron_fires(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Regression: the lease was freed the moment the command ended, so a host whose cron
    fired (or started late) a few seconds after a 2 s job had ended ran it again."""
    hosts = [Host(lab, f"web-{n}", pg_url, namespace) for n in range(12)]
    runs = lab.tmp / "runs"
    script = f"echo x >> {runs}; sleep 2"
    started = []
    began = time.monotonic()
    for n, host in enumerate(hosts):  # cron firing 0 to 5 s apart
        while time.monotonic() < began + n * 5 / len(hosts):
            time.sleep(0.01)  # the schedule itself, not a wait for an event
        started.append(
            subprocess.Popen(
                [*host.runner("--lock", "nightly", "--hold", "9m"), "--", "sh", "-c", script],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=lab.env,
            )
        )
    codes = [runner.wait(timeout=60) for runner in started]
    assert sorted(codes) == [0] + [3] * (len(hosts) - 1)
    assert runs.read_text() == "x\n"


def test_locks_ages_a_lease_by_the_server_s_clock(lab: Lab, pg_url: str, namespace: str) -> None:
    """Regression: `locks` aged a holder by the local clock: an hour off on a host an hour
    ahead."""
    host = Host(lab, "web-1", pg_url, namespace)
    release = host.release
    holder = host.start(f"touch {host.started}; while [ ! -e {release} ]; do sleep 0.02; done")
    try:
        wait_for(host.started.exists, what="the holder's command")
        ahead = _ahead(
            [sys.executable, RUNNER, "locks", "--state", pg_url, "--namespace", namespace], lab
        )
        assert ahead.returncode == 0, ahead.stderr
        held_by = ahead.stdout.decode().splitlines()[1]
        assert re.search(r" for \d+(\.\d+)?s$", held_by), held_by  # seconds, not an hour
    finally:
        release.touch()
        holder.wait(timeout=30)


def _ahead(argv: list[str], lab: Lab) -> subprocess.CompletedProcess[bytes]:
    """`argv` on a host whose clock is an hour ahead (libfaketime)."""
    if shutil.which("faketime") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("faketime is required in CI (make postgres installs it)")
        pytest.skip("no faketime")
    return subprocess.run(
        ["faketime", "-f", "+1h", *argv],
        capture_output=True,
        env=lab.env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("subcommand", [["locks"], ["applied"]])
def test_a_mistyped_schema_is_an_error_not_an_empty_answer(
    lab: Lab, pg_url: str, namespace: str, subcommand: list[str]
) -> None:
    """Regression: `locks --schema nosuch` said "no lock is held", `applied --schema nosuch`
    "nothing applied yet"."""
    lab.env["RUNNER_STATE_URL"] = pg_url
    schema = f"nosuch_{namespace}"
    result = lab.run(*subcommand, "--namespace", namespace, "--schema", schema)
    assert result.returncode == 125, result.stdout
    assert f"there is no schema '{schema}' on the server: check --schema".encode() in result.stderr
    assert result.stdout == b""
