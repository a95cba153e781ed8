"""Nothing left running: the runner is a child subreaper, so a process that left the
command's group (setsid, a double fork) is still ended with it; a command that ends by
itself keeps its daemons."""

from __future__ import annotations

import os
import signal

from tests.e2e.conftest import Lab
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
