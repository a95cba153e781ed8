"""The log as a metric: attempts grouped into runs, runs into aggregates per command or name.

Pure and streaming: lines go in one at a time; memory grows with the number of
runs still open (attempts seen, last one followed by a wait) and of distinct
keys, never with the number of lines. A Summary has a plain state, so that a
checkpoint can carry it from one `stats` to the next.
"""

from __future__ import annotations

from bisect import insort

from domain.histogram import Histogram

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

RECENT = 20
"""How many of the latest runs each aggregate remembers, for the history strip."""
OUTCOMES = ("success", "failure", "timeout", "signal")


def outcome_of(rc: int) -> str:
    """success, timeout (124), signal (128+N) or failure: how a run ended."""
    common = _COMMON.get(rc)
    if common is not None:
        return common
    if rc == 0:
        return "success"
    if rc == 124:
        return "timeout"
    if 128 < rc <= 192:
        return "signal"
    return "failure"


_COMMON = {0: "success", 1: "failure", 124: "timeout", 137: "signal", 143: "signal"}


class Run:
    """The attempts of one run_id seen so far. Times are epoch seconds."""

    __slots__ = ("attempts", "first", "first_attempt", "key", "last_end", "last_rc", "open")

    def __init__(self, key: str, started: float, attempt: int) -> None:
        self.key = key
        self.first = started
        self.first_attempt = attempt
        self.attempts = 0
        self.last_end = started
        self.last_rc = 0
        self.open = True

    def add(self, started: float, attempt: int, rc: int, duration_ms: int, waits: bool) -> None:
        if started < self.first:
            self.first, self.first_attempt = started, attempt
        end = started + duration_ms / 1000
        if end >= self.last_end:
            self.last_end, self.last_rc, self.open = end, rc, waits
        self.attempts += 1

    def absorb(self, other: Run) -> None:
        """Join the part of the same run seen elsewhere in the log."""
        if other.first < self.first:
            self.first, self.first_attempt = other.first, other.first_attempt
        if other.last_end >= self.last_end:
            self.last_end, self.last_rc, self.open = other.last_end, other.last_rc, other.open
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
        ]

    @classmethod
    def from_state(cls, state: list[Any]) -> Run:
        key, first, first_attempt, attempts, last_end, last_rc, still_open = state
        run = cls(str(key), float(first), int(first_attempt))
        run.attempts, run.last_end = int(attempts), float(last_end)
        run.last_rc, run.open = int(last_rc), bool(still_open)
        return run


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
        self.recent: list[tuple[float, str]] = []

    def attempt(self, rc: int, duration_ms: int) -> None:
        """Count one attempt (whatever becomes of its run)."""
        self.attempt_outcomes[outcome_of(rc)] += 1
        self.attempt_durations.add(duration_ms)

    def add(self, rc: int, attempts: int, first: float, end: float) -> None:
        """Count one run: its last rc, attempts, and start and end (epoch seconds)."""
        outcome = outcome_of(rc)
        self.runs += 1
        self.outcomes[outcome] += 1
        self.codes[rc] = self.codes.get(rc, 0) + 1
        self.attempts += attempts
        if attempts > 1:
            self.retried += 1
            self.attempts_max = max(self.attempts_max, attempts)
        elif not self.attempts_max:
            self.attempts_max = 1
        duration = (end - first) * 1000 if end > first else 0.0
        self.durations.add(duration)
        if self.last_run is None or first >= self.last_run:
            self.last_run, self.last_rc, self.last_duration = first, rc, duration / 1000
        if outcome == "success":
            if self.last_success is None or end > self.last_success:
                self.last_success = end
        elif self.last_failure is None or end > self.last_failure:
            self.last_failure = end
        if len(self.recent) < RECENT or first >= self.recent[0][0]:
            insort(self.recent, (first, outcome))
            del self.recent[:-RECENT]

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
        for field in ("last_success", "last_failure"):
            mine, theirs = getattr(self, field), getattr(other, field)
            if theirs is not None and (mine is None or theirs > mine):
                setattr(self, field, theirs)
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
        found["codes"] = sorted(self.codes.items())
        found["durations"] = self.durations.state()
        found["attempt_durations"] = self.attempt_durations.state()
        return found

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Aggregate:
        made = cls()
        for name in _PLAIN:
            setattr(made, name, state[name])
        made.outcomes = {o: int(made.outcomes[o]) for o in OUTCOMES}
        made.attempt_outcomes = {o: int(made.attempt_outcomes[o]) for o in OUTCOMES}
        made.recent = [(float(at), str(outcome)) for at, outcome in made.recent]
        made.codes = {int(rc): int(n) for rc, n in state["codes"]}
        made.durations = Histogram.from_state(state["durations"])
        made.attempt_durations = Histogram.from_state(state["attempt_durations"])
        return made


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
    "recent",
)


class Summary:
    """Aggregates by key, plus the runs not yet known to be whole.

    `since` (epoch seconds, or None) keeps only runs whose first attempt started
    at or after it, and attempts that started at or after it. The aggregates count
    whole runs only; `finished()` adds the open ones as they stand.
    """

    def __init__(self, since: float | None = None) -> None:
        self.since = since
        self.open: dict[str, Run] = {}
        self.by_key: dict[str, Aggregate] = {}

    def add(
        self,
        run_id: str,
        key: str,
        started: float,
        attempt: int,
        rc: int,
        duration_ms: int,
        waits: bool,
    ) -> None:
        counted = self.since is None or started >= self.since
        if counted:
            self._aggregate(key).attempt(rc, duration_ms)
        run = self.open.get(run_id)
        if run is None:
            if attempt == 1 and not waits:
                if counted:
                    self._aggregate(key).add(rc, 1, started, started + duration_ms / 1000)
                return
            run = self.open[run_id] = Run(key, started, attempt)
        run.add(started, attempt, rc, duration_ms, waits)
        if run.whole:
            del self.open[run_id]
            self._count(run, self.by_key)

    def merge(self, other: Summary) -> None:
        """Fold in a summary of a later part of the same log."""
        for key, aggregate in other.by_key.items():
            self._aggregate(key).merge(aggregate)
        for run_id, run in other.open.items():
            mine = self.open.get(run_id)
            if mine is None:
                self.open[run_id] = run
                continue
            mine.absorb(run)
            if mine.whole:
                del self.open[run_id]
                self._count(mine, self.by_key)

    def finished(self) -> dict[str, Aggregate]:
        """Copies of the aggregates with the runs never seen to end (a killed runner) counted
        as they stand; the summary itself goes on unchanged."""
        groups = {key: aggregate.copy() for key, aggregate in self.by_key.items()}
        for run in self.open.values():
            self._count(run, groups)
        return groups

    def in_progress(self) -> dict[str, int]:
        """How many runs of each key are open: waiting for a retry, or never seen to end."""
        counts: dict[str, int] = {}
        for run in self.open.values():
            counts[run.key] = counts.get(run.key, 0) + 1
        return counts

    def drop_open_before(self, epoch: float) -> None:
        """Forget open runs whose last attempt ended before `epoch`: their runner is gone."""
        self.open = {rid: run for rid, run in self.open.items() if run.last_end >= epoch}

    def state(self) -> dict[str, object]:
        return {
            "keys": {key: aggregate.state() for key, aggregate in self.by_key.items()},
            "open": {run_id: run.state() for run_id, run in self.open.items()},
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Summary:
        made = cls()
        keys: dict[str, dict[str, Any]] = state["keys"]
        runs: dict[str, list[Any]] = state["open"]
        made.by_key = {key: Aggregate.from_state(value) for key, value in keys.items()}
        made.open = {run_id: Run.from_state(value) for run_id, value in runs.items()}
        return made

    def _count(self, run: Run, groups: dict[str, Aggregate]) -> None:
        if self.since is None or run.first >= self.since:
            aggregate = groups.get(run.key)
            if aggregate is None:
                aggregate = groups[run.key] = Aggregate()
            aggregate.add(run.last_rc, run.attempts, run.first, run.last_end)

    def _aggregate(self, key: str) -> Aggregate:
        aggregate = self.by_key.get(key)
        if aggregate is None:
            aggregate = self.by_key[key] = Aggregate()
        return aggregate
