"""The apply lock: flock(LOCK_EX | LOCK_NB) on a file in the state folder."""

from __future__ import annotations

import errno
import fcntl
import os

from adapters.state import ensure_folder
from domain.errors import LockBusy, StateError


class FcntlLock:
    """An exclusive, non-blocking flock on the file `path`, created if missing.

    The lock belongs to the open file, not to the runner: a command that inherited
    the descriptor keeps the lock for as long as any of its processes lives, even
    if the runner is killed with SIGKILL. With `create_folder`, a missing parent
    folder is created (mode 0700), as the state folder is.
    """

    def __init__(self, path: str, *, create_folder: bool = False) -> None:
        self.path = path
        self.create_folder = create_folder
        self._fd: int | None = None

    def acquire(self) -> None:
        if self.create_folder:
            ensure_folder(os.path.dirname(self.path) or ".")
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                raise LockBusy() from None
            raise StateError(f"cannot lock {self.path}: {exc.strerror}") from None
        self._fd = fd

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
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
