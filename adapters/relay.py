"""The command's stdout and stderr through the runner: for --idle-timeout where its writes
cannot be seen where they land (adapters.activity: /dev/null, a socket), and for a
ping's body in the order written.

Every other run passes its descriptors to the command untouched. Each stream goes
through a pipe of its own and on, as it comes, to where it would have gone (the runner's
stdout and stderr, or --output-on-failure's files): spliced in the kernel where it can
be (Linux, a pipe to a file or a pipe), read and written otherwise. Streams bound for
one destination (cron's mail, a terminal) share one pipe, so they stay in the order
written. A destination that can no longer be written (a closed pipe) closes the
stream's pipe too, so the command sees it as it would have.

The relay also serves a ping's body (--output-on-failure's two files): one thread then
reads what it moves and hands it to `seen` in the order read, which is the order written
but for writes to both streams closer together than the runner can read them.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import threading
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

CHUNK = 1 << 20
"""Bytes moved at a time from one stream."""
PIPE_SIZE = 1 << 20
"""Bytes each stream's pipe holds (Linux's default limit for a user's pipe)."""
GATHER = 0.0002
"""Seconds' pause once a stream is drained: one written a few KiB at a time (as `head`
writes) is moved up to a megabyte at a time, not at each write; what is written now and
then is late by a fifth of a millisecond."""
WAKE = 0.1
"""Seconds a mover waits for more before it looks whether it is asked to stop."""
CLOSE_WAIT = 5.0
"""Seconds to wait for a mover to finish (a destination that takes nothing more)."""


class Relay:
    """One attempt's two streams: `open` gives the ends the command writes into, `handed`
    starts moving, `close` ends it once the attempt is over.

    Each stream is moved by a thread of its own, in the kernel (splice) where it can be,
    so a stream of gigabytes costs the runner's main loop nothing; `last` is read by it.
    With `seen`, one thread reads both streams, hands each piece to `seen` in the order
    read, then writes it: stdout's before stderr's when both have some, so that a job's
    last words (mostly on stderr) stay last."""

    def __init__(
        self,
        destinations: tuple[int, int],
        together: bool = False,
        seen: Callable[[bytes], None] | None = None,
    ) -> None:
        self.destinations = destinations[:1] if together else destinations
        self.seen = seen
        self.last = time.monotonic()
        """When the command last wrote (or the attempt began): monotonic seconds."""
        self.ends: tuple[int, ...] = ()
        self.sources: list[int] = []
        self.threads: list[threading.Thread] = []
        self.stopping = False

    look_every = float("inf")
    """`last` is kept up to date as the output moves: no need to look."""

    def seen_at(self) -> float:
        """When the command last wrote (or the attempt began): monotonic seconds."""
        return self.last

    def open(self) -> tuple[int, int]:
        """The write ends for the command's stdout and stderr (one end for both when they
        go to one destination)."""
        ends = []
        for _ in self.destinations:
            read, write = os.pipe()
            for fd in (read, *self.destinations):  # fewer, larger moves (a destination
                try:  # that is no pipe, or may not grow, stays as it is)
                    fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
                except (OSError, AttributeError):
                    pass
            os.set_blocking(read, False)
            self.sources.append(read)
            ends.append(write)
        self.last = time.monotonic()
        self.ends = tuple(ends)
        return ends[0], ends[-1]

    def handed(self) -> None:
        """The command has its ends (or could not be started): close the runner's copies, so
        that a stream ends when the command's last writer does, and start moving."""
        for fd in self.ends:
            os.close(fd)
        self.ends = ()
        streams = dict(zip(self.sources, self.destinations, strict=True))
        if self.seen is not None:
            self._thread(self._run_in_order, streams)
            return
        for source, destination in streams.items():
            self._thread(self._run, {source: destination})

    def _thread(self, target: Callable[[dict[int, int]], None], streams: dict[int, int]) -> None:
        thread = threading.Thread(target=target, args=(streams,), daemon=True)
        thread.start()
        self.threads.append(thread)

    def _run(self, streams: dict[int, int]) -> None:
        """Move one stream until it ends, or until `close` asks and nothing is left to move."""
        [(source, destination)] = streams.items()
        try:
            while True:
                moved = _move(source, destination)
                if moved is None:  # drained: let the writer fill the pipe a moment, then wait
                    if self.stopping:
                        return
                    time.sleep(GATHER)
                    select.select([source], [], [], WAKE)
                elif moved == 0:
                    return
                else:
                    self.last = time.monotonic()
        finally:
            os.close(source)

    def _run_in_order(self, streams: dict[int, int]) -> None:
        """Move every stream as `_run` does, reading each piece and handing it to `seen`."""
        try:
            while streams:
                ready = select.select(list(streams), [], [], 0 if self.stopping else WAKE)[0]
                if not ready and self.stopping:
                    return
                for source in [source for source in streams if source in ready]:
                    moved = self._copy(source, streams[source])
                    if moved == 0:
                        os.close(source)
                        del streams[source]
                    elif moved:
                        self.last = time.monotonic()
        finally:
            for source in streams:
                os.close(source)

    def _copy(self, source: int, destination: int) -> int | None:
        """As `_move`, reading what it moves and handing it to `seen` first."""
        try:
            data = os.read(source, CHUNK)
        except BlockingIOError:
            return None
        if data and self.seen is not None:
            self.seen(data)
        if data and not _write_all(destination, data):
            return 0
        return len(data)

    def close(self) -> None:
        """Move what is left, then stop (a process the command left behind that still writes
        finds its stream closed)."""
        self.stopping = True
        for thread in self.threads:
            thread.join(CLOSE_WAIT)
        self.threads = []


def _move(source: int, destination: int) -> int | None:
    """Bytes moved (0: the stream ended, or its destination did), or None when nothing is
    there now."""
    try:
        return os.splice(source, destination, CHUNK)
    except BlockingIOError:
        return None
    except OSError as exc:
        if exc.errno in (errno.EPIPE, errno.EBADF):
            return 0  # nowhere to write: the command finds its stream closed
        if exc.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
    try:  # a destination splice cannot write to (a terminal): read, then write
        data = os.read(source, CHUNK)
    except BlockingIOError:
        return None
    if data and not _write_all(destination, data):
        return 0
    return len(data)


def _write_all(fd: int, data: bytes) -> bool:
    """Write all of `data` (waiting while a slow reader catches up); False when `fd` cannot
    be written any more."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        except OSError:
            return False
        view = view[written:]
    return True
