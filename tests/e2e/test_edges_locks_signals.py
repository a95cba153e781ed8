"""Faults found by hostile use and by coreutils' and util-linux's own tests: locks, signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.procs import (
    UNTIL,
    catches,
    children_of,
    group_members,
    processes_with,
    read_pid,
    wait_for,
    wait_running,
)


def test_a_daemon_the_command_started_does_not_keep_the_lock(lab: Lab) -> None:
    """Regression: `apply start-daemon -- sh -c 'sleep 1000 &'` wedged every later step."""
    daemon = lab.run("apply", "start-daemon", "--", "sh", "-c", "sleep 1000 >/dev/null 2>&1 &")
    assert daemon.returncode == 0
    try:
        assert len(processes_with(lab.token)) == 1
        assert lab.run("apply", "next-step", "--", "true").returncode == 0
        assert lab.run("forget", "next-step").returncode == 0
        lock = str(lab.tmp / "job.lock")
        started = lab.run("run", "--lock", lock, "--", "sh", "-c", "sleep 1000 >/dev/null 2>&1 &")
        assert started.returncode == 0
        assert lab.run("run", "--lock", lock, "--", "true").returncode == 0
    finally:
        for pid in processes_with(lab.token):
            os.kill(pid, signal.SIGKILL)


HOLD_IN_TURNS = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    fcntl.flock(fd, fcntl.LOCK_EX)
    time.sleep(0.1)
    fcntl.flock(fd, fcntl.LOCK_UN)
    time.sleep(0.01)
"""


def test_waiters_are_served_while_two_holders_take_the_lock_back_to_back(lab: Lab) -> None:
    """Regression: polling waiters starved behind holders that free the lock for 10 ms at a time.

    Queued in the kernel, a waiter is woken the moment the lock is freed.
    """
    lock = str(lab.tmp / "job.lock")
    holders = [subprocess.Popen([sys.executable, "-c", HOLD_IN_TURNS, lock, "8"]) for _ in range(2)]
    try:
        waiters = [
            lab.start("run", "--lock", lock, "--lock-wait", "3", "--", "true") for _ in range(3)
        ]
        assert [w.wait(timeout=60) for w in waiters] == [0, 0, 0]
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()


PLANT_AND_HOLD = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
record = {"what": "apply x\\u001b]0;owned\\u0007\\u001b[2J", "host": "h\\u202eevil",
          "pid": 1, "since": time.time()}
os.pwrite(fd, json.dumps(record).encode(), 0)
print("held", flush=True)
sys.stdin.read()
"""


def test_a_holders_record_cannot_act_on_the_terminal(lab: Lab) -> None:
    """Regression: the holder's record in a lock file (anyone who can open the file can hold
    it and write one) reached the terminal raw through `locks` and the busy message:
    terminal escapes, a right-to-left override. It is shown escaped."""
    state = lab.home / "state"
    state.mkdir(exist_ok=True)
    job = str(lab.tmp / "job.lock")
    cases = [
        (str(state / "lock"), ["apply", "b", "--", "true"]),
        (job, ["run", "--lock", job, "true"]),
    ]
    for lock, busy in cases:
        holder = subprocess.Popen(
            [sys.executable, "-c", PLANT_AND_HOLD, lock],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline() == b"held\n"
            shown = [lab.run(*busy).stderr]
            if busy[0] == "apply":
                shown.append(lab.run("locks").stdout)
            for text in shown:
                assert b"apply x" in text
                assert b"\x1b" not in text
                assert b"\x07" not in text
                assert "\u202e".encode() not in text
                assert b"\\E]0;owned\\a\\E[2J" in text or b"\\x1b]0;owned" in text
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)


def test_a_waiter_queued_on_a_replaced_lock_file_starts_over(lab: Lab) -> None:
    """The lock file is replaced while held: the queued waiter never runs beside the new holder.

    Each holder holds until the test lets it go (a file named after it), so the order
    of events does not depend on how fast the machine starts a runner."""
    lock = lab.tmp / "job.lock"
    marks = lab.tmp / "marks"
    until = UNTIL.format(release=f'{lab.tmp}/"$0".go')
    record = f'echo "$0 start" >> {marks}; {until}; echo "$0 end" >> {marks}'
    (lab.tmp / "waiter.go").touch()

    def said(event: str) -> bool:
        return marks.exists() and event in marks.read_text().splitlines()

    first = lab.start("run", "--lock", str(lock), "--", "sh", "-c", record, "first")
    wait_for(lambda: said("first start"), what="the first holder to start")
    waiter = lab.start(
        "run", "--lock", str(lock), "--lock-wait", "60", "--", "sh", "-c", record, "waiter"
    )
    wait_for(lambda: children_of(waiter.pid) != [], what="the waiter to queue in the kernel")
    queued = children_of(waiter.pid)
    lock.unlink()
    third = lab.start("run", "--lock", str(lock), "--", "sh", "-c", record, "third")
    wait_for(lambda: said("third start"), what="the third to hold the new lock file")
    (lab.tmp / "first.go").touch()
    assert first.wait(timeout=30) == 0
    wait_for(
        lambda: children_of(waiter.pid) not in ([], queued) or said("waiter start"),
        what="the waiter to queue again, on the new lock file (or, wrongly, to run)",
    )
    (lab.tmp / "third.go").touch()
    assert [p.wait(timeout=30) for p in (third, waiter)] == [0, 0]
    events = marks.read_text().split()
    order = [" ".join(events[n : n + 2]) for n in range(0, len(events), 2)]
    assert order == [
        "first start",
        "third start",
        "first end",
        "third end",
        "waiter start",
        "waiter end",
    ], events


BLOCK_THEN_EXEC = """
import os, signal, sys
how = sys.argv[1]
for name in sys.argv[2].split(","):
    signum = getattr(signal, name)
    if how == "block":
        signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
    else:
        signal.signal(signum, signal.SIG_IGN)
os.execv(sys.argv[3], sys.argv[3:])
"""


def parent_with(how: str, names: str, *args: str) -> list[str]:
    """The runner started by a parent that blocked (or ignored) the signals `names`."""
    return [sys.executable, "-c", BLOCK_THEN_EXEC, how, names, sys.executable, RUNNER, *args]


@pytest.mark.parametrize(
    ("how", "names"),
    [
        ("block", "SIGCHLD"),
        ("block", "SIGCHLD,SIGTERM,SIGINT,SIGHUP,SIGALRM"),
        ("ignore", "SIGCHLD"),
    ],
)
def test_a_parents_signal_state_does_not_hold_the_runner_up(lab: Lab, how: str, names: str) -> None:
    """coreutils' timeout-blocked, adapted: a 0.5 s command ends the runner in about 0.5 s."""
    result = subprocess.run(
        parent_with(how, names, "run", "--", "sleep", "0.5"),
        env=lab.env,
        capture_output=True,
        timeout=20,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_a_blocked_sigterm_is_still_passed_on(lab: Lab) -> None:
    """Started with SIGTERM blocked, the runner still forwards it, the command gets it at once."""
    pidfile = str(lab.tmp / "pid")
    script = f"echo $$ > {pidfile}; exec sleep 60"
    runner = subprocess.Popen(
        parent_with("block", "SIGTERM", "run", "--kill-after", "60", "--", "sh", "-c", script),
        env=lab.env,
    )
    pgid = read_pid(pidfile)
    wait_running(pgid, "sleep")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=20) == 143
    assert group_members(pgid) == []


def test_nohup_keeps_sighup_ignored_for_the_command(lab: Lab) -> None:
    """A signal the parent ignored (nohup's SIGHUP) stays ignored: the command survives it."""
    pidfile, release = str(lab.tmp / "pid"), lab.tmp / "release"
    script = f"echo $$ > {pidfile}; {UNTIL.format(release=release)}"
    runner = subprocess.Popen(
        parent_with("ignore", "SIGHUP", "run", "--", "sh", "-c", script), env=lab.env
    )
    pgid = read_pid(pidfile)
    os.killpg(pgid, signal.SIGHUP)
    runner.send_signal(signal.SIGHUP)
    release.touch()
    assert runner.wait(timeout=20) == 0


TRAP = 'trap "echo got-{name} >> {out}" {name}; echo $$ > {pid}; while :; do sleep 0.05; done'


@pytest.mark.parametrize("name", ["USR1", "USR2", "ALRM", "WINCH"])
def test_signals_that_would_end_the_runner_are_passed_on_instead(lab: Lab, name: str) -> None:
    """Regression: USR1, USR2 and ALRM killed the runner and left the command without a timeout."""
    pidfile, out = str(lab.tmp / "pid"), lab.tmp / "out"
    script = TRAP.format(pid=pidfile, name=name, out=out)
    runner = lab.start("run", "--timeout", "30", "--", "sh", "-c", script)
    pgid = read_pid(pidfile)
    wait_for(lambda: catches(pgid, getattr(signal, "SIG" + name)), what="the trap to be set")
    runner.send_signal(getattr(signal, "SIG" + name))
    wait_for(lambda: out.exists() and f"got-{name}" in out.read_text(), what="the trap")
    assert runner.poll() is None
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=20) == 143
    assert group_members(pgid) == []


def test_sigquit_is_passed_on_and_the_runner_ends_by_it_without_a_core(lab: Lab) -> None:
    """Ctrl-\\: the command gets SIGQUIT; the runner ends by SIGQUIT; no core file is left."""
    pidfile = str(lab.tmp / "pid")
    runner = subprocess.Popen(
        [sys.executable, RUNNER, "run", "--", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"],
        env=lab.env,
        cwd=lab.tmp,
    )
    pgid = read_pid(pidfile)
    wait_running(pgid, "sleep")
    runner.send_signal(signal.SIGQUIT)
    assert runner.wait(timeout=20) == -signal.SIGQUIT
    assert group_members(pgid) == []
    assert not [name for name in os.listdir(lab.tmp) if name.startswith("core")]


def test_a_shell_script_stops_at_ctrl_c_through_the_runner(lab: Lab) -> None:
    """Ctrl-C reaches the shell and the runner; the runner ends by SIGINT, so bash stops too.

    bash goes on after a child that merely exits 130; it stops only when the
    child died of SIGINT, as the runner now does.
    """
    marker = lab.tmp / "after"
    pidfile = str(lab.tmp / "pid")
    script = f'"$0" {RUNNER} run -- sh -c "echo \\$\\$ > {pidfile}; exec sleep 60"; touch {marker}'
    shell = subprocess.Popen(
        ["bash", "-c", script, sys.executable], env=lab.env, start_new_session=True
    )
    wait_running(read_pid(pidfile), "sleep")
    os.killpg(shell.pid, signal.SIGINT)
    assert shell.wait(timeout=20) == -signal.SIGINT
    assert not marker.exists()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def test_stopping_the_runner_stops_its_command_and_cont_continues_both(lab: Lab) -> None:
    """SIGTSTP (Ctrl-Z): the command's group stops with the runner; SIGCONT resumes both."""
    pidfile = str(lab.tmp / "pid")
    runner = lab.start("run", "--", "sh", "-c", f"echo $$ > {pidfile}; while :; do :; done")
    pgid = read_pid(pidfile)
    runner.send_signal(signal.SIGTSTP)
    wait_for(lambda: _state(runner.pid) == "T", what="the runner to stop")
    wait_for(lambda: _state(pgid) == "T", what="the command to stop")
    runner.send_signal(signal.SIGCONT)
    wait_for(lambda: _state(runner.pid) != "T", what="the runner to continue")
    wait_for(lambda: _state(pgid) != "T", what="the command to continue")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=20) == 143
    assert group_members(pgid) == []
