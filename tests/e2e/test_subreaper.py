"""Nothing left running: the runner is a child subreaper, so a process that left the
command's group (setsid, a double fork) is still ended with it; a command that ends by
itself keeps its daemons."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.e2e.conftest import RUNNER, Lab
from tests.procs import processes_with, read_pid, wait_for


def test_a_timeout_ends_a_process_in_a_new_session(lab: Lab) -> None:
    """Regression: `setsid sleep 300 &` outlived `--timeout 1` (coreutils timeout's hole)."""
    result = lab.run("run", "--timeout", "1", "--", "sh", "-c", "setsid sleep 300 & sleep 60")
    assert result.returncode == 124
    assert processes_with(lab.token) == []


def test_a_forwarded_signal_ends_a_double_forked_daemon(lab: Lab) -> None:
    """A daemon that double-forked into a session of its own gets the SIGTERM too."""
    pidfile = str(lab.tmp / "daemon")
    daemon = f"(setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' &); sleep 60"
    runner = lab.start("run", "--", "sh", "-c", daemon)
    pid = read_pid(pidfile)
    wait_for(lambda: _ppid(pid) == runner.pid, what="the orphan to be the runner's")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=20) == 143
    wait_for(lambda: processes_with(lab.token) == [], what="nothing left")


def test_a_daemon_of_a_command_that_succeeded_is_left_alone(lab: Lab) -> None:
    """`apply start-service` may start a service: a command that ends by itself keeps it."""
    pidfile = str(lab.tmp / "daemon")
    script = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' </dev/null >/dev/null 2>&1 &"
    result = lab.run("run", "--", "sh", "-c", script)
    assert result.returncode == 0
    daemon = read_pid(pidfile)
    try:
        assert os.path.exists(f"/proc/{daemon}")
        assert processes_with(lab.token) == [daemon]
    finally:
        os.kill(daemon, signal.SIGKILL)


def test_reaped_orphans_never_change_the_exit_code(lab: Lab) -> None:
    """Orphans that end with codes of their own are collected; the command's code stands."""
    script = "setsid sh -c 'exit 9' & (sh -c 'exit 7' &); sleep 0.2; exit 3"
    result = lab.run("run", "--", "sh", "-c", script)
    assert result.returncode == 3


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


COUNT_TERM = """
import os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
print("ready", flush=True)
heard = [signal.sigtimedwait({signal.SIGTERM}, 60)]
while heard[-1] is not None:
    heard.append(signal.sigtimedwait({signal.SIGTERM}, 0.5))
senders = {"parent" if info.si_pid == os.getppid() else "other" for info in heard[:-1]}
print(len(heard) - 1, *sorted(senders), flush=True)
"""
"""Counts the SIGTERMs it hears, one by one, and says who sent them: its parent (the runner
that started it), or another process."""


def test_a_nested_runner_s_command_hears_each_signal_once(lab: Lab) -> None:
    """Regression: an outer runner signalled its inner runner's group and, as its subreaper,
    the innermost command too, which the inner runner also signalled: every signal came
    twice, ~2 ms apart (tools such as terraform read a second interrupt as "exit now")."""
    outer = subprocess.Popen(
        [sys.executable, RUNNER, "run", "--", sys.executable, RUNNER, "run", "--",
         sys.executable, "-c", COUNT_TERM],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=lab.env,
    )  # fmt: skip
    assert outer.stdout is not None
    assert outer.stdout.readline() == b"ready\n"
    outer.send_signal(signal.SIGTERM)
    out, err = outer.communicate(timeout=60)
    assert out == b"1 parent\n", err
