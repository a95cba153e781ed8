"""Races, signals at any instant, a killed runner, bad input: the runner stays correct."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Lab
from tests.procs import ROOT, UNTIL, processes_with, read_pid, wait_for


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["run", "--", "true"], 0),
        (["run", "--", "sh", "-c", "exit 42"], 42),
        (["apply", "ok"], 0),
        (["run", "--timeout", "0.2", "--", "sleep", "30"], 124),
        (["run", "--timeout", "x", "--", "true"], 125),
        (["run", "--", "/"], 126),
        (["run", "--", "no-such-command-here"], 127),
        (["run", "--", "sh", "-c", "kill -9 $$"], 137),
    ],
)
def test_exit_code_table(lab: Lab, args: list[str], code: int) -> None:
    """Each row of the README's exit-code table that a single run can show."""
    assert lab.run(*args).returncode == code


def test_failed_apply_and_not_found_apply(lab: Lab) -> None:
    """apply: 1 when the command fails, 127 when it does not exist."""
    assert lab.run("apply", "a", env={"APPLY_FAIL": "1"}).returncode == 1
    assert lab.run("apply", "b", env={"RUNNER_APPLY_COMMAND": "/no/such"}).returncode == 127


def test_not_found_and_not_executable_are_not_retried(lab: Lab) -> None:
    """126/127 end at once, even with retries to spare: one log line each."""
    lab.run("run", "--retries", "3", "--backoff", "0", "--", "no-such-command-here")
    lab.run("run", "--retries", "3", "--backoff", "0", "--", "/")
    assert [json.loads(x)["rc"] for x in lab.log.read_text().splitlines()] == [127, 126]


BAD_INPUT = [
    ["bogus"],
    ["run"],
    ["run", "--frobnicate", "true"],
    ["run", "--timeout", "abc", "true"],
    ["run", "--timeout", "-1", "true"],
    ["run", "--timeout", "nan", "true"],
    ["run", "--timeout", "-inf", "true"],
    ["run", "--retries", "-1", "true"],
    ["run", "--retries", "1.5", "true"],
    ["run", "--retries", "9" * 5000, "true"],
    ["apply"],
    ["apply", "../x"],
    ["apply", "a/b"],
    ["apply", "."],
    ["apply", "-rf"],
    ["apply", "x" * 300],
    ["apply", "ok", "extra"],
]


@pytest.mark.parametrize("args", BAD_INPUT, ids=lambda a: " ".join(a)[:40])
def test_bad_input_is_125_one_line_no_traceback_touches_nothing(lab: Lab, args: list[str]) -> None:
    """A usage error: exit 125, one 'runner:' line, nothing created or run."""
    result = lab.run(*args)
    assert result.returncode == 125
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("runner: ")
    assert b"Traceback" not in result.stderr
    assert os.listdir(lab.home) == []
    assert lab.applications() == []


def test_a_state_path_that_is_a_file_is_125(lab: Lab) -> None:
    """state is a regular file: a clear error, exit 125, apply.sh not called."""
    (lab.home / "state").write_text("")
    result = lab.run("apply", "db")
    assert result.returncode == 125
    assert b"not a folder" in result.stderr
    assert lab.applications() == []


def test_an_unwritable_log_warns_and_keeps_the_outcome(lab: Lab) -> None:
    """runs.jsonl is a folder: one warning; the exit code is the command's."""
    lab.log.mkdir()
    result = lab.run("run", "--", "sh", "-c", "exit 4")
    assert result.returncode == 4
    assert b"cannot write the attempt log" in result.stderr


def test_quiet_keeps_errors_only(lab: Lab) -> None:
    """--quiet hides retry lines and 'already applied', not errors."""
    result = lab.run("run", "-q", "--retries", "1", "--backoff", "0", "--", "false")
    assert (result.returncode, result.stderr) == (1, b"")
    lab.run("apply", "db")
    assert lab.run("apply", "-q", "db").stdout == b""
    assert b"timeout" in lab.run("run", "-q", "--timeout", "0.1", "--", "sleep", "5").stderr


def test_default_home_is_the_folder_of_runner_py(tmp_path: Path) -> None:
    """Without --home or RUNNER_HOME, state and log sit beside runner.py, whatever the cwd."""
    copy = tmp_path / "pyops" / "sub"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".*", "tests", "state", "*.jsonl"))
    env = {k: v for k, v in os.environ.items() if k != "RUNNER_HOME"}
    result = subprocess.run(
        [sys.executable, str(copy / "runner.py"), "apply", "x", "--", "true"],
        cwd="/",
        env=env,
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert (copy / "state" / "x.done").exists()
    assert (copy / "runs.jsonl").exists()


def test_second_signal_of_the_same_kind_kills_at_once(lab: Lab) -> None:
    """A command that traps SIGTERM gets SIGKILL on the second SIGTERM, not after 60 s."""
    ready = lab.tmp / "ready"
    runner = lab.start(
        "run",
        "--kill-after",
        "60",
        "--",
        "sh",
        "-c",
        f"trap 'echo got >> {ready}' TERM; echo $$ > {ready}; while :; do sleep 0.05; done",
    )
    read_pid(str(ready))
    runner.send_signal(signal.SIGTERM)
    wait_for(lambda: "got" in ready.read_text(), what="the trap to run")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=20) == 143
    wait_for(lambda: processes_with(lab.token) == [], what="the group to be gone")


def test_a_signal_during_backoff_ends_the_runner_with_no_further_attempt(lab: Lab) -> None:
    """SIGTERM in a 30 s wait: exit 143 at once, one attempt logged, then the run's end
    (a line that is no attempt)."""
    runner = lab.start("run", "--retries", "3", "--backoff", "30", "--", "false")
    wait_for(lambda: lab.log.exists() and lab.log.read_text().count("\n") == 1)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=10) == 143
    lines = [json.loads(line) for line in lab.log.read_text().splitlines()]
    assert [line.get("attempted", True) for line in lines] == [True, False]


def test_signals_at_random_instants_never_leave_a_process_or_a_false_marker(lab: Lab) -> None:
    """SIGTERM at 25 random instants of an apply: the invariants hold every time.

    Either the runner finished normally, or it exited 143 (or, when the signal
    came before Python had run a line of the runner, died of it: the shell shows
    that as 143 too); a marker exists only if the command ran to its end; no
    process of the command is left.
    """
    rng = random.Random(20261129)
    done = lab.tmp / "done"
    for round_ in range(25):
        name = f"step{round_}"
        script = f"sleep 0.15; echo {name} >> {done}"
        runner = lab.start("apply", name, "--", "sh", "-c", script)
        delay = rng.uniform(0, 0.5)
        try:
            runner.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            runner.send_signal(signal.SIGTERM)
        code = runner.wait(timeout=20)
        finished = done.exists() and name in done.read_text().split()
        marked = (lab.state / f"{name}.done").exists()
        assert code in (0, 143, -signal.SIGTERM), runner.stderr.read() if runner.stderr else b""
        assert marked == (code == 0)
        if marked:
            assert finished
        wait_for(lambda: processes_with(lab.token) == [], timeout=5, what="no leftovers")


def test_eight_concurrent_applies_apply_exactly_once(lab: Lab) -> None:
    """8 runners, one name: one application; while it runs, the others exit 3 (busy).

    The command runs until the test lets it end, so all eight contend however slowly
    the machine starts them."""
    release = lab.tmp / "release"
    cmd = ["sh", "-c", f"echo once >> {lab.applied_log}; {UNTIL.format(release=release)}"]
    runners = [lab.start("apply", "shared", "--", *cmd) for _ in range(8)]
    wait_for(lambda: sum(r.poll() is not None for r in runners) == 7, 60, "the others to end")
    release.touch()
    codes = [runner.wait(timeout=30) for runner in runners]
    assert lab.applications() == ["once"]
    assert sorted(codes) == [0] + [3] * 7
    assert (lab.state / "shared.done").exists()


def test_a_runner_killed_with_sigkill_keeps_the_lock_until_its_command_ends(lab: Lab) -> None:
    """SIGKILL mid-apply: no second apply while the orphaned command lives; after, it runs."""
    pidfile = lab.tmp / "pid"
    release = lab.tmp / "release"
    cmd = ["sh", "-c", f"echo $$ > {pidfile}; {UNTIL.format(release=release)}"]
    runner = lab.start("apply", "db", "--", *cmd)
    read_pid(str(pidfile))
    runner.kill()
    runner.wait(timeout=10)
    second = lab.run("apply", "db", "--", "true")
    assert second.returncode == 3
    assert b"another run in progress" in second.stderr
    release.touch()
    wait_for(lambda: processes_with(lab.token) == [], what="the orphaned command to end")
    third = lab.run("apply", "db", "--", "true")
    assert third.returncode == 0
    assert json.loads((lab.state / "db.done").read_text())["cmd"] == ["true"]


def test_twenty_concurrent_runners_write_only_whole_lines(lab: Lab) -> None:
    """20 runners with retries at once: 60 attempts, 60 whole JSON lines."""
    runners = [
        lab.start("run", "--retries", "2", "--backoff", "0", "--", "sh", "-c", "exit 1")
        for _ in range(20)
    ]
    assert [runner.wait(timeout=60) for runner in runners] == [1] * 20
    raw = lab.log.read_bytes()
    assert raw.endswith(b"\n")
    lines = [json.loads(line) for line in raw.splitlines()]
    assert len(lines) == 60
    by_run: dict[str, list[int]] = {}
    for line in lines:
        by_run.setdefault(line["run_id"], []).append(line["attempt"])
    assert sorted(sorted(v) for v in by_run.values()) == [[1, 2, 3]] * 20


@pytest.mark.parametrize("closed", ["stdout", "stderr"])
def test_closed_output_streams_are_no_reason_for_a_traceback(lab: Lab, closed: str) -> None:
    """Started with stdout or stderr closed, the runner still answers by its exit code."""
    descriptor = 1 if closed == "stdout" else 2
    script = (
        f"import os, subprocess, sys; os.close({descriptor}); "
        "sys.exit(subprocess.call(sys.argv[1:]))"
    )
    for _ in ("applies", "says already applied"):
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                script,
                sys.executable,
                os.path.join(ROOT, "runner.py"),
                "apply",
                "db",
                "--",
                "true",
            ],
            env=lab.env,
            capture_output=True,
            check=False,
            timeout=30,
        )
        assert result.returncode == 0
        assert b"Traceback" not in result.stdout + result.stderr
    assert (lab.state / "db.done").exists()
