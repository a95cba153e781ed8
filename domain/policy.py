"""How long attempts may run and how long to wait between them."""

from __future__ import annotations

MAX_DELAY = 365 * 24 * 3600.0
"""No single wait is longer than a year (seconds): huge attempt numbers stay finite."""


class Policy:
    """Limits of one invocation. Durations are seconds; 0 means no limit."""

    __slots__ = ("backoff", "kill_after", "retries", "timeout")

    def __init__(
        self,
        timeout: float = 0.0,
        kill_after: float = 10.0,
        retries: int = 0,
        backoff: float = 1.0,
    ) -> None:
        self.timeout = timeout
        self.kill_after = kill_after
        self.retries = retries
        self.backoff = backoff

    @property
    def max_attempts(self) -> int:
        return self.retries + 1


def backoff_delay(backoff: float, attempt: int) -> float:
    """Seconds to wait after failed attempt `attempt` (from 1): backoff * 2**(attempt-1)."""
    if backoff <= 0:
        return 0.0
    try:
        return min(backoff * 2.0 ** (attempt - 1), MAX_DELAY)
    except OverflowError:
        return MAX_DELAY
