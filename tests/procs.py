"""Helpers for tests with real processes: deadlines on events, never bare sleeps."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures", "bin")
TOKEN_VARIABLE = "RUNNER_TEST_TOKEN"
UNTIL = "while [ ! -e {release} ]; do sleep 0.02; done"
"""Shell that waits until the test creates the file `release`: a command that holds on
an event, not for a time a loaded machine may need just to start the next runner."""


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "event") -> None:
    """Poll `predicate` until it holds; fail the test when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.005)


def processes_with(token: str) -> list[int]:
    """Live processes whose environment carries `token` (zombies have none)."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    """Whether process `pid` runs: a zombie waiting for its reaper has ended."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group `pgid`."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def running(pgid: int, program: str) -> bool:
    """Whether a live member of process group `pgid` runs `program` (its name in /proc)."""
    for member in group_members(pgid):
        try:
            with open(f"/proc/{member}/comm") as handle:
                if handle.read().strip() == program:
                    return True
        except OSError:
            continue
    return False


def wait_running(pgid: int, program: str, timeout: float = 10.0) -> None:
    """Wait until `program` runs in group `pgid`: the command is past its shell's start-up.

    A shell that writes its pid is not yet the command: `sh -c` catches SIGINT
    until it execs, so a signal sent on the pid file alone can be lost.
    """
    wait_for(lambda: running(pgid, program), timeout, f"{program} in group {pgid}")


def children_of(pid: int) -> list[int]:
    """Live (not zombie) child processes of `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(entry))
    return found


def read_pid(path: str) -> int:
    """The pid a command wrote into `path` (waits for the write to land)."""

    def written() -> bool:
        try:
            with open(path) as handle:
                return handle.read().endswith("\n")
        except FileNotFoundError:
            return False

    wait_for(written, what=path)
    with open(path) as handle:
        return int(handle.read().split()[0])


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler installed for `signum` (SigCgt in /proc)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except OSError:
        pass
    return False


HOLD_LOCK = """
import fcntl, os, sys
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY) if os.path.isdir(path) else os.open(path, os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@contextmanager
def lock_held_elsewhere(path: str) -> Iterator[Callable[[float], None]]:
    """Another process holds an exclusive flock on `path` until the block ends.

    The block is given `release_in(seconds)`, to make the holder let go earlier.
    """
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    timers: list[threading.Timer] = []

    def release_in(seconds: float) -> None:
        assert holder.stdin is not None
        timers.append(threading.Timer(seconds, holder.stdin.close))
        timers[-1].start()

    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"held\n"
        yield release_in
    finally:
        for timer in timers:
            timer.join()
        holder.communicate(b"") if holder.stdin and not holder.stdin.closed else holder.wait()
