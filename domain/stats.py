"""The log as a metric: attempts grouped into runs, runs into aggregates per command or name.

Pure and streaming: lines go in one at a time; memory grows with the runs still open
(their last attempt was followed by a wait) and the distinct keys, never with the lines.
A run is the attempts that share a run id; it ends the way its last attempt did.
"""

from __future__ import annotations

from collections import Counter
from heapq import nlargest
from itertools import compress, count, repeat
from operator import add, not_, truediv

from domain.histogram import Histogram

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

RECENT = 20
"""How many of the latest runs each aggregate remembers, for the history strip."""
OTHER = "(other)"
"""The key of the commands or names no longer kept apart, counted together."""
OPEN_FOR = 7 * 86400.0
"""Seconds of log time after its last attempt that a run never seen to end stays open."""
OUTCOMES = ("success", "failure", "timeout", "signal")
"""How a run or an attempt ended."""


def outcome_of(rc: int) -> str:
    """How a run ended, read from its rc alone (lines written before `timed_out` and `signal`
    were logged): success, timeout (124), signal (129 to 192) or failure."""
    if rc == 0:
        return "success"
    if rc == 124:
        return "timeout"
    return "signal" if 128 < rc <= 192 else "failure"


BY_RC = [outcome_of(rc) for rc in range(256)]
"""`outcome_of` every rc a log line may hold."""


class Aggregate:
    """What `stats` says of one command or name. Times are epoch seconds, durations
    milliseconds; `last_*` describe the run that started last. `busy` counts runs refused
    by a busy lock, which are not among `runs`."""

    __slots__ = (
        "attempt_durations", "attempt_outcomes", "attempts", "attempts_max", "busy", "codes",
        "durations", "last_duration", "last_failure", "last_failure_rc", "last_rc", "last_run",
        "last_success", "outcomes", "recent", "retried", "runs",
    )  # fmt: skip

    def __init__(self) -> None:
        self.runs = self.attempts = self.attempts_max = self.retried = self.busy = 0
        self.outcomes = dict.fromkeys(OUTCOMES, 0)
        self.attempt_outcomes = dict.fromkeys(OUTCOMES, 0)
        self.codes: dict[int, int] = {}
        self.durations = Histogram()
        self.attempt_durations = Histogram()
        self.last_run: float | None = None
        self.last_rc: int | None = None
        self.last_duration: float | None = None
        self.last_success: float | None = None
        self.last_failure: float | None = None
        self.last_failure_rc: int | None = None
        self.recent: list[tuple[float, str]] = []

    @property
    def failures(self) -> int:
        """Runs that did not succeed: failures, timeouts and signals."""
        return self.runs - self.outcomes["success"]

    def run(self, rc: int, outcome: str, attempts: int, first: float, end: float) -> None:
        """Count one run that ended: its last rc and outcome, attempts, start and end."""
        self.runs += 1
        self.outcomes[outcome] += 1
        codes = self.codes
        codes[rc] = codes[rc] + 1 if rc in codes else 1
        self.attempts += attempts
        if attempts > 1:
            self.retried += 1
            self.attempts_max = max(self.attempts_max, attempts)
        elif not self.attempts_max:
            self.attempts_max = 1
        ms = round((end - first) * 1000) if end > first else 0
        self.durations.pending.append(ms)
        last = self.last_run
        if last is None or first >= last:
            self.last_run, self.last_rc, self.last_duration = first, rc, ms / 1000
        if outcome == "success":
            if self.last_success is None or end > self.last_success:
                self.last_success = end
        elif self.last_failure is None or end >= self.last_failure:
            self.last_failure, self.last_failure_rc = end, rc
        recent = self.recent
        recent.append((first, outcome))
        if len(recent) >= 2 * RECENT:  # cut once in RECENT runs, not at every one
            self.recent = sorted(recent)[-RECENT:]

    def singles(self, rows: list[Any]) -> None:
        """Count runs of one attempt together, as `run` counts each: `rows` holds the start,
        milliseconds and rc of each in turn, its outcome its rc's. Counted in C-level passes
        (a Counter, slices, max), which make a first read of a million lines a second
        shorter than a call for each run."""
        firsts, mss, rcs = rows[0::3], rows[1::3], rows[2::3]
        self.runs += len(firsts)
        self.attempts += len(firsts)
        self.attempts_max = self.attempts_max or 1
        for rc, n in Counter(rcs).items():
            self.codes[rc] = self.codes.get(rc, 0) + n
            self.outcomes[BY_RC[rc]] += n
            self.attempt_outcomes[BY_RC[rc]] += n
        self.durations.pending += mss
        self.attempt_durations.pending += mss
        first, at = max(zip(firsts, count()))
        if self.last_run is None or first >= self.last_run:
            self.last_run, self.last_rc, self.last_duration = first, rcs[at], mss[at] / 1000
        ends = list(map(add, firsts, map(truediv, mss, repeat(1000))))
        ok = max(compress(ends, map(not_, rcs)), default=None)
        if ok is not None and (self.last_success is None or ok > self.last_success):
            self.last_success = ok
        failed = max(compress(zip(ends, count(), rcs), rcs), default=None)  # the last if tied
        if failed is not None and (self.last_failure is None or failed[0] >= self.last_failure):
            self.last_failure, _, self.last_failure_rc = failed
        latest = nlargest(RECENT, zip(firsts, map(BY_RC.__getitem__, rcs), strict=True))
        self.recent = sorted(self.recent + latest)[-RECENT:]

    def merge(self, other: Aggregate) -> None:
        for name in ("runs", "attempts", "retried", "busy"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.attempts_max = max(self.attempts_max, other.attempts_max)
        for outcome in OUTCOMES:
            self.outcomes[outcome] += other.outcomes[outcome]
            self.attempt_outcomes[outcome] += other.attempt_outcomes[outcome]
        for rc, n in other.codes.items():
            self.codes[rc] = self.codes.get(rc, 0) + n
        self.durations.merge(other.durations)
        self.attempt_durations.merge(other.attempt_durations)
        if other.last_run is not None and (
            self.last_run is None or other.last_run >= self.last_run
        ):
            self.last_run, self.last_rc = other.last_run, other.last_rc
            self.last_duration = other.last_duration
        if other.last_success is not None and (self.last_success or -1e300) < other.last_success:
            self.last_success = other.last_success
        if other.last_failure is not None and (self.last_failure or -1e300) < other.last_failure:
            self.last_failure, self.last_failure_rc = other.last_failure, other.last_failure_rc
        self.recent = sorted(self.recent + other.recent)[-RECENT:]

    def history(self) -> list[str]:
        """The outcomes of the latest runs, oldest first."""
        return [outcome for _, outcome in sorted(self.recent)[-RECENT:]]


class Run:
    """The attempts of one run seen so far: `whole` once its first attempt and one not
    followed by a wait are seen."""

    __slots__ = ("attempts", "first", "first_attempt", "key", "last_end", "outcome", "rc", "waits")

    def __init__(self, key: str, first: float, first_attempt: int) -> None:
        self.key, self.first, self.first_attempt = key, first, first_attempt
        self.attempts = 0
        self.last_end = first
        self.rc, self.outcome, self.waits = 0, "success", True

    def add(
        self, first: float, attempt: int, end: float, rc: int, outcome: str, waits: bool
    ) -> None:
        if first < self.first:
            self.first, self.first_attempt = first, attempt
        if end >= self.last_end:
            self.last_end, self.rc, self.outcome, self.waits = end, rc, outcome, waits

    def absorb(self, other: Run) -> None:
        """Join the part of the same run read elsewhere (a later piece of the log)."""
        self.add(
            other.first, other.first_attempt, other.last_end, other.rc, other.outcome, other.waits
        )
        self.attempts += other.attempts

    @property
    def whole(self) -> bool:
        return self.first_attempt == 1 and not self.waits


class Summary:
    """Aggregates by key, the runs still open, and how many lines were read and malformed.

    `since` (epoch seconds, or None) keeps only the runs whose first attempt started at or
    after it, and the attempts that did: a window. `newest` is the latest start seen, the
    log's own clock."""

    def __init__(self, since: float | None = None) -> None:
        self.since = since
        self.by_key: dict[str, Aggregate] = {}
        self.open: dict[str, Run] = {}
        self.newest = 0.0
        self.lines = 0
        self.malformed = 0
        self.bound: tuple[Callable[[str], str], list[str], int] | None = None
        """`fold`'s arguments, to keep the keys apart bounded while a long read goes on."""
        self.waiting: dict[str, list[Any]] = {}
        """Runs of one attempt not counted yet, by key (see Aggregate.singles): `settle`
        counts them, and every reader of the aggregates settles first."""

    def aggregate(self, key: str) -> Aggregate:
        found = self.by_key.get(key)
        if found is None:
            found = self.by_key[key] = Aggregate()
        return found

    def add(
        self, run_id: str, key: str, started: float, attempt: int, rc: int, ms: int,
        outcome: str, waits: bool, tried: bool = True,
    ) -> None:  # fmt: skip
        """One line: an attempt (or, not `tried`, a run's end with no attempt: a signal
        during its backoff wait); `waits` when another attempt was to follow."""
        if started > self.newest:  # noqa: PLR1730 - max() costs more, once a line
            self.newest = started
        counted = self.since is None or started >= self.since
        end = started + ms / 1000
        run = self.open.get(run_id)
        if run is None and attempt == 1 and tried and not waits:  # one attempt: most runs
            if counted:
                aggregate = self.aggregate(key)
                aggregate.attempt_outcomes[outcome] += 1
                aggregate.attempt_durations.pending.append(ms)
                aggregate.run(rc, outcome, 1, started, end)
            return
        if counted and tried:
            aggregate = self.aggregate(key)
            aggregate.attempt_outcomes[outcome] += 1
            aggregate.attempt_durations.pending.append(ms)
        if run is None:
            run = self.open[run_id] = Run(key, started, attempt)
        run.add(started, attempt, end, rc, outcome, waits)
        run.attempts += tried
        if run.whole:
            del self.open[run_id]
            self._count(run, self.by_key)

    def add_one(self, run_id: str, key: str, started: float, rc: int, ms: int) -> None:
        """`add` of a run's first attempt, with no wait after it and the outcome its rc's: a
        run of one attempt (most runs are), counted with the others at `settle`."""
        if started > self.newest:  # noqa: PLR1730 - max() costs more, once a line
            self.newest = started
        if run_id in self.open or (self.since is not None and started < self.since):
            self.add(run_id, key, started, 1, rc, ms, BY_RC[rc], False)
            return
        rows = self.waiting.get(key)
        if rows is None:
            rows = self.waiting[key] = []
        rows += started, ms, rc

    def settle(self) -> None:
        """Count what waits: runs of one attempt, durations (see Histogram.settle); and fold
        the keys (`bound`) when they are twice as many as it allows."""
        waiting, self.waiting = self.waiting, {}
        for key, rows in waiting.items():
            self.aggregate(key).singles(rows)
        if self.bound is not None and len(self.by_key) > 2 * self.bound[2]:
            self.fold(*self.bound)
        for aggregate in self.by_key.values():
            aggregate.durations.settle()
            aggregate.attempt_durations.settle()

    def add_busy(self, key: str, started: float) -> None:
        """A run refused by a busy lock: no attempt, no outcome, counted as busy."""
        self.newest = max(self.newest, started)
        if self.since is None or started >= self.since:
            self.aggregate(key).busy += 1

    def merge(self, later: Summary) -> None:
        """Fold in the summary of a later piece of the same log."""
        self.settle()
        later.settle()
        self.newest = max(self.newest, later.newest)
        self.lines += later.lines
        self.malformed += later.malformed
        for key, aggregate in later.by_key.items():
            self.aggregate(key).merge(aggregate)
        for run_id, run in later.open.items():
            mine = self.open.get(run_id)
            if mine is None:
                self.open[run_id] = run
                continue
            mine.absorb(run)
            if mine.whole:
                del self.open[run_id]
                self._count(mine, self.by_key)

    def finished(self) -> dict[str, Aggregate]:
        """Copies of the aggregates with the runs never seen to end counted as they stand;
        in a window, not a run whose first attempt was not seen (it began before)."""
        self.settle()
        groups: dict[str, Aggregate] = {}
        for key, aggregate in self.by_key.items():
            groups[key] = Aggregate()
            groups[key].merge(aggregate)
        for run in self.open.values():
            if run.first_attempt == 1 or self.since is None:
                self._count(run, groups)
        return groups

    def in_progress(self) -> dict[str, int]:
        """How many runs of each key are open: waiting for a retry, or never seen to end."""
        counts: dict[str, int] = {}
        for run in self.open.values():
            counts[run.key] = counts.get(run.key, 0) + 1
        return counts

    def forget_open(self, most: int, now: float) -> None:
        """Drop the open runs whose last attempt ended OPEN_FOR before the newest line, or
        now if that is earlier (a line from a host whose clock was years ahead): their
        runner is gone. Keep the `most` that ended last."""
        since = min(self.newest, now) - OPEN_FOR
        runs = sorted((run.last_end, run_id) for run_id, run in self.open.items())
        self.open = {rid: self.open[rid] for end, rid in runs[-most:] if end >= since}

    def fold(self, label_of: Callable[[str], str], keep: Iterable[str], most: int) -> None:
        """Keep at most `most` keys apart. Keys that share a label are joined first (it
        changes no exported series); then the labels of `keep` (those exported) stay, then
        the busiest; the rest join OTHER, whose exported sum so never falls."""
        for key, rows in self.waiting.items():
            self.aggregate(key).singles(rows)
        self.waiting = {}
        if len(self.by_key) - (OTHER in self.by_key) < most:
            return
        labels: dict[str, list[str]] = {}
        for key in self.by_key:
            labels.setdefault(OTHER if key == OTHER else label_of(key), []).append(key)
        joined: dict[str, Aggregate] = {}
        for label, keys in labels.items():
            if keys == [label]:
                joined[label] = self.by_key[label]  # alone under its own label: as it is
                continue
            joined[label] = Aggregate()
            for key in keys:
                joined[label].merge(self.by_key[key])
        self.by_key = joined
        if len(joined) - (OTHER in joined) < most:
            return
        kept = [label for label in dict.fromkeys(keep) if label in joined and label != OTHER]
        rest = sorted(set(joined) - set(kept) - {OTHER}, key=lambda k: (-joined[k].runs, k))
        chosen = set((kept + rest)[: most - 1])
        for key in [key for key in joined if key not in chosen and key != OTHER]:
            self.aggregate(OTHER).merge(joined.pop(key))

    def _count(self, run: Run, groups: dict[str, Aggregate]) -> None:
        if self.since is not None and run.first < self.since:
            return
        aggregate = groups.get(run.key)
        if aggregate is None:
            aggregate = groups[run.key] = Aggregate()
        aggregate.run(run.rc, run.outcome, max(1, run.attempts), run.first, run.last_end)
