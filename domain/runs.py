"""One run of a command as the log shows it so far: its attempts, first to last."""

from __future__ import annotations

from domain.outcomes import OUTCOMES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class Run:
    """The attempts of one run_id seen so far. Times are epoch seconds."""

    __slots__ = (
        "attempts",
        "first",
        "first_attempt",
        "key",
        "last_end",
        "last_outcome",
        "last_rc",
        "open",
    )

    def __init__(self, key: str, started: float, attempt: int) -> None:
        self.key = key
        self.first = started
        self.first_attempt = attempt
        self.attempts = 0
        self.last_end = started
        self.last_rc = 0
        self.last_outcome: str | None = None
        self.open = True

    def add(
        self,
        started: float,
        attempt: int,
        rc: int,
        duration_ms: int,
        waits: bool,
        outcome: str | None = None,
    ) -> bool:
        """Add an attempt; whether the run is now whole (see `whole`)."""
        if started < self.first:
            self.first, self.first_attempt = started, attempt
        end = started + duration_ms / 1000
        if end >= self.last_end:
            self.last_end, self.last_rc, self.open = end, rc, waits
            self.last_outcome = outcome
        self.attempts += 1
        return self.first_attempt == 1 and not self.open

    def absorb(self, other: Run) -> None:
        """Join the part of the same run seen elsewhere in the log."""
        if other.first < self.first:
            self.first, self.first_attempt = other.first, other.first_attempt
        if other.last_end >= self.last_end:
            self.last_end, self.last_rc, self.open = other.last_end, other.last_rc, other.open
            self.last_outcome = other.last_outcome
        self.attempts += other.attempts

    @property
    def whole(self) -> bool:
        """Seen from its first attempt to one that was not followed by a wait."""
        return self.first_attempt == 1 and not self.open

    def state(self) -> list[object]:
        return [
            self.key,
            self.first,
            self.first_attempt,
            self.attempts,
            self.last_end,
            self.last_rc,
            self.open,
            self.last_outcome,
        ]

    @classmethod
    def from_state(cls, state: list[Any]) -> Run:
        key, first, first_attempt, attempts, last_end, last_rc, still_open = state[:7]
        run = cls(str(key), float(first), int(first_attempt))
        run.attempts, run.last_end = int(attempts), float(last_end)
        run.last_rc, run.open = int(last_rc), bool(still_open)
        outcome = state[7] if len(state) > 7 else None
        run.last_outcome = outcome if outcome in OUTCOMES else None
        return run
