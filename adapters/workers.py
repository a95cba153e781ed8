"""Forked workers for `stats`: results by task, a signal ends them all, none outlives us.

A process pool's workers block on queues whose other ends they inherited, so they
outlived a parent killed with SIGKILL; and the pool gave the parent no way to
answer SIGTERM while it waited. These workers are plain forks that take task
numbers from one pipe, send their results back on pipes of their own, check
between two pieces of work that their parent still lives, and die with it.
"""

from __future__ import annotations

import os
import pickle
import select
import signal

from adapters.forked import become_helper
from adapters.signals import ending
from domain.errors import Interrupted, StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from adapters.signals import SignalWatch

    T = TypeVar("T")

MAX_TASKS = 255
"""Task numbers travel as single bytes."""


def fork_map(
    task: Callable[[int, Callable[[], None]], T],
    count: int,
    workers: int,
    watch: SignalWatch,
    keep: tuple[int, ...] = (),
) -> list[T]:
    """Run `task(n, check)` for n in range(count) in `workers` processes; return the results.

    `keep` are descriptors the workers keep open (every other is closed in them).
    `check` is to be called often: in a worker it ends the worker once the
    parent is gone. A signal that ends the run kills every worker and raises
    Interrupted; a worker that fails raises StateError.
    """
    if count > MAX_TASKS:
        raise ValueError(f"at most {MAX_TASKS} tasks")
    tasks_read, tasks_write = os.pipe()
    os.write(tasks_write, bytes(range(count)))
    os.close(tasks_write)
    parent = os.getpid()
    children: dict[int, int] = {}
    everything = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        for _ in range(workers):
            results_read, results_write = os.pipe()
            pid = os.fork()
            if pid == 0:
                _work(task, tasks_read, results_write, parent, keep)
            os.close(results_write)
            children[results_read] = pid
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, everything)
        os.close(tasks_read)
    try:
        found: dict[int, T] = {}
        for part in _collect(children, watch):
            try:
                found.update(pickle.loads(part))
            except (EOFError, pickle.UnpicklingError):  # a worker that died: nothing, or part
                continue
    finally:
        for fd, pid in children.items():
            os.close(fd)
            _end(pid)
    if sorted(found) != list(range(count)):
        raise StateError("a stats worker failed; nothing was summarized")
    return [found[n] for n in range(count)]


def _collect(children: dict[int, int], watch: SignalWatch) -> list[bytes]:
    """Everything the workers send, until each closes its pipe; a signal stops it all."""
    chunks: dict[int, list[bytes]] = {fd: [] for fd in children}
    open_fds = set(children)
    while open_fds:
        signum = ending(watch.pending())
        if signum is not None:
            raise Interrupted(signum)
        ready, _, _ = select.select([*open_fds, watch.fileno()], [], [], 1.0)
        for fd in ready:
            if fd in open_fds:
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd].append(data)
                else:
                    open_fds.discard(fd)
    return [b"".join(parts) for parts in chunks.values()]


def _end(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _work(
    task: Callable[[int, Callable[[], None]], object],
    tasks: int,
    results: int,
    parent: int,
    keep: tuple[int, ...],
) -> None:
    """In a worker: default signals, no descriptor but its two pipes, results as one pickle."""
    try:
        become_helper([0, 1, 2, tasks, results, *keep])

        def orphaned() -> None:
            if os.getppid() != parent:
                os._exit(1)

        done: dict[int, object] = {}
        while number := os.read(tasks, 1):
            orphaned()
            done[number[0]] = task(number[0], orphaned)
        orphaned()
        data = pickle.dumps(done, pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(results, view) :]
        os._exit(0)
    except BaseException:
        os._exit(1)
