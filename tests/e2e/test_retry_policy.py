"""Retry policy and single-instance runs through the real CLI."""

from __future__ import annotations

import json
from datetime import datetime

from tests.e2e.conftest import Lab
from tests.procs import UNTIL, processes_with, read_pid, wait_for


def log_lines(lab: Lab) -> list[dict[str, object]]:
    return [json.loads(line) for line in lab.log.read_text().splitlines()]


def test_retry_on_stops_on_an_unlisted_code(lab: Lab) -> None:
    """--retry-on 1: exit 2 (bad arguments) is not retried; its code is the result."""
    result = lab.run(
        "run", "--retries", "3", "--backoff", "0", "--retry-on", "1", "--", "sh", "-c", "exit 2"
    )
    assert result.returncode == 2
    assert len(log_lines(lab)) == 1


def test_retry_on_retries_a_listed_code(lab: Lab) -> None:
    """--retry-on 1-3: exit 3 is retried up to the limit."""
    result = lab.run(
        "run", "--retries", "2", "--backoff", "0", "--retry-on", "1-3", "--", "sh", "-c", "exit 3"
    )
    assert result.returncode == 3
    assert [line["attempt"] for line in log_lines(lab)] == [1, 2, 3]


def test_deadline_ends_the_run_within_its_budget(lab: Lab) -> None:
    """--deadline 2 with --backoff 1: no attempt or wait runs past 2 s; it says so."""
    result = lab.run("run", "--retries", "10", "--backoff", "1", "--deadline", "2", "--", "false")
    assert result.returncode == 1
    assert b"--deadline" in result.stderr
    lines = log_lines(lab)
    start = datetime.fromisoformat(str(lines[0]["ts"])).timestamp()
    last = lines[-1]
    end = datetime.fromisoformat(str(last["ts"])).timestamp() + int(str(last["duration_ms"])) / 1000
    assert end - start <= 2
    assert "delay_ms" not in last
    assert [line.get("delay_ms") for line in lines[:-1]] == [
        1000 * 2**n for n in range(len(lines) - 1)
    ]


def test_deadline_cuts_the_last_attempt_short(lab: Lab) -> None:
    """--deadline 1 on a 30 s command: killed at the budget, 124, nothing left."""
    result = lab.run("run", "--deadline", "1", "--", lab.fixture("hang.sh"))
    assert result.returncode == 124
    assert b"timeout" in result.stderr
    assert processes_with(lab.token) == []


def test_the_command_sees_attempt_numbers_and_the_run_id(lab: Lab) -> None:
    """RUNNER_ATTEMPT/RUNNER_MAX_ATTEMPTS and RUNNER_RUN_ID in the command's environment."""
    script = 'echo "$RUNNER_ATTEMPT/$RUNNER_MAX_ATTEMPTS $RUNNER_RUN_ID"; exit 1'
    result = lab.run("run", "--retries", "2", "--backoff", "0", "--", "sh", "-c", script)
    run_id = log_lines(lab)[0]["run_id"]
    assert result.stdout.decode().splitlines() == [f"{n}/3 {run_id}" for n in (1, 2, 3)]


def test_two_runs_with_one_lock_execute_once(lab: Lab) -> None:
    """run --lock FILE: while one runs, the other exits 3 without running."""
    lock, out, release = lab.tmp / "job.lock", lab.tmp / "out", lab.tmp / "release"
    script = f"echo ran >> {out}; {UNTIL.format(release=release)}"
    first = lab.start("run", "--lock", str(lock), "--", "sh", "-c", script)
    wait_for(out.exists, what="the first run to start")
    second = lab.run("run", "--lock", str(lock), "--", "sh", "-c", script)
    release.touch()
    assert first.wait(timeout=20) == 0
    assert second.returncode == 3
    assert b"another run in progress" in second.stderr
    assert out.read_text() == "ran\n"


def test_lock_wait_waits_for_the_holder_to_finish(lab: Lab) -> None:
    """--lock-wait 30: the second run waits, then runs once the first is done."""
    lock, out, release = lab.tmp / "job.lock", lab.tmp / "out", lab.tmp / "release"
    script = f"echo ran >> {out}; {UNTIL.format(release=release)}"
    first = lab.start("run", "--lock", str(lock), "--", "sh", "-c", script)
    wait_for(out.exists, what="the first run to start")
    second = lab.start("run", "--lock", str(lock), "--lock-wait", "30", "--", "sh", "-c", script)
    release.touch()
    assert first.wait(timeout=20) == 0
    assert second.wait(timeout=30) == 0
    assert out.read_text() == "ran\nran\n"


def test_a_run_lock_survives_a_sigkilled_runner_while_its_command_lives(lab: Lab) -> None:
    """SIGKILL of the runner: its command keeps the lock until it ends, as with apply."""
    lock, pidfile, release = lab.tmp / "job.lock", lab.tmp / "pid", lab.tmp / "release"
    script = f"echo $$ > {pidfile}; {UNTIL.format(release=release)}"
    runner = lab.start("run", "--lock", str(lock), "--", "sh", "-c", script)
    read_pid(str(pidfile))
    runner.kill()
    runner.wait(timeout=10)
    assert lab.run("run", "--lock", str(lock), "--", "true").returncode == 3
    release.touch()
    wait_for(lambda: processes_with(lab.token) == [], what="the orphaned command to end")
    assert lab.run("run", "--lock", str(lock), "--", "true").returncode == 0


def test_a_lock_in_a_missing_folder_is_a_runner_error(lab: Lab) -> None:
    """--lock in a folder that does not exist: 125, a clear line, nothing run."""
    result = lab.run("run", "--lock", str(lab.tmp / "nope" / "x.lock"), "--", "true")
    assert result.returncode == 125
    assert b"No such file" in result.stderr
    assert not lab.log.exists()
