"""--idle-timeout: an attempt that writes nothing for too long is ended as a timeout, while its
output still streams as it is written; without the option the output is untouched."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from typing import IO

import pytest

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


def test_the_command_writes_to_the_runner_s_own_stdout_with_or_without_the_option(
    lab: Lab,
) -> None:
    """A file, a pipe: the command's stdout is the very one the runner was given, and with
    --idle-timeout its writes there are seen where they land (nothing moves through the
    runner). Regression: with the option every byte went through a pipe of the runner's,
    and streaming cost half as much again."""
    target, which = lab.tmp / "out.txt", "readlink /proc/$$/fd/1"
    for option in ([], ["--idle-timeout", "1h"]):
        with target.open("wb") as out:
            subprocess.run(
                [sys.executable, RUNNER, "run", *option, "--", "sh", "-c", which],
                stdout=out, env=lab.env, check=True, timeout=60,
            )  # fmt: skip
        assert target.read_text().strip() == str(target)
    read, write = os.pipe()
    with os.fdopen(read, "rb") as reader:
        subprocess.run(
            [sys.executable, RUNNER, "run", "--idle-timeout", "1h", "--",
             "sh", "-c", "readlink /proc/$$/fd/1; exec 1>&-"],
            stdout=write, env=lab.env, check=True, timeout=60,
        )  # fmt: skip
        os.close(write)
        assert reader.read().strip() == f"pipe:[{os.fstat(reader.fileno()).st_ino}]".encode()


def test_output_to_a_socket_is_relayed_and_watched_there(lab: Lab) -> None:
    """A socket (journald's) shows no writes: the output goes through the runner, streamed
    as written, and a silent attempt is still ended; a background process that keeps the
    relayed stream open does not hold the run."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        began = time.monotonic()
        result = subprocess.run(
            [sys.executable, RUNNER, "run", "--idle-timeout", "1h", "--",
             "sh", "-c", "readlink /proc/$$/fd/1; sleep 30 & echo started"],
            stdout=theirs.fileno(), env=lab.env, timeout=60, check=False,
        )  # fmt: skip
        assert time.monotonic() - began < 10
        theirs.close()
        said = b"".join(iter(lambda: ours.recv(4096), b""))
        assert result.returncode == 0
        assert said.startswith(b"pipe:")
        assert said.endswith(b"\nstarted\n")
    ours, theirs = socket.socketpair()
    with ours, theirs:
        quiet = subprocess.run(
            [sys.executable, RUNNER, "run", "--idle-timeout", "0.5", "--", "sleep", "30"],
            stdout=theirs.fileno(), stderr=subprocess.PIPE, env=lab.env, timeout=60, check=False,
        )  # fmt: skip
        assert quiet.returncode == 124
        assert b"wrote nothing for 0.5s" in quiet.stderr


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


STEADY = "for n in 1 2 3 4 5 6 7; do echo tick $n; sleep 0.2; done"
ELSEWHERE = "for n in $(seq 100); do echo tick >> {other}; sleep 0.1; done"
"""Writes often, but to a file of its own: not output."""


def _run_to(destination: str, lab: Lab, script: str) -> int:
    """The runner's exit code for `script` under --idle-timeout 0.8, its stdout and stderr
    going to `destination`: a file, a pipe, a socket, /dev/null, or a terminal."""
    command = [sys.executable, RUNNER, "run", "--idle-timeout", "0.8", "--kill-after", "1",
               "--", "sh", "-c", script]  # fmt: skip
    if destination == "terminal":
        typed = " ".join(shlex.quote(word) for word in command)
        return subprocess.run(
            ["script", "-qec", typed, "/dev/null"], env=lab.env, timeout=60,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=False,
        ).returncode  # fmt: skip
    ours, theirs = socket.socketpair()
    read, write = os.pipe()
    os.set_blocking(read, False)
    outputs: dict[str, IO[bytes] | socket.socket] = {
        "file": (lab.tmp / "out.txt").open("ab"),
        "pipe": os.fdopen(write, "wb"),
        "socket": theirs,
        "/dev/null": open(os.devnull, "wb"),  # noqa: SIM115 - closed below
    }
    try:
        return subprocess.run(
            command, stdout=outputs[destination].fileno(), stderr=subprocess.STDOUT, env=lab.env,
            timeout=60, check=False,
        ).returncode  # fmt: skip
    finally:
        for each in (*outputs.values(), ours):
            each.close()
        os.close(read)


@pytest.mark.parametrize("destination", ["file", "pipe", "socket", "/dev/null", "terminal"])
def test_writes_to_stdout_count_wherever_it_goes_and_writes_elsewhere_do_not(
    lab: Lab, destination: str
) -> None:
    """A job that writes every 0.2 s runs to its end under --idle-timeout 0.8, whatever its
    stdout is; one that writes only to a file of its own is idle, and ended."""
    if destination == "terminal" and shutil.which("script") is None:
        pytest.skip("no script(1) for a terminal")
    assert _run_to(destination, lab, STEADY) == 0
    other = lab.tmp / "other.log"
    assert _run_to(destination, lab, ELSEWHERE.format(other=other)) == 124
    assert other.stat().st_size > 0
    assert json.loads(lab.log.read_text().splitlines()[-1])["timed_out"] == "idle"


def test_output_kept_for_a_failure_is_watched_in_its_files(lab: Lab) -> None:
    """With --output-on-failure the command writes to files of the runner's: a steady job
    succeeds and shows nothing, a silent one is ended and its output shown."""
    steady = lab.run("run", "--output-on-failure", "--idle-timeout", "0.8", "--",
                     "sh", "-c", STEADY)  # fmt: skip
    assert (steady.returncode, steady.stdout, steady.stderr) == (0, b"", b"")
    other = lab.tmp / "other.log"
    quiet = lab.run("run", "--output-on-failure", "--idle-timeout", "0.8", "--kill-after", "1",
                    "--", "sh", "-c", "echo begun; " + ELSEWHERE.format(other=other))  # fmt: skip
    assert quiet.returncode == 124
    assert quiet.stdout == b"begun\n"
    assert b"wrote nothing for 0.8s" in quiet.stderr
