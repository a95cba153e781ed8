"""FcntlLock with real flocks, across processes."""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
import threading
from pathlib import Path

import pytest
from pytest_mock import MockerFixture

from adapters.lock import FcntlLock
from adapters.process import PosixProcessRunner
from adapters.signals import SignalWatch
from domain.errors import Interrupted, LockBusy, StateError
from tests.procs import children_of, lock_held_elsewhere, read_pid, wait_for


def state_lock(folder: Path, watch: SignalWatch) -> FcntlLock:
    """The lock as apply uses it: `folder/lock`, the folder made on demand."""
    return FcntlLock(str(folder / "lock"), watch, create_folder=True)


def test_a_lock_held_by_another_process_is_busy(tmp_path: Path, watch: SignalWatch) -> None:
    """flock across processes: another holder means LockBusy."""
    with lock_held_elsewhere(str(tmp_path / "lock")), pytest.raises(LockBusy):
        state_lock(tmp_path, watch).acquire()
    state_lock(tmp_path, watch).acquire()


def held_with_a_daemon(folder: Path, watch: SignalWatch) -> tuple[FcntlLock, int]:
    """The state lock, held, and the pid of a daemon a command under it left running."""
    lock = state_lock(folder / "state", watch)
    lock.acquire()
    pidfile = folder / "pid"
    runner = PosixProcessRunner(watch, inherit=lock.fds)
    background = ["sh", "-c", f"sleep 30 <&- >&- 2>&- & echo $! > {pidfile}"]
    assert runner.run(background, 0, 10).rc == 0
    return lock, read_pid(str(pidfile))


def test_a_runner_that_dies_leaves_the_lock_with_its_command(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Closed without release (as SIGKILL closes it), the lock lives while the command does."""
    lock, daemon = held_with_a_daemon(tmp_path, watch)
    (fd,) = lock.fds()
    os.close(fd)
    with pytest.raises(LockBusy):
        state_lock(tmp_path / "state", watch).acquire()
    os.kill(daemon, signal.SIGKILL)
    wait_for(lambda: _free(tmp_path / "state", watch), what="the lock to be freed")


def test_release_frees_the_lock_that_a_background_process_inherited(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: a daemon the command left behind no longer keeps every later run out."""
    lock, daemon = held_with_a_daemon(tmp_path, watch)
    try:
        lock.release()
        again = state_lock(tmp_path / "state", watch)
        again.acquire()
        again.release()
    finally:
        os.kill(daemon, signal.SIGKILL)


def test_a_lock_file_replaced_while_held_is_not_a_second_lock(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Deleting the held lock file and making a new one does not let a second run in.

    The path is checked after each flock: whoever locked a file the path no
    longer names starts over on the new file, where the two meet again.
    """
    first = state_lock(tmp_path, watch)
    first.acquire()
    (tmp_path / "lock").unlink()
    second = state_lock(tmp_path, watch)
    second.acquire()
    with pytest.raises(LockBusy):
        state_lock(tmp_path, watch).acquire()
    second.release()
    first.release()


def test_a_lock_file_swapped_between_open_and_flock_is_locked_anew(
    tmp_path: Path, watch: SignalWatch, mocker: MockerFixture
) -> None:
    """The race itself: the file is replaced after our open; we lock the new one."""
    path = tmp_path / "lock"
    path.write_text("")
    real_flock = fcntl.flock
    swapped: list[bool] = []

    def swap_then_lock(fd: int, operation: int) -> None:
        if not swapped:
            swapped.append(True)
            path.unlink()
            path.write_text("")
        real_flock(fd, operation)

    mocker.patch("adapters.lock.fcntl.flock", side_effect=swap_then_lock)
    lock = state_lock(tmp_path, watch)
    lock.acquire()
    mocker.stopall()
    (fd,) = lock.fds()
    assert os.fstat(fd).st_ino == path.stat().st_ino
    with pytest.raises(LockBusy):
        state_lock(tmp_path, watch).acquire()
    lock.release()


def test_lock_wait_queues_until_the_holder_lets_go(tmp_path: Path, watch: SignalWatch) -> None:
    """--lock-wait: the lock is taken as soon as the other holder releases it."""
    path = str(tmp_path / "lock")
    with lock_held_elsewhere(path) as release_in:
        release_in(0.3)
        lock = state_lock(tmp_path, watch)
        lock.acquire(wait=30)
    assert lock.fds()
    lock.release()


def test_lock_wait_gives_up_at_its_deadline(tmp_path: Path, watch: SignalWatch) -> None:
    """A holder that never lets go: LockBusy once the wait is spent, no helper left."""
    with lock_held_elsewhere(str(tmp_path / "lock")):
        before = children_of(os.getpid())
        lock = state_lock(tmp_path, watch)
        with pytest.raises(LockBusy):
            lock.acquire(wait=0.2)
        assert children_of(os.getpid()) == before


def test_a_signal_ends_the_lock_wait(tmp_path: Path, watch: SignalWatch) -> None:
    """SIGTERM while queued: Interrupted at once, no helper left behind."""
    with lock_held_elsewhere(str(tmp_path / "lock")):
        before = children_of(os.getpid())
        sender = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
        sender.start()
        with pytest.raises(Interrupted) as stop:
            state_lock(tmp_path, watch).acquire(wait=60)
        sender.join()
        assert stop.value.signum == signal.SIGTERM
        assert children_of(os.getpid()) == before


def _free(folder: Path, watch: SignalWatch) -> bool:
    lock = state_lock(folder, watch)
    try:
        lock.acquire()
    except LockBusy:
        return False
    lock.release()
    return True


def test_state_folder_is_created_0700(tmp_path: Path, watch: SignalWatch) -> None:
    """A missing state folder is created, readable by its owner only."""
    folder = tmp_path / "a" / "state"
    state_lock(folder, watch).acquire()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_state_path_that_is_a_file_is_refused(tmp_path: Path, watch: SignalWatch) -> None:
    """state is a regular file: StateError, nothing created."""
    (tmp_path / "state").write_text("")
    with pytest.raises(StateError, match="not a folder"):
        state_lock(tmp_path / "state", watch).acquire()


def test_a_symlinked_lock_file_is_refused(tmp_path: Path, watch: SignalWatch) -> None:
    """The lock file is opened without following symlinks."""
    target = tmp_path / "elsewhere"
    (tmp_path / "lock").symlink_to(target)
    with pytest.raises(StateError, match="symbolic link"):
        state_lock(tmp_path, watch).acquire()
    assert not target.exists()


@pytest.mark.parametrize("code", [errno.EACCES, errno.EAGAIN])
def test_both_busy_errnos_mean_another_run(
    tmp_path: Path, mocker: MockerFixture, code: int, watch: SignalWatch
) -> None:
    """Portable code checks EACCES as well as EAGAIN, as the fcntl docs say."""
    mocker.patch("adapters.lock.fcntl.flock", side_effect=OSError(code, os.strerror(code)))
    with pytest.raises(LockBusy):
        state_lock(tmp_path, watch).acquire()


def test_other_flock_errors_are_state_errors(
    tmp_path: Path, mocker: MockerFixture, watch: SignalWatch
) -> None:
    """ENOLCK (say, on a network file system) is not mistaken for a busy lock."""
    mocker.patch("adapters.lock.fcntl.flock", side_effect=OSError(errno.ENOLCK, "No locks"))
    with pytest.raises(StateError, match="cannot lock"):
        state_lock(tmp_path, watch).acquire()


def test_a_read_only_state_folder_is_a_state_error(
    tmp_path: Path, mocker: MockerFixture, watch: SignalWatch
) -> None:
    """EROFS when creating the lock file: a clear StateError."""
    mocker.patch("adapters.lock.os.open", side_effect=OSError(errno.EROFS, "Read-only file system"))
    with pytest.raises(StateError, match="Read-only"):
        state_lock(tmp_path, watch).acquire()


def test_a_lock_file_in_a_missing_folder_is_a_state_error(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """run --lock FILE does not create folders: a missing one is a clear error."""
    with pytest.raises(StateError, match="No such file"):
        FcntlLock(str(tmp_path / "missing" / "job.lock"), watch).acquire()
    assert not (tmp_path / "missing").exists()


def test_a_folder_is_locked_as_flock_locks_one(tmp_path: Path, watch: SignalWatch) -> None:
    """--lock naming a folder locks the folder, as flock(1) does (it was refused); its holder
    writes nothing into it, and a second holder finds it busy."""
    folder = tmp_path / "app"
    folder.mkdir()
    first = FcntlLock(str(folder), watch)
    first.acquire()
    try:
        with pytest.raises(LockBusy):
            FcntlLock(str(folder), watch).acquire()
    finally:
        first.release()
    assert list(folder.iterdir()) == []
    FcntlLock(str(folder), watch).acquire()


def test_a_lock_file_that_can_only_be_read_still_locks(
    tmp_path: Path, mocker: MockerFixture, watch: SignalWatch
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
    lock = FcntlLock(str(path), watch)
    lock.acquire()
    mocker.stopall()
    with pytest.raises(LockBusy):
        FcntlLock(str(path), watch).acquire()
    lock.release()


def test_fencing_tokens_from_racing_processes_are_all_distinct(tmp_path: Path) -> None:
    """Regression guard: without the token file's flock, racing holders got the same token.

    Sixteen processes (as sixteen `--slots 16` holders) each take 50 tokens at once:
    every number from 1 to 800 is handed out exactly once.
    """
    from adapters.lock import _next_token

    path = str(tmp_path / "job.lock.token")
    start_read, start_write = os.pipe()
    children = []
    for worker in range(16):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child, which must never return into pytest
            try:
                os.close(start_write)
                os.read(start_read, 1)
                tokens = [_next_token(path) for _ in range(50)]
                (tmp_path / f"tokens{worker}").write_text(" ".join(map(str, tokens)))
            except BaseException:
                os._exit(1)
            os._exit(0)
        children.append(pid)
    os.close(start_read)
    os.close(start_write)
    for pid in children:
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    handed = [int(t) for w in range(16) for t in (tmp_path / f"tokens{w}").read_text().split()]
    assert sorted(handed) == list(range(1, 801))


def test_a_file_of_its_own_is_locked_and_left_as_it_is(tmp_path: Path, watch: SignalWatch) -> None:
    """Regression guard: the holder's record replaced whatever the locked file held, so the
    `flock "$0"` idiom (a script that locks itself) lost the script. A file that is
    neither empty nor a holder's record is locked, and nothing is written into it."""
    script = tmp_path / "deploy.sh"
    body = b"#!/bin/sh\necho deploying\n"
    script.write_bytes(body)
    first = FcntlLock(str(script), watch, what="run ./deploy.sh")
    first.acquire()
    try:
        assert script.read_bytes() == body
        with pytest.raises(LockBusy) as busy:
            FcntlLock(str(script), watch).acquire()
        assert busy.value.holder is None
    finally:
        first.release()
    assert script.read_bytes() == body


def test_an_empty_lock_file_and_a_holder_record_are_written_over(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """The holder's record goes into an empty lock file, and replaces the record of the holder
    before: a busy lock still names who holds it."""
    path = tmp_path / "job.lock"
    path.write_bytes(b"")
    for what in ("run first", "run second"):
        lock = FcntlLock(str(path), watch, what=what)
        lock.acquire()
        try:
            with pytest.raises(LockBusy) as busy:
                FcntlLock(str(path), watch).acquire()
            assert busy.value.holder is not None
            assert busy.value.holder.startswith(what)
        finally:
            lock.release()


@pytest.mark.parametrize(
    "content", [b"s3cr3t-api-key\n", b"12345678901234567890123456789012345678901234567890x\n"]
)
def test_a_token_file_that_holds_something_else_is_refused_and_kept(
    tmp_path: Path, watch: SignalWatch, content: bytes
) -> None:
    """Regression guard: LOCK.token was overwritten with a number whatever it held (a file
    named like an API token beside the locked one). It is left as it is, and the lock
    refused with a StateError that names it."""
    path = tmp_path / "vault"
    token = tmp_path / "vault.token"
    token.write_bytes(content)
    with pytest.raises(StateError, match=r"vault\.token"):
        FcntlLock(str(path), watch, what="run x").acquire()
    assert token.read_bytes() == content
    FcntlLock(str(path), watch, bare=True).acquire()  # the lock itself was let go


def test_a_holder_gone_is_not_named_when_another_program_holds_the_lock(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: the record of a runner that had let go stayed in the file, so a lock
    then held by flock(1), which writes nothing, was said to be held by that runner
    (`run true on vm (pid 11227) for 53s`). A holder's record goes when it lets go."""
    path = tmp_path / "job.lock"
    lock = FcntlLock(str(path), watch, what="run true")
    lock.acquire()
    lock.release()
    assert path.read_bytes() == b""
    with lock_held_elsewhere(str(path)), pytest.raises(LockBusy) as busy:
        FcntlLock(str(path), watch).acquire()
    assert busy.value.holder is None


def test_a_runner_lock_of_another_user_that_cannot_be_opened_is_made_anew(
    tmp_path: Path, mocker: MockerFixture, watch: SignalWatch
) -> None:
    """Regression: root's `stats` in a user's home left a lock file the user may not open
    (0600, root's), and every later stats of the user ran unguarded, so two at once could
    export a lower counter. A lock of the runner's own (bare) that cannot be opened is
    replaced by one of this user's, as a checkpoint is; it then guards as before."""
    path = tmp_path / ".runs.jsonl.stats.lock"
    path.write_text("")
    theirs = path.stat().st_ino
    real_open = os.open

    def not_theirs(name: str, flags: int, mode: int = 0o777) -> int:
        if name == str(path) and path.exists() and path.stat().st_ino == theirs:
            raise PermissionError(13, "Permission denied")
        return real_open(name, flags, mode)

    mocker.patch("adapters.lock.os.open", side_effect=not_theirs)
    lock = FcntlLock(str(path), watch, bare=True)
    lock.acquire()
    assert path.stat().st_ino != theirs
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    mocker.stopall()
    with pytest.raises(LockBusy):
        FcntlLock(str(path), watch, bare=True).acquire()
    lock.release()


def test_a_shared_lock_of_another_user_that_cannot_be_opened_is_left_to_them(
    tmp_path: Path, mocker: MockerFixture, watch: SignalWatch
) -> None:
    """`--lock FILE` and apply's lock are shared between users: one that cannot be opened is
    an error, never replaced (its holders would no longer exclude this runner)."""
    path = tmp_path / "job.lock"
    path.write_text("")
    mocker.patch("adapters.lock.os.open", side_effect=PermissionError(13, "Permission denied"))
    with pytest.raises(StateError, match="Permission denied"):
        FcntlLock(str(path), watch).acquire()
    mocker.stopall()
    assert path.read_text() == ""
