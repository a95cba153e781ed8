"""What users of coreutils `timeout` and util-linux `flock` reach for, with real processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.procs import lock_held_elsewhere, read_pid, wait_for

ONLY_INT = (
    'trap "echo clean-exit; exit 0" INT; trap "" TERM; echo $$ > {pid}; '
    "while :; do sleep 0.02; done"
)

COUNT_RTMIN = """
import signal
first = signal.sigtimedwait({signal.SIGRTMIN}, 60)
count = 0 if first is None else 1
while signal.sigtimedwait({signal.SIGRTMIN}, 0.5) is not None:
    count += 1
print(count)
"""
"""Counts the SIGRTMINs it is sent. The runner leaves a real-time signal as its parent had
it, so the command starts with SIGRTMIN blocked: one sent before it waits is kept for it.
The kernel queues one for each sending, where two of a standard signal can merge."""


def _blocking(*signums: int) -> Callable[[], None]:
    """For preexec_fn: start the runner with `signums` blocked, which its command inherits."""

    def block() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, signums)

    return block


@pytest.mark.parametrize("name", ["RTMIN", "sigrtmin", str(int(signal.SIGRTMIN))])
def test_signal_chooses_what_a_timeout_sends_and_sends_it_once(lab: Lab, name: str) -> None:
    """--signal: a timeout sends that signal instead of TERM (which would end the counter
    before it prints), and sends it once; rc 124.

    Regression: the command's group was signalled, then each process the runner tracks as
    its subreaper, the leader too, so a shell's trap on the signal could run twice."""
    runner = [sys.executable, RUNNER, "run", "--timeout", "0.3", "--kill-after", "60"]
    result = subprocess.run(
        [*runner, "--signal", name, "--", sys.executable, "-c", COUNT_RTMIN],
        capture_output=True,
        env=lab.env,
        timeout=60,
        check=False,
        preexec_fn=_blocking(signal.SIGRTMIN),
    )
    assert result.returncode == 124
    assert result.stdout == b"1\n"


@pytest.mark.parametrize("name", ["KILL", "SIGKILL", "9", "kill"])
def test_signal_kill_skips_the_grace(lab: Lab, name: str) -> None:
    """--signal KILL: no wait for --kill-after, even for a command that ignores TERM."""
    pidfile = str(lab.tmp / "pid")
    runner = lab.start(
        "run",
        "--timeout",
        "0.3",
        "--kill-after",
        "60",
        "--signal",
        name,
        "--",
        "sh",
        "-c",
        ONLY_INT.format(pid=pidfile),
    )
    assert runner.wait(timeout=20) == 124


@pytest.mark.parametrize("value", ["BOGUS", "65", "-1", ""])
def test_a_bad_signal_is_a_usage_error(lab: Lab, value: str) -> None:
    result = lab.run("run", "--signal", value, "--", "true")
    assert result.returncode == 125
    assert result.stderr.startswith(b"runner: error: --signal")


@pytest.mark.parametrize(
    "args",
    [["apply", "db", "--", "true"], ["forget", "db"], ["run", "--lock", "LOCK", "--", "true"]],
)
@pytest.mark.parametrize("code", ["0", "75"])
def test_conflict_exit_code_is_the_exit_of_a_busy_lock(
    lab: Lab, args: list[str], code: str
) -> None:
    """flock -E: the code for 'another run holds the lock', for apply, forget and run --lock."""
    lab.state.mkdir()
    path = str(lab.tmp / "job.lock") if "run" in args else str(lab.state / "lock")
    args = [path if word == "LOCK" else word for word in args]
    with lock_held_elsewhere(path):
        result = lab.run(args[0], "--conflict-exit-code", code, *args[1:])
    assert result.returncode == int(code)
    assert b"another run in progress" in result.stderr


def test_each_attempt_reads_a_regular_stdin_from_the_start(lab: Lab) -> None:
    """stdin < file: every retry reads the same bytes, not what the first left."""
    data = lab.tmp / "input"
    data.write_bytes(b"line one\nline two\n")
    out = lab.tmp / "out"
    runner = [sys.executable, RUNNER, "run", "--retries", "2", "--backoff", "0"]
    with data.open("rb") as stdin:
        os.lseek(stdin.fileno(), 5, os.SEEK_SET)
        result = subprocess.run(
            [*runner, "--", "sh", "-c", f"cat >> {out}; exit 1"],
            stdin=stdin,
            env=lab.env,
            check=False,
        )
    assert result.returncode == 1
    assert out.read_bytes() == b"one\nline two\n" * 3


@pytest.mark.parametrize(("replay", "copies"), [(True, 3), (False, 1)])
def test_replay_stdin_gives_every_attempt_the_piped_bytes(
    lab: Lab, replay: bool, copies: int
) -> None:
    """--replay-stdin keeps a pipe's bytes for every attempt; without it a pipe is read once."""
    out = lab.tmp / "out"
    options = ["--replay-stdin"] if replay else []
    result = lab.run(
        "run",
        *options,
        "--retries",
        "2",
        "--backoff",
        "0",
        "--",
        "sh",
        "-c",
        f"cat >> {out}; exit 1",
        stdin=b"payload\x00\xff\n" * 1000,
    )
    assert result.returncode == 1
    assert out.read_bytes() == b"payload\x00\xff\n" * 1000 * copies


def test_replay_stdin_keeps_nothing_behind(lab: Lab) -> None:
    """The kept copy is unlinked from the start: nothing named runner-stdin is left in TMPDIR."""
    tmp = lab.tmp / "tmpdir"
    tmp.mkdir()
    result = lab.run(
        "run",
        "--replay-stdin",
        "--",
        "sh",
        "-c",
        "ls -la /proc/self/fd/0 >&2; cat >/dev/null",
        stdin=b"x" * 100,
        env={"TMPDIR": str(tmp)},
    )
    assert result.returncode == 0
    assert list(tmp.iterdir()) == []
    assert b"(deleted)" in result.stderr


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, -2)])
def test_a_signal_while_stdin_is_kept_ends_the_run_before_any_attempt(
    lab: Lab, signum: int, code: int
) -> None:
    """Regression guard: a signal during --replay-stdin's copy ends the runner; nothing runs."""
    ran = lab.tmp / "ran"
    runner = subprocess.Popen(
        [sys.executable, RUNNER, "run", "--replay-stdin", "--", "touch", str(ran)],
        stdin=subprocess.PIPE,
        env=lab.env,
    )
    assert runner.stdin is not None
    runner.stdin.write(b"first chunk\n")
    runner.stdin.flush()
    wait_for(lambda: _reads_stdin_into_a_copy(runner.pid), what="the copy of stdin to begin")
    runner.send_signal(signum)
    assert runner.wait(timeout=20) == code
    runner.stdin.close()
    assert not ran.exists()
    assert not lab.log.exists()


def _reads_stdin_into_a_copy(pid: int) -> bool:
    """Whether `pid` holds an unlinked copy of stdin open (pytest's own capture files are 1, 2)."""
    try:
        fds = [fd for fd in os.listdir(f"/proc/{pid}/fd") if int(fd) > 2]
        return any(os.readlink(f"/proc/{pid}/fd/{fd}").endswith("(deleted)") for fd in fds)
    except OSError:
        return False


SCRIPT = shutil.which("script")


def in_a_terminal(
    lab: Lab, command: str, *, keys: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """Run a shell command line under a real pseudo-terminal (util-linux `script`)."""
    assert SCRIPT is not None
    return subprocess.run(
        [SCRIPT, "-qec", command, "/dev/null"],
        input=keys,
        capture_output=True,
        env=lab.env,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(SCRIPT is None, reason="util-linux script is not installed")
def test_foreground_keeps_the_terminal_for_the_command(lab: Lab) -> None:
    """--foreground: the command can open /dev/tty (sudo, ssh and git prompt there)."""
    probe = "sh -c 'echo from-tty > /dev/tty'"
    base = f"{sys.executable} {RUNNER} run"
    kept = in_a_terminal(lab, f"{base} --foreground -- {probe}")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert b"from-tty" in kept.stdout
    detached = in_a_terminal(lab, f"{base} -- {probe}")
    assert detached.returncode != 0


@pytest.mark.skipif(SCRIPT is None, reason="util-linux script is not installed")
def test_foreground_ctrl_c_reaches_the_command_from_the_terminal(lab: Lab) -> None:
    """Ctrl-C typed at the terminal reaches the command directly, in the terminal's group."""
    ready = lab.tmp / "ready"
    command = (
        f"sh -c 'trap \"echo got-int; exit 7\" INT; touch {ready}; while :; do sleep 0.02; done'"
    )
    assert SCRIPT is not None
    terminal = subprocess.Popen(
        [SCRIPT, "-qec", f"{sys.executable} {RUNNER} run --foreground -- {command}", "/dev/null"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=lab.env,
    )
    wait_for(ready.exists, what="the command to start")
    assert terminal.stdin is not None
    terminal.stdin.write(b"\x03")
    terminal.stdin.flush()
    out, _ = terminal.communicate(timeout=30)
    assert b"got-int" in out


def test_foreground_signals_the_command_alone_on_timeout(lab: Lab) -> None:
    """As with timeout --foreground: the command's children are not timed out."""
    pidfile = str(lab.tmp / "pid")
    result = lab.run(
        "run",
        "--foreground",
        "--timeout",
        "0.3",
        "--",
        "sh",
        "-c",
        f"sleep 30 >/dev/null 2>&1 & echo $! > {pidfile}; wait",
    )
    assert result.returncode == 124
    child = read_pid(pidfile)
    try:
        os.kill(child, 0)
    finally:
        os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("by", ["path", "name"])
def test_a_script_without_a_shebang_runs_with_sh_as_timeout_runs_it(lab: Lab, by: str) -> None:
    """Regression: an executable script with no `#!` line failed with 126 (`Exec format
    error`), where `timeout`, `flock` and `env` run it with /bin/sh, as POSIX's execvp
    does; found on PATH too. It gets its own path as $0, and its arguments."""
    folder = lab.tmp / "bin"
    folder.mkdir()
    script = folder / "legacy-job"
    script.write_text('echo "$0 $1"\nexit 4\n')
    script.chmod(0o755)
    word = str(script) if by == "path" else "legacy-job"
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    result = lab.run("run", "--", word, "first", env=env)
    assert (result.returncode, result.stdout) == (4, f"{script} first\n".encode())
    assert b"Exec format error" not in result.stderr
    if shutil.which("timeout"):
        theirs = subprocess.run(
            ["timeout", "10", word, "first"],
            capture_output=True,
            env={**lab.env, **env},
            check=False,
        )
        assert (theirs.returncode, theirs.stdout) == (result.returncode, result.stdout)


def test_a_file_that_is_no_program_nor_script_is_still_126(lab: Lab) -> None:
    """A binary that the kernel cannot run is not handed to a shell when it is no text."""
    blob = lab.tmp / "blob"
    blob.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(64))
    blob.chmod(0o755)
    result = lab.run("run", "--", str(blob))
    assert result.returncode == 126
    assert b"cannot run" in result.stderr


def test_a_folder_is_a_lock_as_flock_takes_one(lab: Lab) -> None:
    """Regression: `--lock /srv/app` was refused (`lock file … is a folder`), where flock(1)
    locks a folder as well as a file; the folder is locked, and held against flock too.
    (flock is asked once the command runs: a probe taken while the runner starts could
    make it find the folder busy.)"""
    folder = lab.tmp / "app"
    folder.mkdir()
    assert lab.run("run", "--lock", str(folder), "--", "true").returncode == 0
    with lock_held_elsewhere(str(folder)):
        busy = lab.run("run", "--lock", str(folder), "--", "true")
    assert busy.returncode == 3
    assert b"another run in progress" in busy.stderr
    if shutil.which("flock"):
        started = lab.tmp / "started"
        script = f"touch {started}; sleep 30"
        holding = lab.start("run", "--lock", str(folder), "--", "sh", "-c", script)
        try:
            wait_for(started.exists, what="the command, under the lock")
            theirs = subprocess.run(["flock", "-n", str(folder), "true"], check=False)
            assert theirs.returncode == 1
        finally:
            holding.terminate()
            holding.wait(timeout=30)
    assert sorted(path.name for path in folder.iterdir()) == []


def test_a_script_that_locks_itself_keeps_its_bytes(lab: Lab) -> None:
    """Regression: `run --lock "$0"` (flock(1)'s idiom: a script locked by its own file)
    wrote the holder's record over the script. The script is locked, and left as it is:
    a second copy finds it busy, and it still runs afterwards."""
    started = lab.tmp / "started"
    script = lab.tmp / "deploy.sh"
    body = f'#!/bin/sh\ntouch {started}\n[ "$1" = hold ] && exec sleep 30\necho deployed\n'
    script.write_text(body)
    script.chmod(0o755)
    holding = lab.start("run", "--lock", str(script), "--", str(script), "hold")
    try:
        wait_for(started.exists, what="the script, under its own lock")
        busy = lab.run("run", "--lock", str(script), "--", str(script))
        assert busy.returncode == 3
        assert b"another run in progress" in busy.stderr
        if shutil.which("flock"):
            theirs = subprocess.run(["flock", "-n", str(script), "true"], check=False)
            assert theirs.returncode == 1
    finally:
        holding.terminate()
        holding.wait(timeout=30)
    assert script.read_text() == body
    again = lab.run("run", "--lock", str(script), "--", str(script))
    assert (again.returncode, again.stdout) == (0, b"deployed\n")
    assert script.read_text() == body


def test_a_deadline_counts_the_wait_for_the_lock(lab: Lab) -> None:
    """Regression: --deadline counted from the first attempt, so `--lock-wait 10m
    --deadline 10m` could last 20 minutes, past the Kubernetes deadline it was meant to
    fit. The wait for a busy lock ends at the deadline (exit 3), long before --lock-wait."""
    path = str(lab.tmp / "job.lock")
    with lock_held_elsewhere(path):
        busy = lab.run(
            "run",
            "--lock",
            path,
            "--lock-wait",
            "10m",
            "--deadline",
            "1s",
            "--",
            "true",
            timeout=30,
        )
    assert busy.returncode == 3
    assert b"another run in progress" in busy.stderr
