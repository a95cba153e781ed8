"""FcntlLock with real flocks, across processes."""

from __future__ import annotations

import errno
import os
import signal
import stat
from pathlib import Path

import pytest
from pytest_mock import MockerFixture

from adapters.lock import FcntlLock
from adapters.process import PosixProcessRunner
from adapters.signals import SignalWatch
from domain.errors import LockBusy, StateError
from tests.procs import lock_held_elsewhere, read_pid, wait_for


def state_lock(folder: Path) -> FcntlLock:
    """The lock as apply uses it: `folder/lock`, the folder made on demand."""
    return FcntlLock(str(folder / "lock"), create_folder=True)


def test_a_lock_held_by_another_process_is_busy(tmp_path: Path) -> None:
    """flock across processes: another holder means LockBusy."""
    with lock_held_elsewhere(str(tmp_path / "lock")), pytest.raises(LockBusy):
        state_lock(tmp_path).acquire()
    state_lock(tmp_path).acquire()


def test_the_lock_lives_on_in_a_command_that_inherited_it(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """The runner lets go, but the command's process tree still holds the lock."""
    lock = state_lock(tmp_path / "state")
    lock.acquire()
    pidfile = tmp_path / "pid"
    runner = PosixProcessRunner(watch, inherit=lock.fds)
    background = ["sh", "-c", f"sleep 30 <&- >&- 2>&- & echo $! > {pidfile}"]
    assert runner.run(background, 0, 10).rc == 0
    lock.release()
    with pytest.raises(LockBusy):
        state_lock(tmp_path / "state").acquire()
    os.kill(read_pid(str(pidfile)), signal.SIGKILL)
    wait_for(lambda: _free(tmp_path / "state"), what="the lock to be freed")


def _free(folder: Path) -> bool:
    lock = state_lock(folder)
    try:
        lock.acquire()
    except LockBusy:
        return False
    lock.release()
    return True


def test_state_folder_is_created_0700(tmp_path: Path) -> None:
    """A missing state folder is created, readable by its owner only."""
    folder = tmp_path / "a" / "state"
    state_lock(folder).acquire()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_state_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """state is a regular file: StateError, nothing created."""
    (tmp_path / "state").write_text("")
    with pytest.raises(StateError, match="not a folder"):
        state_lock(tmp_path / "state").acquire()


def test_a_symlinked_lock_file_is_refused(tmp_path: Path) -> None:
    """The lock file is opened without following symlinks."""
    target = tmp_path / "elsewhere"
    (tmp_path / "lock").symlink_to(target)
    with pytest.raises(StateError, match="symbolic link"):
        state_lock(tmp_path).acquire()
    assert not target.exists()


@pytest.mark.parametrize("code", [errno.EACCES, errno.EAGAIN])
def test_both_busy_errnos_mean_another_run(
    tmp_path: Path, mocker: MockerFixture, code: int
) -> None:
    """Portable code checks EACCES as well as EAGAIN, as the fcntl docs say."""
    mocker.patch("adapters.lock.fcntl.flock", side_effect=OSError(code, os.strerror(code)))
    with pytest.raises(LockBusy):
        state_lock(tmp_path).acquire()


def test_other_flock_errors_are_state_errors(tmp_path: Path, mocker: MockerFixture) -> None:
    """ENOLCK (say, on a network file system) is not mistaken for a busy lock."""
    mocker.patch("adapters.lock.fcntl.flock", side_effect=OSError(errno.ENOLCK, "No locks"))
    with pytest.raises(StateError, match="cannot lock"):
        state_lock(tmp_path).acquire()


def test_a_read_only_state_folder_is_a_state_error(tmp_path: Path, mocker: MockerFixture) -> None:
    """EROFS when creating the lock file: a clear StateError."""
    mocker.patch("adapters.lock.os.open", side_effect=OSError(errno.EROFS, "Read-only file system"))
    with pytest.raises(StateError, match="Read-only"):
        state_lock(tmp_path).acquire()


def test_a_lock_file_in_a_missing_folder_is_a_state_error(tmp_path: Path) -> None:
    """run --lock FILE does not create folders: a missing one is a clear error."""
    with pytest.raises(StateError, match="No such file"):
        FcntlLock(str(tmp_path / "missing" / "job.lock")).acquire()
    assert not (tmp_path / "missing").exists()


def test_a_lock_path_that_is_a_folder_is_a_state_error(tmp_path: Path) -> None:
    """--lock naming a folder is refused with a clear message."""
    with pytest.raises(StateError, match="is a folder"):
        FcntlLock(str(tmp_path)).acquire()


def test_a_lock_file_that_can_only_be_read_still_locks(
    tmp_path: Path, mocker: MockerFixture
) -> None:
    """Without write access (another user's file), the lock opens read-only, as flock(1)."""
    path = tmp_path / "job.lock"
    path.write_text("")
    real_open = os.open

    def no_write(name: str, flags: int, mode: int = 0o777) -> int:
        if flags & os.O_RDWR:
            raise PermissionError(13, "Permission denied")
        return real_open(name, flags, mode)

    mocker.patch("adapters.lock.os.open", side_effect=no_write)
    lock = FcntlLock(str(path))
    lock.acquire()
    mocker.stopall()
    with pytest.raises(LockBusy):
        FcntlLock(str(path)).acquire()
    lock.release()
