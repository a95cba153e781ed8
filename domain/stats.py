"""The log as a metric: attempts grouped into runs, runs into aggregates per command or name.

Pure and streaming: lines go in one at a time; memory grows with the number of
runs still open (attempts seen, last one followed by a wait) and of distinct
keys, never with the number of lines. A Summary has a plain state, so that a
checkpoint can carry it from one `stats` to the next.
"""

from __future__ import annotations

from domain.aggregate import BY_RC, Aggregate, outcome_of
from domain.runs import Run

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class Summary:
    """Aggregates by key, plus the runs not yet known to be whole.

    `since` (epoch seconds, or None) keeps only runs whose first attempt started
    at or after it, and attempts that started at or after it. The aggregates count
    whole runs only; `finished()` adds the open ones as they stand.
    """

    def __init__(self, since: float | None = None) -> None:
        self.since = since
        self.open: dict[str, Run] = {}
        self._by_key: dict[str, Aggregate] = {}
        self._singles: dict[str, list[Any]] = {}
        """Runs of one attempt not yet counted into their aggregate, by key: started, rc,
        duration_ms and outcome of each, one run after another in one flat list (no tuple
        for each). Most runs are one attempt, and a log holds millions: they are counted
        together (`Aggregate.add_singles`) when the aggregates are next read."""
        self.newest = 0.0
        """When the latest attempt seen started: the log's own clock."""

    @property
    def by_key(self) -> dict[str, Aggregate]:
        """The aggregates, every run added so far counted."""
        self.settle()
        return self._by_key

    @by_key.setter
    def by_key(self, aggregates: dict[str, Aggregate]) -> None:
        self.settle()
        self._by_key = aggregates

    def settle(self) -> None:
        """Count what waits to be counted: runs of one attempt, and durations (reading the
        summary does so too; a long read does it now and then, to bound its memory)."""
        if self._singles:
            singles, self._singles = self._singles, {}
            for key, rows in singles.items():
                self._aggregate(key).add_singles(rows)
        for aggregate in self._by_key.values():
            aggregate.durations.settle()
            aggregate.attempt_durations.settle()

    def __getstate__(self) -> dict[str, object]:
        """For pickling (a stats worker's result): counted, not pending."""
        self.settle()
        return self.__dict__

    def add(
        self,
        run_id: str,
        key: str,
        started: float,
        attempt: int,
        rc: int,
        duration_ms: int,
        waits: bool,
        outcome: str | None = None,
    ) -> None:
        """One attempt line; `outcome` is how the log says it ended (None: read the rc)."""
        if started > self.newest:  # noqa: PLR1730 - max() costs more, once a line
            self.newest = started
        counted = self.since is None or started >= self.since
        run = self.open.get(run_id)
        if run is None and attempt == 1 and not waits:  # a run of one attempt: most are
            if counted:
                rows = self._singles.get(key)
                if rows is None:
                    rows = self._singles[key] = []
                rows += started, rc, duration_ms, outcome or BY_RC.get(rc) or outcome_of(rc)
            return
        if counted:
            self._aggregate(key).attempt(rc, duration_ms, outcome)
        if run is None:
            run = self.open[run_id] = Run(key, started, attempt)
        run.add(started, attempt, rc, duration_ms, waits, outcome)
        if run.whole:
            del self.open[run_id]
            self._count(run, self._by_key)

    def merge(self, other: Summary) -> None:
        """Fold in a summary of a later part of the same log."""
        self.newest = max(self.newest, other.newest)
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
                self._count(mine, self._by_key)

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
        """Forget open runs whose last attempt ended before `epoch` (judged by the log's own
        clock, `newest`, so that a log read late is read as one read as it was written):
        their runner is gone."""
        self.open = {rid: run for rid, run in self.open.items() if run.last_end >= epoch}

    def bound(self, first: list[str], keys: int, runs: int) -> None:
        """Keep `keys` keys apart at most: those of `first` that are here (the ones already
        exported), then the busiest; the rest are counted together under OTHER. Keep the
        `runs` open runs that ended last, at most."""
        if len(self.open) > runs:
            latest = sorted(self.open.items(), key=lambda item: item[1].last_end)[-runs:]
            self.open = dict(latest)
        by_key = self.by_key
        if len(by_key) <= keys:
            return
        kept = [key for key in first if key in by_key][:keys]
        for key in sorted(by_key, key=lambda key: by_key[key].runs, reverse=True):
            if len(kept) >= keys - 1:
                break
            if key not in kept and key != OTHER:
                kept.append(key)
        other = by_key.pop(OTHER, None) or Aggregate()
        bounded = {key: by_key.pop(key) for key in kept}
        for aggregate in by_key.values():
            other.merge(aggregate)
        self._by_key = {**bounded, OTHER: other}

    def state(self) -> dict[str, object]:
        return {
            "keys": {key: aggregate.state() for key, aggregate in self.by_key.items()},
            "open": {run_id: run.state() for run_id, run in self.open.items()},
            "newest": self.newest,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Summary:
        made = cls()
        keys: dict[str, dict[str, Any]] = state["keys"]
        runs: dict[str, list[Any]] = state["open"]
        made.by_key = {key: Aggregate.from_state(value) for key, value in keys.items()}
        made.open = {run_id: Run.from_state(value) for run_id, value in runs.items()}
        made.newest = float(state["newest"])
        if not -1e15 < made.newest < 1e15:  # also false for NaN
            raise ValueError("newest")
        return made

    def _count(self, run: Run, groups: dict[str, Aggregate]) -> None:
        if self.since is None or run.first >= self.since:
            aggregate = groups.get(run.key)
            if aggregate is None:
                aggregate = groups[run.key] = Aggregate()
            aggregate.add(run.last_rc, run.attempts, run.first, run.last_end, run.last_outcome)

    def _aggregate(self, key: str) -> Aggregate:
        aggregate = self._by_key.get(key)
        if aggregate is None:
            aggregate = self._by_key[key] = Aggregate()
        return aggregate


OTHER = "(other)"
"""The key under which the commands or names kept apart no longer are counted together."""
