"""What `stats` says of one command or name: its runs, its attempts, its latest outcomes."""

from __future__ import annotations

from domain.buckets import insort
from domain.histogram import Histogram
from domain.outcomes import OUTCOMES, outcome_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

RECENT = 20
"""How many of the latest runs each aggregate remembers, for the history strip."""


class Aggregate:
    """Everything `stats` says of one command or name: its runs, and its attempts.

    Times are epoch seconds; `last_*` describe the run that started last.
    """

    __slots__ = (
        "attempt_durations",
        "attempt_outcomes",
        "attempts",
        "attempts_max",
        "codes",
        "durations",
        "last_duration",
        "last_failure",
        "last_failure_rc",
        "last_rc",
        "last_run",
        "last_success",
        "outcomes",
        "recent",
        "retried",
        "runs",
    )

    def __init__(self) -> None:
        self.runs = 0
        self.outcomes = dict.fromkeys(OUTCOMES, 0)
        self.codes: dict[int, int] = {}
        self.attempts = 0
        self.attempts_max = 0
        self.retried = 0
        self.durations = Histogram()
        self.attempt_outcomes = dict.fromkeys(OUTCOMES, 0)
        self.attempt_durations = Histogram()
        self.last_run: float | None = None
        self.last_rc: int | None = None
        self.last_duration: float | None = None
        self.last_success: float | None = None
        self.last_failure: float | None = None
        self.last_failure_rc: int | None = None
        self.recent: list[tuple[float, str]] = []

    def add(
        self, rc: int, attempts: int, first: float, end: float, outcome: str | None = None
    ) -> None:
        """Count one run: its last rc (and outcome, as the log says it, else read from the
        rc), attempts, and start and end (epoch seconds)."""
        outcome = outcome or outcome_of(rc)
        self.runs += 1
        self.outcomes[outcome] += 1
        self.codes[rc] = self.codes.get(rc, 0) + 1
        self.attempts += attempts
        if attempts > 1:
            self.retried += 1
            self.attempts_max = max(self.attempts_max, attempts)
        elif not self.attempts_max:
            self.attempts_max = 1
        duration = round((end - first) * 1000) if end > first else 0
        self.durations.add(duration)
        if self.last_run is None or first >= self.last_run:
            self.last_run, self.last_rc, self.last_duration = first, rc, duration / 1000
        if outcome == "success":
            if self.last_success is None or end > self.last_success:
                self.last_success = end
        elif self.last_failure is None or end > self.last_failure:
            self.last_failure, self.last_failure_rc = end, rc
        self._remember(first, outcome)

    def _remember(self, first: float, outcome: str) -> None:
        """Keep the run in `recent` if it is among the latest: up to twice RECENT are kept,
        so that the list is cut once in RECENT runs, not every time."""
        recent = self.recent
        if not recent or first >= recent[-1][0]:
            recent.append((first, outcome))
        elif len(recent) < RECENT or first >= recent[-RECENT][0]:
            insort(recent, (first, outcome))
        else:
            return
        if len(recent) >= 2 * RECENT:
            del recent[:-RECENT]

    def merge(self, other: Aggregate) -> None:
        self.runs += other.runs
        for outcome in OUTCOMES:
            self.outcomes[outcome] += other.outcomes[outcome]
            self.attempt_outcomes[outcome] += other.attempt_outcomes[outcome]
        for rc, count in other.codes.items():
            self.codes[rc] = self.codes.get(rc, 0) + count
        self.attempts += other.attempts
        self.attempts_max = max(self.attempts_max, other.attempts_max)
        self.retried += other.retried
        self.durations.merge(other.durations)
        self.attempt_durations.merge(other.attempt_durations)
        if other.last_run is not None and (
            self.last_run is None or other.last_run >= self.last_run
        ):
            self.last_run, self.last_rc = other.last_run, other.last_rc
            self.last_duration = other.last_duration
        if other.last_success is not None and (
            self.last_success is None or other.last_success > self.last_success
        ):
            self.last_success = other.last_success
        if other.last_failure is not None and (
            self.last_failure is None or other.last_failure > self.last_failure
        ):
            self.last_failure, self.last_failure_rc = other.last_failure, other.last_failure_rc
        self.recent = sorted(self.recent + other.recent)[-RECENT:]

    def copy(self) -> Aggregate:
        made = Aggregate()
        made.merge(self)
        return made

    @property
    def failures(self) -> int:
        return self.runs - self.outcomes["success"]

    def state(self) -> dict[str, object]:
        """A plain form for the checkpoint (see `from_state`)."""
        found: dict[str, object] = {name: getattr(self, name) for name in _PLAIN}
        found["recent"] = self.recent[-RECENT:]
        found["codes"] = sorted(self.codes.items())
        found["durations"] = self.durations.state()
        found["attempt_durations"] = self.attempt_durations.state()
        return found

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Aggregate:
        """The aggregate `state` describes; ValueError or TypeError if it does not hold
        together (nothing that could fail later, when it is counted into or shown)."""
        made = cls()
        for name in _PLAIN:
            setattr(made, name, state[name])
        if not all(_count(getattr(made, name)) for name in _COUNTS):
            raise ValueError("counts")
        if not all(is_moment(getattr(made, name)) for name in _MOMENTS):
            raise ValueError("times")
        if not all(
            getattr(made, name) is None or type(getattr(made, name)) is int for name in _RCS
        ):
            raise ValueError("exit codes")
        made.outcomes = {o: int(made.outcomes[o]) for o in OUTCOMES}
        made.attempt_outcomes = {o: int(made.attempt_outcomes[o]) for o in OUTCOMES}
        made.recent = [(float(at), str(outcome)) for at, outcome in made.recent]
        if not all(outcome in OUTCOMES for _, outcome in made.recent):
            raise ValueError("recent runs")  # a checkpoint writes each as its place among them
        made.codes = {int(rc): int(n) for rc, n in state["codes"]}
        made.durations = Histogram.from_state(state["durations"])
        made.attempt_durations = Histogram.from_state(state["attempt_durations"])
        return made


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def is_moment(value: object) -> bool:
    """None, or a number of seconds a log can hold (not NaN, not infinite)."""
    return value is None or (type(value) in (int, float) and -1e15 < value < 1e15)  # type: ignore[operator]


_COUNTS = ("runs", "attempts", "attempts_max", "retried")
_MOMENTS = ("last_run", "last_duration", "last_success", "last_failure")
_RCS = ("last_rc", "last_failure_rc")


_PLAIN = (
    "runs",
    "outcomes",
    "attempts",
    "attempts_max",
    "retried",
    "attempt_outcomes",
    "last_run",
    "last_rc",
    "last_duration",
    "last_success",
    "last_failure",
    "last_failure_rc",
    "recent",
)
