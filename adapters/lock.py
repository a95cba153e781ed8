"""The apply lock: flock(LOCK_EX | LOCK_NB) on a file in the state folder."""

from __future__ import annotations

import errno
import fcntl
import os
import time

from domain.errors import LockBusy, StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.signals import SignalWatch


class FcntlLock:
    """An exclusive flock on the file `path` (or on one of `slots` files), created if missing.

    The lock belongs to the open file description, not to the runner: a command
    that inherited the descriptor keeps the lock for as long as any of its
    processes lives, even if the runner is killed with SIGKILL. `release` unlocks
    the description itself, so that once the runner has seen its command end,
    nothing the command left running in the background holds the lock.

    With `slots` N above 1, the slots are `path`, `path.slot2` … `path.slotN`.
    The holder writes what it runs (`what`), its host, pid and start into the
    file it locked, for the message a busy lock gives; the fencing token is kept
    in `path.token`. With `create_folder`, a missing parent folder is created
    (mode 0700), as the state folder is. With `shared`, the flock is LOCK_SH: many
    shared holders at once, none beside an exclusive one; a shared holder writes no
    description and takes no token, and neither does a `bare` one (a lock of the
    runner's own, such as stats').
    """

    def __init__(
        self,
        path: str,
        watch: SignalWatch,
        *,
        what: str = "",
        slots: int = 1,
        create_folder: bool = False,
        shared: bool = False,
        bare: bool = False,
    ) -> None:
        self.path = path
        self.mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        self.bare = bare
        self.watch = watch
        self.what = what
        self.paths = [path] + [f"{path}.slot{n}" for n in range(2, slots + 1)]
        self.create_folder = create_folder
        self._fd: int | None = None
        self._claimed = False

    def acquire(self, wait: float = 0.0) -> int | None:
        """Take the lock, queueing in the kernel for up to `wait` seconds while it is busy.

        Returns the fencing token (None when the token file may not be written).
        Raises LockBusy when the wait ends first, Interrupted on a signal that ends
        the run. A lock file deleted or replaced while we queued is locked anew.
        """
        if self.create_folder:
            from adapters.state import ensure_folder  # noqa: PLC0415 - not for stats' lock

            ensure_folder(os.path.dirname(self.path) or ".")
        deadline = time.monotonic() + wait
        while True:
            fds: list[int] = []
            try:
                fds += [self._open(path) for path in self.paths]
                slot = _take(fds, self.paths, deadline, self.watch, self.mode)
                if slot is not None and _still_names(fds[slot], self.paths[slot]):
                    self._fd = fds.pop(slot)
                    if self.mode == fcntl.LOCK_SH or self.bare:
                        return None
                    from adapters.holders import claim  # noqa: PLC0415 - not for stats' lock

                    self._claimed = claim(self._fd, self.what)
                    try:
                        return _next_token(self.path + ".token")
                    except StateError:
                        self.release()
                        raise
                busy = None
                if slot is None:
                    from adapters.holders import busy_holders  # noqa: PLC0415 - a busy lock

                    busy = busy_holders(fds)
            finally:
                for fd in fds:
                    os.close(fd)
            if slot is None:
                raise LockBusy(busy)

    def lost(self) -> str | None:
        """A flock is never lost while its descriptor is open."""
        return None

    def _open(self, path: str) -> int:
        """Open (creating) a lock file without following a symlink; read-only will do.

        flock needs no write access, so a lock file another user made, that this
        one may only read, or one on a read-only file system, still serves (as with
        flock(1)). A folder is locked as flock(1) locks one (its holder writes nothing).
        A file that holds anything but a holder's record (see adapters.holders) is opened
        read-only, as flock(1) opens every file: a script open for writing could not
        be run (ETXTBSY) by the command that inherits the lock. A `bare` lock stays open
        for writing whatever its file holds: no command inherits it.

        A `bare` lock file that cannot even be read (root's stats left it 0600 in a user's
        home) is replaced by one of this user's: left as it is, every stats of the user
        would run unguarded.
        """
        flags = os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            try:
                fd = os.open(path, flags | os.O_RDWR | os.O_CREAT, 0o600)
                if self.bare:  # no command inherits it, and no record is written into it
                    return fd
                from adapters.holders import ours  # noqa: PLC0415 - not for stats' lock

                if ours(fd):
                    return fd
                os.close(fd)
                return os.open(path, flags | os.O_RDONLY)
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR):
                    raise
                try:
                    return os.open(path, flags | os.O_RDONLY)
                except PermissionError:
                    if not self.bare:
                        raise
                    from adapters.files import write_atomically  # noqa: PLC0415 - rare

                    write_atomically(path, b"", 0o600, durable=False)
                    return os.open(path, flags | os.O_RDWR)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise StateError(f"lock file {path} is a symbolic link; refusing it") from None
            raise StateError(f"cannot open lock file {path}: {exc.strerror}") from None

    def fds(self) -> tuple[int, ...]:
        """The descriptor a command should inherit while the lock is held."""
        return () if self._fd is None else (self._fd,)

    def release(self) -> None:
        """Take the holder's record out, unlock for every process that shares the
        description, then close it (a record left behind would name this runner as the
        holder of a lock that another program, which writes none, holds next)."""
        if self._fd is not None:
            try:
                if self._claimed:
                    self._claimed = False
                    try:
                        os.ftruncate(self._fd, 0)
                    except OSError:
                        pass
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None


def _take(
    fds: list[int], paths: list[str], deadline: float, watch: SignalWatch, mode: int
) -> int | None:
    """The slot whose flock we took at once, or after queueing until `deadline`; or None."""

    def take(fd: int, path: str) -> bool:
        return _try(fd, path, mode)

    for slot, fd in enumerate(fds):
        if take(fd, paths[slot]):
            return slot
    if deadline - time.monotonic() <= 0:
        return None
    from adapters.flockwait import queue  # noqa: PLC0415 - only a waiting runner queues

    return queue(fds, paths, deadline, watch, take, mode)


def _still_names(fd: int, path: str) -> bool:
    """Whether `path` still names the file locked through `fd` (same device and inode)."""
    mine = os.fstat(fd)
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StateError(f"cannot check lock file {path}: {exc.strerror}") from None
    return (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino)


TOKEN_WAIT = 10.0
"""Seconds to keep trying the token file's flock (each holder keeps it for an instant: a
read, a write and an fsync, which a loaded disk can make slow)."""


TOKEN_BYTES = 32
"""The most a token file holds (a token is at most 19 digits and a newline): anything
longer is another file, never written over."""


def _next_token(path: str) -> int | None:
    """Add one to the number in `path` under its flock, durably; None if it may not be written."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return None
        raise StateError(f"cannot open the token file {path}: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + TOKEN_WAIT
        pause = 0.001
        while not _try(fd, path):
            if time.monotonic() >= deadline:
                raise StateError(f"the token file {path} stays locked by another process")
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        try:
            text = os.pread(fd, TOKEN_BYTES + 1, 0).strip()
            if len(text) > TOKEN_BYTES or not (text.isdigit() or not text):
                raise StateError(
                    f"the token file {path} holds something other than a fencing token: "
                    "it is left as it is (lock another file, or move it away)"
                )
            token = int(text or b"0") + 1
            os.ftruncate(fd, 0)
            os.pwrite(fd, b"%d\n" % token, 0)
            os.fsync(fd)
        except OSError as exc:
            raise StateError(f"cannot keep the fencing token in {path}: {exc.strerror}") from None
        return token
    finally:
        os.close(fd)


def _try(fd: int, path: str, mode: int = fcntl.LOCK_EX) -> bool:
    """Take the flock (`mode`) without waiting; False when another description holds it."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise StateError(f"cannot lock {path}: {exc.strerror}") from None
    return True
