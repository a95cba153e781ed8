"""The apply lock: flock(LOCK_EX | LOCK_NB) on a file in the state folder."""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import time

from adapters.state import ensure_folder
from domain.errors import Interrupted, LockBusy, StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable

    from adapters.signals import SignalWatch


class FcntlLock:
    """An exclusive flock on the file `path`, created if missing.

    The lock belongs to the open file description, not to the runner: a command
    that inherited the descriptor keeps the lock for as long as any of its
    processes lives, even if the runner is killed with SIGKILL. `release` unlocks
    the description itself, so that once the runner has seen its command end,
    nothing the command left running in the background holds the lock.

    With `create_folder`, a missing parent folder is created (mode 0700), as the
    state folder is.
    """

    def __init__(self, path: str, watch: SignalWatch, *, create_folder: bool = False) -> None:
        self.path = path
        self.watch = watch
        self.create_folder = create_folder
        self._fd: int | None = None

    def acquire(self, wait: float = 0.0) -> None:
        """Take the lock, queueing in the kernel for up to `wait` seconds while it is busy.

        Raises LockBusy when the wait ends first, Interrupted on a signal that ends
        the run. A lock file deleted or replaced while we queued is locked anew.
        """
        if self.create_folder:
            ensure_folder(os.path.dirname(self.path) or ".")
        deadline = time.monotonic() + wait
        while True:
            fd = self._open()
            try:
                taken = _try(fd, self.path) or _queue(fd, self.path, deadline, self.watch)
                if taken and self._still_names(fd):
                    self._fd = fd
                    return
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            if not taken:
                raise LockBusy()

    def _still_names(self, fd: int) -> bool:
        """Whether `path` still names the file locked through `fd` (same device and inode)."""
        mine = os.fstat(fd)
        try:
            now = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StateError(f"cannot check lock file {self.path}: {exc.strerror}") from None
        return (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino)

    def _open(self) -> int:
        """Open (creating) the lock file without following a symlink; read-only will do.

        flock needs no write access, so a lock file another user made, that this
        one may only read, still serves (as with flock(1)).
        """
        flags = os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            try:
                return os.open(self.path, flags | os.O_RDWR | os.O_CREAT, 0o600)
            except PermissionError:
                return os.open(self.path, flags | os.O_RDONLY)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StateError(f"lock file {self.path} is a symbolic link; refusing it") from None
            if exc.errno == errno.EISDIR:
                raise StateError(f"lock file {self.path} is a folder") from None
            raise StateError(f"cannot open lock file {self.path}: {exc.strerror}") from None

    def fds(self) -> tuple[int, ...]:
        """The descriptor a command should inherit while the lock is held."""
        return () if self._fd is None else (self._fd,)

    def release(self) -> None:
        """Unlock for every process that shares the description, then close it."""
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None


def _try(fd: int, path: str) -> bool:
    """Take the flock without waiting; False when another description holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise StateError(f"cannot lock {path}: {exc.strerror}") from None
    return True


def _queue(fd: int, path: str, deadline: float, watch: SignalWatch) -> bool:
    """Wait in the kernel's queue for the flock on `fd`, until `deadline` (monotonic).

    A blocking flock cannot be given a deadline, and a signal handler that does not
    raise lets Python restart it; so a forked helper blocks on the shared open file
    description while the runner watches the clock and its signals. When the helper
    gets the lock, the description (and so the runner) holds it. Waiters are served
    in the kernel's order instead of by whoever polls at the right moment.
    """
    if deadline - time.monotonic() <= 0:
        return False
    from adapters.signals import REDIRECTED, ending  # noqa: PLC0415 - only when waiting

    everything = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        pid = os.fork()
        if pid == 0:
            _helper(fd, deadline, everything, REDIRECTED)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, everything)
    done = 0
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status) == 0 or _try(fd, path)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            signum = ending(watch.wait(remaining))
            if signum is not None:
                raise Interrupted(signum)
    finally:
        if not done:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    return _try(fd, path)


def _helper(fd: int, deadline: float, mask: Iterable[int], caught: tuple[int, ...]) -> None:
    """In the forked helper: block on the flock, never outliving the wait by much.

    It keeps no descriptor but the lock's, so that no pipe of the runner's stays open
    because of it.
    """
    try:
        os.closerange(0, fd)
        os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))
        signal.set_wakeup_fd(-1)
        for signum in (*caught, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(min(int(deadline - time.monotonic()) + 2, 1 << 30))
        signal.pthread_sigmask(signal.SIG_SETMASK, [n for n in mask if n != signal.SIGALRM])
        fcntl.flock(fd, fcntl.LOCK_EX)
        os._exit(0)
    except BaseException:
        os._exit(1)
