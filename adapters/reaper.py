"""The runner as a child subreaper: everything its command starts stays its descendant.

A process that leaves the command's group (`setsid`, a daemon that double-forks) is
no longer reached by signalling the group. With PR_SET_CHILD_SUBREAPER, an orphan is
reparented to the runner instead of init, so the runner can always find everything
its command started by walking its own descendants (as tini's -s does), however it
left the group. Where the kernel keeps children lists, finding them reads a few files
per process of the command's tree; elsewhere one pass over /proc, so a sweep tracks
the processes it found and looks again for new ones only now and then.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); False where that cannot be done."""
    try:
        import ctypes  # noqa: PLC0415 - only a runner that starts commands

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int, exclude: frozenset[int] = frozenset()) -> set[int]:
    """The live (not zombie) descendants of process `root`, but `exclude` and theirs.

    From the kernel's children lists where it keeps them (CONFIG_PROC_CHILDREN),
    else from one pass over /proc.
    """
    children = _children if _HAS_CHILDREN_LISTS else _children_map()
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children(todo.pop()):
            if child not in found and child not in exclude:
                found.add(child)
                todo.append(child)
    return {pid for pid in found if alive(pid)}


def _children(pid: int) -> list[int]:
    """The children of `pid` (every thread's), from /proc/PID/task/TID/children."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found += [int(word) for word in handle.read().split()]
        except OSError:
            continue
    return found


def _children_map() -> Callable[[int], list[int]]:
    """Every process's children, from one pass over /proc (each process's parent)."""
    by_parent: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return lambda pid: []
    for entry in entries:
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None:
                by_parent.setdefault(int(fields[1]), []).append(int(entry))
    return lambda pid: by_parent.get(pid, [])


def _stat(pid: int) -> list[bytes] | None:
    """State, parent and the rest of /proc/PID/stat, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie awaiting its reaper does not)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != b"Z"


def started_at(pid: int) -> int | None:
    """When `pid` started (clock ticks after boot: with the pid, one process for ever), or
    None when it is gone or a zombie."""
    fields = _stat(pid)
    return None if fields is None or fields[0] == b"Z" else int(fields[19])


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs; zombies awaiting their reaper do not.

    An orphan's zombie can stay in the group until init collects it, so the
    kernel's answer (killpg with signal 0) is confirmed against /proc where it exists.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[0] != b"Z" and int(fields[2]) == pgid:
                return True
    return False


_HAS_CHILDREN_LISTS = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def signal_outside(
    pids: set[int], group: int | None, signum: int, run_id: bytes | None = None
) -> None:
    """Send `signum` to each of `pids` but those in process group `group`, which was
    signalled as a whole: a second of the same signal could run a command's trap twice.
    One that has gone meanwhile is left, and so is one that a nested runner started (its
    RUNNER_RUN_ID is not `run_id`) while that runner lives (it is not this one's orphan):
    that runner passes the signal on to it."""
    me = os.getpid()
    for pid in pids:
        fields = _stat(pid)
        if fields is None or (group is not None and int(fields[2]) == group):
            continue
        if run_id is not None and int(fields[1]) != me and _nested(pid, run_id):
            continue
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _nested(pid: int, run_id: bytes) -> bool:
    """Whether `pid` was started under another runner than the run `run_id` (its environment
    holds another RUNNER_RUN_ID)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return False
    for entry in environ.split(b"\0"):
        if entry.startswith(b"RUNNER_RUN_ID="):
            return entry[len(b"RUNNER_RUN_ID=") :] != run_id
    return False
