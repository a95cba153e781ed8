"""Who holds the locks of a state folder: for `runner locks` on one host."""

from __future__ import annotations

import errno
import fcntl
import os

from adapters.holders import record_of
from domain.errors import StateError


def held_locks(state: str) -> list[dict[str, object]]:
    """Every lock file of `state` (apply's `lock`, a name's `NAME.lock`) that a process
    holds now, with what its holder wrote of itself and the lock's last fencing token."""
    try:
        names = sorted(os.listdir(state))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StateError(f"cannot read the state folder {state}: {exc.strerror}") from None
    found = []
    for name in names:
        if name != "lock" and not name.endswith(".lock"):
            continue
        path = os.path.join(state, name)
        holder = _holder(path) or _held(path)
        if holder is not None:
            found.append({"lock": name, **holder, "token": _token(path + ".token")})
    return found


def _held(path: str) -> dict[str, object] | None:
    """A lock no process holds, kept taken by the --hold of a run that ended."""
    import time  # noqa: PLC0415

    from adapters.hold import held_until, moment  # noqa: PLC0415

    found = held_until(path + ".hold")
    if found is None or found[0] <= time.time():
        return None
    until, what = found
    return {"what": f"{what} ended; held until {moment(until)} (--hold)", "held_until": until}


def _holder(path: str) -> dict[str, object] | None:
    """What the holder of `path` wrote, or None when nobody holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                return None
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        record = record_of(fd)
        if record is None:
            return {"what": "(shared: applies of --lock-scope name)"}
        return dict(zip(("what", "host", "pid", "since"), record, strict=True))
    finally:
        os.close(fd)


def _token(path: str) -> int | None:
    try:
        with open(path, "rb") as handle:
            text = handle.read(32).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
