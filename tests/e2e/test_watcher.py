"""A command never outlives its runner's limits, whatever happens to the runner: killed with
SIGKILL, or stopped with SIGSTOP. Real processes, real signals, real locks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.e2e.test_fleet import BEAT, MARK, Host, holders
from tests.procs import alive, children_of, processes_with, read_pid, wait_for

STUBBORN = (
    "trap '' TERM; "
    "setsid sh -c 'trap \"\" TERM; echo $$ > {child}; while :; do sleep 0.05; done' & "
    "echo $$ > {pid}; while :; do sleep 0.05; done"
)
"""A command that ignores SIGTERM and starts a child in a session of its own that ignores
it too: only SIGKILL ends them, and only if the child is found outside the group."""

ADOPTED = (
    "trap '' TERM; (setsid sh -c 'trap \"\" TERM; echo $$ > {child}; "
    "while :; do sleep 0.05; done' &); "
    "echo $$ > {pid}; sleep 1.5; touch {looked}; while :; do sleep 0.05; done"
)
"""As STUBBORN, but the child is orphaned at once (a daemon's double fork), so the runner,
a child subreaper, adopts it; the command notes when a second and a half has passed,
time enough for a look at what the runner holds."""


def _files(lab: Lab) -> dict[str, Path]:
    return {name: lab.tmp / name for name in ("pid", "child", "looked")}


def _start(lab: Lab, script: str, *options: str) -> subprocess.Popen[bytes]:
    text = script.format(**_files(lab))
    return lab.start("run", *options, "--", "sh", "-c", text)


def _gone_within(lab: Lab, seconds: float) -> float:
    """Wait (at most `seconds`) until no process of the lab's runs: the command, its child,
    the runner and its watcher; how long that took."""
    began = time.monotonic()
    wait_for(lambda: not processes_with(lab.token), timeout=seconds, what="every process gone")
    return time.monotonic() - began


@pytest.mark.parametrize("script", [STUBBORN, ADOPTED], ids=["setsid-child", "adopted-orphan"])
def test_a_runner_killed_with_sigkill_leaves_nothing_running_and_frees_its_lock(
    lab: Lab, script: str
) -> None:
    """Regression: a SIGKILLed runner left its command running past --timeout, and every later
    run of the same --lock exited 3 for ever."""
    runner = _start(lab, script, "--lock", "job", "--timeout", "1h", "--kill-after", "1")
    files = _files(lab)
    command, child = read_pid(str(files["pid"])), read_pid(str(files["child"]))
    if script is ADOPTED:
        wait_for(files["looked"].exists, what="the command's second and a half")
    runner.kill()
    runner.wait(timeout=30)
    took = _gone_within(lab, 1 + 5)
    print(f"\nSIGKILL of the runner to its command's end: {took * 1000:.0f} ms")
    assert not alive(command)
    assert not alive(child)
    assert lab.run("run", "--lock", "job", "--", "true").returncode == 0


def test_a_stopped_runner_s_command_is_ended_at_its_timeout(lab: Lab) -> None:
    """Regression: a runner stopped with SIGSTOP let its command run on until it was continued;
    the --timeout holds without it, and the runner, continued, says the attempt timed out."""
    began = time.monotonic()
    runner = _start(lab, STUBBORN, "--timeout", "2", "--kill-after", "1")
    files = _files(lab)
    command, child = read_pid(str(files["pid"])), read_pid(str(files["child"]))
    os.kill(runner.pid, signal.SIGSTOP)
    try:
        limit = 2 + 1 + 0.5  # the timeout, the grace, and the watcher's margin
        wait_for(lambda: not alive(command) and not alive(child), timeout=limit + 5)
        took = time.monotonic() - began
        print(f"\nstopped runner: command ended {took:.2f} s after the start (limit {limit} s)")
        assert took < limit + 2
    finally:
        os.kill(runner.pid, signal.SIGCONT)
    _, err = runner.communicate(timeout=30)
    assert runner.returncode == 124, err
    line = json.loads(lab.log.read_text().splitlines()[-1])
    assert line["timed_out"] is True


def test_a_run_without_limits_starts_no_watcher(lab: Lab) -> None:
    """`run -- CMD` with no timeout, deadline or state lock starts nothing beside its command
    (a watcher is started before the command, so it would be there once the command is)."""
    release, pid = lab.tmp / "release", lab.tmp / "pid"
    script = f"echo $$ > {pid}; while [ ! -e {release} ]; do sleep 0.02; done"
    runner = lab.start("run", "--", "sh", "-c", script)
    try:
        command = read_pid(str(pid))
        assert children_of(runner.pid) == [command]
    finally:
        release.touch()
        runner.communicate(timeout=30)
    assert runner.returncode == 0
    release.unlink()
    pid.unlink()
    limited = lab.start("run", "--timeout", "1h", "--", "sh", "-c", script)
    try:
        command = read_pid(str(pid))
        assert len(children_of(limited.pid)) == 2  # the command and its watcher
    finally:
        release.touch()
        limited.communicate(timeout=30)


def test_a_runner_that_ends_normally_leaves_its_watcher_behind_no_longer(lab: Lab) -> None:
    """The watcher ends with the runner: cron's pipe closes, nothing lingers."""
    done = subprocess.run(
        [sys.executable, RUNNER, "run", "--timeout", "10", "--", "echo", "hi"],
        capture_output=True,
        env=lab.env,
        timeout=30,
        check=False,
    )  # capture_output: run returns only once every holder of the pipes closed them
    assert done.returncode == 0
    assert done.stdout == b"hi\n"
    wait_for(lambda: not processes_with(lab.token), what="the watcher's end")


def test_a_lease_holder_killed_with_sigkill_frees_the_lock_once_its_command_is_gone(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Regression: a SIGKILLed holder's command ran on, and its lease expired 45 s later with
    the next host starting beside it. Now the command ends, then the lease row goes."""
    first, second = (Host(lab, f"web-{n}", pg_url, namespace) for n in (1, 2))
    holder = first.start(BEAT, "--kill-after", "1")
    wait_for(first.started.exists, what="the holder's command")
    holder.kill()
    holder.wait(timeout=30)
    killed = time.time()
    wait_for(lambda: not holders(pg_url, namespace), timeout=1 + 5, what="the lease row's end")
    freed = time.time() - killed
    last_beat = first.time_of(first.ended)
    nxt = second.start(MARK)
    assert nxt.wait(timeout=30) == 0, nxt.stderr.read() if nxt.stderr else b""
    print(f"\nSIGKILL of a lease holder to its lock's release: {freed * 1000:.0f} ms")
    assert last_beat <= second.time_of(second.started)
    assert freed < 1 + 3


def test_a_stopped_lease_holder_s_command_ends_before_its_lease_can_expire(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Regression: a holder stopped with SIGSTOP let its command run beside the next holder.
    Its command ends once the lease goes unconfirmed (--lease), and the next host starts
    after it: 0 ms of overlap."""
    first, second = (Host(lab, f"web-{n}", pg_url, namespace) for n in (1, 2))
    holder = first.start(BEAT, "--lease", "2s", "--kill-after", "1")
    wait_for(first.started.exists, what="the holder's command")
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        waiter = second.start(MARK, "--lock-wait", "60", "--lease", "2s")
        assert waiter.wait(timeout=60) == 0, waiter.stderr.read() if waiter.stderr else b""
        overlap = first.time_of(first.ended) - second.time_of(second.started)
        print(f"\nstopped lease holder: overlap {max(0.0, overlap) * 1000:.1f} ms")
        assert overlap <= 0
    finally:
        os.kill(holder.pid, signal.SIGCONT)
    _, err = holder.communicate(timeout=60)
    assert holder.returncode != 0
    assert b"lease" in err


def test_a_lease_holder_killed_during_its_backoff_frees_the_lock_at_once(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Killed between two attempts (no command runs), the holder's lease row goes as soon as
    the runner does, not lease + kill-after + 5 s later."""
    host = Host(lab, "web-1", pg_url, namespace)
    failing = host.start("false", "--retries", "3", "--backoff", "60", "--kill-after", "1")
    log = host.home / "runs.jsonl"
    wait_for(lambda: log.exists() and log.read_text().count("\n") == 1, what="attempt 1")
    assert holders(pg_url, namespace)
    failing.kill()
    failing.wait(timeout=30)
    killed = time.monotonic()
    wait_for(lambda: not holders(pg_url, namespace), timeout=5, what="the lease row's end")
    print(f"\nSIGKILL during a backoff to the lock's release: {time.monotonic() - killed:.2f} s")


def test_a_lease_holder_stopped_during_its_backoff_runs_no_more_and_nobody_beside_it(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Stopped between two attempts (nothing runs), its lease expires on the server; another
    host runs then, and the holder, continued, sees the lease lost and starts no attempt."""
    first, second = (Host(lab, f"web-{n}", pg_url, namespace) for n in (1, 2))
    failing = first.start("false", "--retries", "3", "--backoff", "3", "--lease", "1s",
                          "--kill-after", "1")  # fmt: skip
    log = first.home / "runs.jsonl"
    wait_for(lambda: log.exists() and log.read_text().count("\n") == 1, what="attempt 1")
    os.kill(failing.pid, signal.SIGSTOP)
    try:
        waiter = second.start(MARK, "--lock-wait", "60")
        assert waiter.wait(timeout=60) == 0, waiter.stderr.read() if waiter.stderr else b""
    finally:
        os.kill(failing.pid, signal.SIGCONT)
    _, err = failing.communicate(timeout=60)
    assert failing.returncode == 125, err
    assert b"lost the lock" in err
    assert log.read_text().count("\n") == 1  # no attempt after the lease was lost
