"""The log as a metric: attempts grouped into runs, runs into aggregates per command or name.

Pure and streaming: lines go in one at a time; memory grows with the runs still open
(their last attempt was followed by a wait) and the distinct keys, never with the lines.
A run is the attempts that share a run id; it ends the way its last attempt did.
"""

from __future__ import annotations

from domain.aggregate import BY_RC, Aggregate, Run

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

OTHER = "(other)"
"""The key of the commands or names no longer kept apart, counted together."""
OPEN_FOR = 7 * 86400.0
"""Seconds of log time after its last attempt that a run never seen to end stays open."""


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

    def add_ping_failure(self, key: str, started: float) -> None:
        """A run whose --ping failed (its last line says so)."""
        if self.since is None or started >= self.since:
            self.aggregate(key).ping_failures += 1

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
        """Keep at most `most` keys apart, and OTHER. Keys that share a label are joined first (it
        changes no exported series); then the labels of `keep` (those exported) stay, then
        the busiest; the rest join OTHER, whose exported sum so never falls."""
        for key, rows in self.waiting.items():
            self.aggregate(key).singles(rows)
        self.waiting = {}
        if len(self.by_key) - (OTHER in self.by_key) <= most:
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
        if len(joined) - (OTHER in joined) <= most:
            return
        kept = [label for label in dict.fromkeys(keep) if label in joined and label != OTHER]
        rest = sorted(set(joined) - set(kept) - {OTHER}, key=lambda k: (-joined[k].runs, k))
        chosen = set((kept + rest)[:most])
        for key in [key for key in joined if key not in chosen and key != OTHER]:
            self.aggregate(OTHER).merge(joined.pop(key))

    def _count(self, run: Run, groups: dict[str, Aggregate]) -> None:
        if self.since is not None and run.first < self.since:
            return
        aggregate = groups.get(run.key)
        if aggregate is None:
            aggregate = groups[run.key] = Aggregate()
        aggregate.run(run.rc, run.outcome, max(1, run.attempts), run.first, run.last_end)
