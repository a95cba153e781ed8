"""--replay-stdin: piped stdin kept in a private file, so that every attempt reads it all."""

from __future__ import annotations

import os
import select
import stat

from adapters.signals import ending
from domain.errors import Interrupted, StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.signals import SignalWatch

CHUNK = 1 << 16


def keep_stdin(watch: SignalWatch) -> None:
    """Copy stdin, to its end, into an unlinked temporary file (0600, on disk) and read from that.

    A regular file needs no copy: each attempt re-reads it from its start. A signal
    that ends the run ends the copy too. Memory stays at one chunk.
    """
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode):
        return
    import tempfile  # noqa: PLC0415 - only with --replay-stdin

    try:
        with tempfile.TemporaryFile(prefix="runner-stdin-") as keep:
            fd = keep.fileno()
            while True:
                ready, _, _ = select.select([0, watch.fileno()], [], [])
                signum = ending(watch.pending())
                if signum is not None:
                    raise Interrupted(signum)
                if 0 in ready:
                    data = os.read(0, CHUNK)
                    if not data:
                        break
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
            os.lseek(fd, 0, os.SEEK_SET)
            os.dup2(fd, 0)
    except OSError as exc:
        raise StateError(f"--replay-stdin: cannot keep stdin: {exc.strerror or exc}") from None
