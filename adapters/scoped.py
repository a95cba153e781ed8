"""--lock-scope name on one host: the home lock shared, then the name's own lock exclusive.

Applies of different names run side by side (each shares the home lock); the same
name still excludes itself. `forget`, and an operator's `flock state/lock`, take
the home lock exclusively, and so still exclude every apply, whatever its scope.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.lock import FcntlLock


class NameLock:
    """Two flocks taken in order, released in reverse; the name's holds the token."""

    def __init__(self, home: FcntlLock, name: FcntlLock) -> None:
        self.home = home
        self.name = name

    def acquire(self, wait: float = 0.0) -> int | None:
        deadline = time.monotonic() + wait
        self.home.acquire(wait)
        try:
            return self.name.acquire(max(0.0, deadline - time.monotonic()))
        except BaseException:
            self.home.release()
            raise

    def lost(self) -> str | None:
        return None

    def fds(self) -> tuple[int, ...]:
        """Both descriptors go to the command, as the home lock alone does in `home` scope."""
        return self.home.fds() + self.name.fds()

    def release(self) -> None:
        try:
            self.name.release()
        finally:
            self.home.release()
