"""The log as a metric: attempts grouped into runs, runs into aggregates per command or name.

Pure and streaming: lines go in one at a time; memory grows with the number of
runs still open (attempts seen, last one followed by a wait) and of distinct
keys, never with the number of lines. Durations are kept in a log-bucketed
histogram, so quantiles are exact to within 1%.
"""

from __future__ import annotations

import math
from functools import lru_cache

BUCKET_RATIO = 1.02
"""Each histogram bucket is 2% wider than the one before: quantiles within 1%."""
_LOG_RATIO = math.log(BUCKET_RATIO)


class Histogram:
    """Counts of durations (milliseconds) in buckets of geometric width."""

    __slots__ = ("buckets", "count", "maximum", "total")

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.total = 0.0
        self.maximum = 0.0

    def add(self, value: float) -> None:
        index = _bucket(value)
        self.buckets[index] = self.buckets.get(index, 0) + 1
        self.count += 1
        self.total += value
        self.maximum = max(self.maximum, value)

    def merge(self, other: Histogram) -> None:
        for index, count in other.buckets.items():
            self.buckets[index] = self.buckets.get(index, 0) + count
        self.count += other.count
        self.total += other.total
        self.maximum = max(self.maximum, other.maximum)

    def quantile(self, q: float) -> float:
        """The value below which a fraction `q` of the durations lie (0 when empty)."""
        if not self.count:
            return 0.0
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= rank:
                middle = BUCKET_RATIO ** (index - 0.5) if index else 1.0
                return min(middle, self.maximum)
        return self.maximum


@lru_cache(maxsize=1 << 16)
def _bucket(value: float) -> int:
    """The histogram bucket of `value` (remembered: durations repeat a lot)."""
    return math.ceil(math.log(value) / _LOG_RATIO) if value > 1 else 0


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


class Aggregate:
    """Everything `stats` says of one command or name."""

    __slots__ = (
        "attempts",
        "attempts_max",
        "durations",
        "last_run",
        "last_success",
        "outcomes",
        "retried",
        "runs",
    )

    def __init__(self) -> None:
        self.runs = 0
        self.outcomes = {"success": 0, "failure": 0, "timeout": 0, "signal": 0}
        self.attempts = 0
        self.attempts_max = 0
        self.retried = 0
        self.durations = Histogram()
        self.last_run: float | None = None
        self.last_success: float | None = None

    def add(self, rc: int, attempts: int, first: float, end: float) -> None:
        """Count one run: its last rc, attempts, and start and end (epoch seconds)."""
        outcome = outcome_of(rc)
        self.runs += 1
        self.outcomes[outcome] += 1
        self.attempts += attempts
        if attempts > 1:
            self.retried += 1
            self.attempts_max = max(self.attempts_max, attempts)
        elif not self.attempts_max:
            self.attempts_max = 1
        self.durations.add((end - first) * 1000 if end > first else 0.0)
        if self.last_run is None or first > self.last_run:
            self.last_run = first
        if outcome == "success" and (self.last_success is None or end > self.last_success):
            self.last_success = end

    def merge(self, other: Aggregate) -> None:
        self.runs += other.runs
        for outcome, count in other.outcomes.items():
            self.outcomes[outcome] += count
        self.attempts += other.attempts
        self.attempts_max = max(self.attempts_max, other.attempts_max)
        self.retried += other.retried
        self.durations.merge(other.durations)
        for field in ("last_run", "last_success"):
            mine, theirs = getattr(self, field), getattr(other, field)
            if theirs is not None and (mine is None or theirs > mine):
                setattr(self, field, theirs)

    @property
    def failures(self) -> int:
        return self.runs - self.outcomes["success"]


class Summary:
    """Aggregates by key, plus the runs not yet known to be whole.

    `since` (epoch seconds, or None) keeps only runs whose first attempt started
    at or after it.
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
        run = self.open.get(run_id)
        if run is None:
            if attempt == 1 and not waits:
                if self.since is None or started >= self.since:
                    self._aggregate(key).add(rc, 1, started, started + duration_ms / 1000)
                return
            run = self.open[run_id] = Run(key, started, attempt)
        run.add(started, attempt, rc, duration_ms, waits)
        if run.whole:
            del self.open[run_id]
            self._count(run)

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
                self._count(mine)

    def finish(self) -> dict[str, Aggregate]:
        """Count the runs never seen to end (a killed runner) as they stand; return all."""
        for run in self.open.values():
            self._count(run)
        self.open = {}
        return self.by_key

    def _count(self, run: Run) -> None:
        if self.since is None or run.first >= self.since:
            self._aggregate(run.key).add(run.last_rc, run.attempts, run.first, run.last_end)

    def _aggregate(self, key: str) -> Aggregate:
        aggregate = self.by_key.get(key)
        if aggregate is None:
            aggregate = self.by_key[key] = Aggregate()
        return aggregate
