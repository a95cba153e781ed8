"""The lab's eight steps, literally, through the real CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime

import pytest

from tests.e2e.conftest import Lab
from tests.procs import (
    group_members,
    lock_held_elsewhere,
    processes_with,
    read_pid,
    wait_for,
    wait_running,
)


def test_1_output_and_exit_code_pass_through(lab: Lab) -> None:
    """stdout bytes as they are, stdin passed in, the command's own exit code."""
    result = lab.run("run", "--", "sh", "-c", r"printf 'a\000b\377'; cat; exit 3", stdin=b"in")
    assert result.returncode == 3
    assert result.stdout == b"a\x00b\xffin"
    assert result.stderr == b""


def test_1_arguments_are_never_shell_interpreted(lab: Lab) -> None:
    """'$(...)', ';' and spaces reach the command as one literal argument each."""
    result = lab.run("run", "--", "printf", "%s|", "a b", "$(id)", ";", "*")
    assert result.stdout == b"a b|$(id)|;|*|"


def test_2_timeout_kills_hang_sh_and_its_sleep(lab: Lab) -> None:
    """hang.sh: exit 124, 'timeout' on stderr, no process of it left."""
    pidfile = str(lab.tmp / "pid")
    result = lab.run(
        "run",
        "--timeout",
        "1",
        "--",
        "sh",
        "-c",
        f'echo $$ > {pidfile}; exec "$0"',
        lab.fixture("hang.sh"),
    )
    assert result.returncode == 124
    assert b"timeout" in result.stderr
    assert group_members(read_pid(pidfile)) == []
    assert processes_with(lab.token) == []


def test_2_a_background_child_does_not_hold_the_callers_pipe(lab: Lab) -> None:
    """sh -c 'sleep 30 & sleep 30': the caller's pipe closes when the runner ends."""
    result = lab.run("run", "--timeout", "0.5", "--", "sh", "-c", "sleep 30 & sleep 30", timeout=20)
    assert result.returncode == 124
    assert processes_with(lab.token) == []


def test_3_flaky_succeeds_on_the_third_attempt_with_doubling_waits(lab: Lab) -> None:
    """The lab's test line: retries 3, backoff 0.2 -> waits of 0.2 s and 0.4 s, exit 0."""
    result = lab.run("run", "--retries", "3", "--backoff", "0.2", "--", lab.fixture("flaky.sh"))
    assert result.returncode == 0
    assert b"call 3 succeeds" in result.stdout
    assert result.stderr.decode().splitlines() == [
        "flaky: call 1 fails",
        "runner: attempt 1/4 failed (rc=1); retrying in 0.2s",
        "flaky: call 2 fails",
        "runner: attempt 2/4 failed (rc=1); retrying in 0.4s",
    ]
    lines = [json.loads(line) for line in lab.log.read_text().splitlines()]
    assert [(line["attempt"], line["rc"]) for line in lines] == [(1, 1), (2, 1), (3, 0)]
    starts = [datetime.fromisoformat(line["ts"]).timestamp() for line in lines]
    assert starts[1] - starts[0] >= 0.2
    assert starts[2] - starts[1] >= 0.4


def test_3_timeouts_are_retried(lab: Lab) -> None:
    """A timeout is a failure: retried, and the last one gives 124."""
    result = lab.run(
        "run",
        "--timeout",
        "0.3",
        "--retries",
        "1",
        "--backoff",
        "0",
        "--",
        lab.fixture("hang.sh"),
    )
    assert result.returncode == 124
    assert [json.loads(x)["rc"] for x in lab.log.read_text().splitlines()] == [124, 124]


def test_4_apply_runs_once_and_then_says_already_applied(lab: Lab) -> None:
    """apply.sh is called once; the marker is made; the second call skips."""
    first = lab.run("apply", "db")
    assert first.returncode == 0
    assert (lab.state / "db.done").exists()
    assert json.loads((lab.state / "db.done").read_text())["name"] == "db"
    second = lab.run("apply", "db")
    assert second.returncode == 0
    assert second.stdout == b"already applied\n"
    assert len(lab.applications()) == 1


def test_4_failed_apply_exits_1_and_leaves_no_marker(lab: Lab) -> None:
    """APPLY_FAIL=1: exit 1, no marker, and the next apply tries again."""
    failed = lab.run("apply", "db", env={"APPLY_FAIL": "1"})
    assert failed.returncode == 1
    assert not (lab.state / "db.done").exists()
    assert lab.run("apply", "db").returncode == 0
    assert len(lab.applications()) == 2


def test_5_a_held_lock_gives_exit_3(lab: Lab) -> None:
    """Another holder of state/lock: 'another run in progress', exit 3, nothing run."""
    lab.state.mkdir()
    with lock_held_elsewhere(str(lab.state / "lock")):
        result = lab.run("apply", "db")
    assert result.returncode == 3
    assert b"another run in progress" in result.stderr
    assert lab.applications() == []
    assert not (lab.state / "db.done").exists()


@pytest.mark.parametrize(
    ("signum", "code"),
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, -2), (signal.SIGQUIT, -3)],
)
def test_6_signals_are_passed_on_and_the_runner_exits_128_plus_n(
    lab: Lab, signum: int, code: int
) -> None:
    """The command gets the signal, ends, and nothing of it remains.

    TERM and HUP end the runner with 128+N; after INT and QUIT it ends by the
    signal itself (the shell still reports 128+N), so a calling script stops too.
    """
    pidfile = str(lab.tmp / "pid")
    runner = lab.start(
        "run", "--", "sh", "-c", f'echo $$ > {pidfile}; exec "$0"', lab.fixture("hang.sh")
    )
    pgid = read_pid(pidfile)
    wait_running(pgid, "sleep")
    runner.send_signal(signum)
    assert runner.wait(timeout=20) == code
    assert group_members(pgid) == []
    assert processes_with(lab.token) == []
    assert json.loads(lab.log.read_text())["rc"] == 128 + signum


def test_7_every_attempt_is_one_json_line_with_the_labs_keys(lab: Lab) -> None:
    """ts (ISO 8601), cmd (list), attempt (from 1), rc, duration_ms; plus run_id, name."""
    lab.run("run", "--retries", "1", "--backoff", "0", "--", "false")
    lab.run("apply", "db")
    lines = [json.loads(line) for line in lab.log.read_text().splitlines()]
    assert len(lines) == 3
    for line in lines:
        assert datetime.fromisoformat(line["ts"]).utcoffset() is not None
        assert isinstance(line["cmd"], list)
        assert all(isinstance(arg, str) for arg in line["cmd"])
        assert isinstance(line["rc"], int)
        assert isinstance(line["duration_ms"], int)
        assert line["duration_ms"] >= 0
    assert [line["attempt"] for line in lines] == [1, 2, 1]
    assert lines[0]["run_id"] == lines[1]["run_id"] != lines[2]["run_id"]
    assert lines[0]["cmd"] == ["false"]
    assert "name" not in lines[0]
    assert lines[2]["name"] == "db"


def test_8_dry_run_calls_nothing_and_writes_nothing(lab: Lab) -> None:
    """--dry-run names NAME and the command, exits 0, creates no state at all."""
    result = lab.run("apply", "--dry-run", "db")
    assert result.returncode == 0
    assert b"db" in result.stdout
    assert b"apply.sh" in result.stdout
    assert lab.applications() == []
    assert sorted(os.listdir(lab.home)) == []


def test_8_dry_run_of_an_applied_name_says_already_applied(lab: Lab) -> None:
    """After a real apply, --dry-run prints 'already applied'."""
    assert lab.run("apply", "db").returncode == 0
    result = lab.run("apply", "db", "--dry-run")
    assert (result.returncode, result.stdout) == (0, b"already applied\n")
    assert len(lab.applications()) == 1


def test_default_apply_command_is_the_labs_path(lab: Lab) -> None:
    """Without RUNNER_APPLY_COMMAND, apply calls /opt/fixtures/pyops/bin/apply.sh NAME."""
    env = {k: v for k, v in lab.env.items() if k != "RUNNER_APPLY_COMMAND"}
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(os.path.dirname(__file__), "..", "..", "runner.py"),
            "apply",
            "--dry-run",
            "db",
        ],
        capture_output=True,
        env=env,
        check=False,
        timeout=30,
    )
    assert result.stdout == b"would apply db: would run /opt/fixtures/pyops/bin/apply.sh db\n"


def test_wait_helper_fails_when_nothing_happens() -> None:
    """The deadline helper the tests rely on really fails."""
    with pytest.raises(AssertionError, match="timed out"):
        wait_for(lambda: False, timeout=0.05)
