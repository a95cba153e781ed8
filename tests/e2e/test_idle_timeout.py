"""--idle-timeout: an attempt that writes nothing for too long is ended as a timeout, while its
output still streams as it is written; without the option the output is untouched."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests.e2e.conftest import RUNNER, Lab

SPEAKS_THEN_STOPS = "echo first; sleep 0.6; echo second >&2; sleep 0.6; echo third; exec sleep 60"


def test_an_attempt_silent_too_long_is_a_timeout_and_its_output_streamed_as_written(
    lab: Lab,
) -> None:
    began = time.monotonic()
    runner = subprocess.Popen(
        [sys.executable, RUNNER, "run", "--idle-timeout", "1", "--kill-after", "1", "--",
         "sh", "-c", SPEAKS_THEN_STOPS],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=lab.env,
    )  # fmt: skip
    assert runner.stdout is not None
    assert runner.stdout.readline() == b"first\n"  # before the attempt ends: streamed
    assert time.monotonic() - began < 5
    out, err = runner.communicate(timeout=30)
    took = time.monotonic() - began
    assert runner.returncode == 124
    assert out == b"third\n"
    assert err.startswith(b"second\n")
    assert b"timeout: command wrote nothing for 1s (--idle-timeout)" in err
    assert 1.2 + 1 <= took < 1.2 + 1 + 5
    (line,) = [json.loads(text) for text in lab.log.read_text().splitlines()]
    assert (line["rc"], line["timed_out"]) == (124, "idle")
    found = json.loads(lab.run("stats", "--json").stdout)["groups"][0]
    assert (found["timed_out"], found["failed"]) == (1, 1)


def test_an_idle_attempt_is_retried_like_any_timeout_and_a_busy_one_runs_on(lab: Lab) -> None:
    quiet = lab.run("run", "--idle-timeout", "0.5", "--retries", "1", "--backoff", "0", "--",
                    "sleep", "30")  # fmt: skip
    assert quiet.returncode == 124
    assert [json.loads(text)["timed_out"] for text in lab.log.read_text().splitlines()] == [
        "idle", "idle",
    ]  # fmt: skip
    steady = lab.run("run", "--idle-timeout", "1", "--", "sh", "-c",
                     "for n in 1 2 3 4; do echo $n; sleep 0.4; done")  # fmt: skip
    assert (steady.returncode, steady.stdout) == (0, b"1\n2\n3\n4\n")


def test_without_the_option_the_command_writes_to_the_runner_s_own_stdout(lab: Lab) -> None:
    """No relay: the command's stdout is the very file the runner was given."""
    target = lab.tmp / "out.txt"
    with target.open("wb") as out:
        subprocess.run(
            [sys.executable, RUNNER, "run", "--", "sh", "-c", "readlink /proc/$$/fd/1"],
            stdout=out, env=lab.env, check=True, timeout=60,
        )  # fmt: skip
    assert target.read_text().strip() == str(target)
    relayed = lab.run("run", "--idle-timeout", "1h", "--", "sh", "-c", "readlink /proc/$$/fd/1")
    assert relayed.stdout.startswith(b"pipe:")


def test_a_background_process_holding_the_output_does_not_hold_the_run(lab: Lab) -> None:
    began = time.monotonic()
    result = lab.run("run", "--idle-timeout", "1h", "--", "sh", "-c", "sleep 30 & echo started")
    assert (result.returncode, result.stdout) == (0, b"started\n")
    assert time.monotonic() - began < 10


def test_stdout_and_stderr_bound_for_one_destination_keep_their_order(lab: Lab) -> None:
    """Under cron stdout and stderr are one pipe: relayed, they stay one stream, in the
    order written. Regression: each went through a pipe of its own, and lines written
    close together came out of order."""
    lines = "".join(f"echo out{n}; echo err{n} >&2; " for n in range(200))
    result = subprocess.run(
        [sys.executable, RUNNER, "run", "--idle-timeout", "1h", "--", "sh", "-c", lines],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=lab.env, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0
    assert result.stdout.decode() == "".join(f"out{n}\nerr{n}\n" for n in range(200))
