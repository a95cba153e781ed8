"""PosixProcessRunner with real processes, process groups and signals."""

from __future__ import annotations

import os
import signal
import sys
import threading
import uuid

import pytest
from pytest_mock import MockerFixture

from adapters.process import PosixProcessRunner
from adapters.signals import SignalWatch
from domain.errors import Interrupted
from tests.procs import TOKEN_VARIABLE, group_members, processes_with, read_pid


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


@pytest.mark.parametrize(("script", "rc"), [("exit 0", 0), ("exit 7", 7), ("kill -9 $$", 137)])
def test_exit_code_is_the_shells_number(watch: SignalWatch, script: str, rc: int) -> None:
    """The exit code passes through; death by signal N is 128+N."""
    outcome = PosixProcessRunner(watch).run(sh(script), 0, 10)
    assert (outcome.rc, outcome.timed_out, outcome.signal) == (rc, False, None)


def test_not_found_is_127(watch: SignalWatch) -> None:
    """A command that does not exist: 127 and the reason."""
    outcome = PosixProcessRunner(watch).run(["no-such-command-here"], 0, 10)
    assert outcome.rc == 127
    assert outcome.error is not None
    assert "No such file" in outcome.error


def test_folder_and_non_executable_file_are_126(watch: SignalWatch, tmp_path: object) -> None:
    """Found but not executable: 126."""
    plain = os.path.join(str(tmp_path), "plain")
    with open(plain, "w") as handle:
        handle.write("echo hi\n")
    os.chmod(plain, 0o644)
    runner = PosixProcessRunner(watch)
    assert runner.run([str(tmp_path)], 0, 10).rc == 126
    assert runner.run([plain], 0, 10).rc == 126


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> str:
    """A mark in the environment of every process a test starts, to find what is left."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv(TOKEN_VARIABLE, mark)
    return mark


def test_timeout_kills_the_whole_group(watch: SignalWatch, token: str) -> None:
    """hang.sh's shape: the shell and its background child both end; rc 124."""
    outcome = PosixProcessRunner(watch).run(sh("sleep 30 & sleep 30"), 0.3, 10)
    assert (outcome.rc, outcome.timed_out) == (124, True)
    assert processes_with(token) == []


def test_sigkill_after_the_grace_for_a_command_that_ignores_sigterm(token: str) -> None:
    """A group that ignores SIGTERM is killed when --kill-after runs out.

    The command ignores SIGTERM from its start (an ignored signal stays ignored through
    exec, and the runner leaves it so), not from a trap that a timeout could outrun."""
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    watch = SignalWatch()
    try:
        outcome = PosixProcessRunner(watch).run(sh("sleep 30; sleep 30"), 0.2, 0.3)
    finally:
        watch.close()
        signal.signal(signal.SIGTERM, previous)
    assert (outcome.rc, outcome.timed_out, outcome.died_of) == (124, True, signal.SIGKILL)
    assert processes_with(token) == []


def test_leftover_member_is_killed_after_the_leader_ends(watch: SignalWatch, token: str) -> None:
    """The leader dies on SIGTERM, a member ignoring it is SIGKILLed after the grace."""
    script = "(trap '' TERM; sleep 30; sleep 30) & wait"
    outcome = PosixProcessRunner(watch).run(sh(script), 0.2, 0.3)
    assert outcome.rc == 124
    assert processes_with(token) == []


def test_a_signal_to_the_runner_is_passed_to_the_group(
    watch: SignalWatch, tmp_path: object
) -> None:
    """SIGTERM to the runner reaches the command; the outcome says so."""
    pidfile = os.path.join(str(tmp_path), "pid")

    def send_when_started() -> None:
        read_pid(pidfile)
        os.kill(os.getpid(), signal.SIGTERM)

    sender = threading.Thread(target=send_when_started)
    sender.start()
    outcome = PosixProcessRunner(watch).run(sh(f"echo $$ > {pidfile}; sleep 30 & wait"), 0, 10)
    sender.join()
    assert (outcome.rc, outcome.signal) == (143, signal.SIGTERM)
    assert group_members(read_pid(pidfile)) == []


def test_a_signal_before_the_start_runs_nothing(watch: SignalWatch, tmp_path: object) -> None:
    """A signal that came first: Interrupted, and the command never starts."""
    marker = os.path.join(str(tmp_path), "ran")
    os.kill(os.getpid(), signal.SIGHUP)
    with pytest.raises(Interrupted) as info:
        PosixProcessRunner(watch).run(["touch", marker], 0, 10)
    assert info.value.exit_code == 129
    assert not os.path.exists(marker)


def test_inherited_descriptor_reaches_the_command(watch: SignalWatch) -> None:
    """A descriptor named by `inherit` is open in the command, and only there."""
    read_end, write_end = os.pipe()
    try:
        runner = PosixProcessRunner(watch, inherit=lambda: (write_end,))
        child = [sys.executable, "-c", f"import os; os.write({write_end}, b'held\\n')"]
        assert runner.run(child, 0, 10).rc == 0
        assert os.read(read_end, 100) == b"held\n"
        assert not os.get_inheritable(write_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_sigpipe_is_default_in_the_command(watch: SignalWatch) -> None:
    """Python ignores SIGPIPE; the command must not inherit that (yes | head ends)."""
    outcome = PosixProcessRunner(watch).run(sh("yes | head -n 1 >/dev/null"), 5, 1)
    assert (outcome.rc, outcome.timed_out) == (0, False)


def test_a_vanished_group_is_not_an_error(watch: SignalWatch, mocker: MockerFixture) -> None:
    """killpg finding no group (it ended on its own meanwhile) is taken calmly."""
    mocker.patch("adapters.process.os.killpg", side_effect=ProcessLookupError)
    outcome = PosixProcessRunner(watch).run(["sleep", "0.3"], 0.05, 10)
    assert outcome.rc == 124


def test_an_empty_command_name_is_not_found(watch: SignalWatch) -> None:
    """'' names no program: 127 and the words `env ''` and `timeout ''` say (it said
    `posix_spawnp: argv first element cannot be empty`, Python's own words)."""
    outcome = PosixProcessRunner(watch).run([""], 0, 10)
    assert outcome.rc == 127
    assert outcome.error == "cannot run '': No such file or directory"


def test_a_failure_while_waiting_leaves_no_process(
    watch: SignalWatch, mocker: MockerFixture, tmp_path: object
) -> None:
    """Any exception while waiting kills and reaps the group before it propagates."""
    pidfile = os.path.join(str(tmp_path), "pid")
    real_wait = watch.wait

    def failing_wait(timeout: float | None, also: int | None = None) -> list[int]:
        read_pid(pidfile)
        real_wait(0)
        raise RuntimeError("boom")

    mocker.patch.object(watch, "wait", side_effect=failing_wait)
    with pytest.raises(RuntimeError):
        PosixProcessRunner(watch).run(sh(f"echo $$ > {pidfile}; sleep 30 & wait"), 0, 10)
    assert group_members(read_pid(pidfile)) == []


def test_a_huge_timeout_is_no_overflow(watch: SignalWatch) -> None:
    """--timeout 1e300 is finite, so allowed; waiting on it must not overflow time_t."""
    assert PosixProcessRunner(watch).run(["true"], 1e300, 1e300).rc == 0
