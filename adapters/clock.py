"""The system clock, whose sleep ends early when the runner is signalled."""

from __future__ import annotations

import os
import time

from adapters.signals import ending

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.signals import SignalWatch


class SystemClock:
    def __init__(self, watch: SignalWatch) -> None:
        self.watch = watch

    def wall(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> int | None:
        """Wait `seconds`; return the first signal that ends the run, if one arrives meanwhile.

        With no command running, a signal that would only be passed on reaches nobody.
        """
        end = time.monotonic() + seconds
        while True:
            remaining = end - time.monotonic()
            signum = ending(self.watch.wait(max(0.0, remaining)))
            if signum is not None:
                return signum
            if remaining <= 0:
                return None


def random_fraction() -> float:
    """A uniform number in [0, 1) from the OS's random source (53 bits, as random.random)."""
    return (int.from_bytes(os.urandom(7), "big") >> 3) / 9007199254740992
