"""The log as a metric: attempts grouped into runs, runs into aggregates per command or name.

Pure and streaming: lines go in one at a time; memory grows with the number of
runs still open (attempts seen, last one followed by a wait) and of distinct
keys, never with the number of lines. A Summary has a plain state, so that a
checkpoint can carry it from one `stats` to the next.
"""

from __future__ import annotations

from domain.aggregate import Aggregate
from domain.outcomes import BY_RC, outcome_of
from domain.runs import Run
from domain.waiting import Waiting

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from domain.ports import Saved


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
        self.waiting = Waiting()
        """Whole runs and attempts not yet counted into their aggregates: they are counted
        together when the aggregates are next read."""
        self.newest = 0.0
        """When the latest attempt seen started: the log's own clock."""
        self.saved: dict[str, Saved] = {}
        """Aggregates as a checkpoint kept them, not read yet: a key is here or among the
        aggregates, never both. A few new lines touch a few keys: only those are read (when
        something is added to them); reading `by_key` reads them all."""

    @property
    def by_key(self) -> dict[str, Aggregate]:
        """The aggregates, every run added so far counted (the saved ones read)."""
        self.settle()
        return self._counted()

    @by_key.setter
    def by_key(self, aggregates: dict[str, Aggregate]) -> None:
        self.settle()
        self._by_key = aggregates

    def _counted(self) -> dict[str, Aggregate]:
        """The aggregates, every run added so far counted (the saved ones read), their
        durations perhaps still waiting to be placed (see Histogram.merge)."""
        self._count_waiting()
        if self.saved:
            saved, self.saved = self.saved, {}
            self._by_key.update((key, kept.wake()) for key, kept in saved.items())
        return self._by_key

    @property
    def awake(self) -> dict[str, Aggregate]:
        """The aggregates read or added to, every run counted; not the saved ones."""
        self.settle()
        return self._by_key

    def aggregate(self, key: str) -> Aggregate:
        """The aggregate of `key`, every run counted: read if it was saved, empty if there is
        none (the others are left as they are)."""
        waits = key in self.waiting
        if not waits and key not in self._by_key and key not in self.saved:
            return Aggregate()
        found = self._aggregate(key)
        if waits:
            self.waiting.count(key, found)
        return found

    def last_runs(self) -> dict[str, float | None]:
        """When each key's last run started, without reading the saved aggregates."""
        found = {key: kept.last_run for key, kept in self.saved.items()}
        found.update((key, aggregate.last_run) for key, aggregate in self.awake.items())
        return found

    def settle(self) -> None:
        """Count what waits to be counted: runs, attempts and durations (reading the summary
        does so too; a long read does it now and then, to bound its memory)."""
        self._count_waiting()
        for aggregate in self._by_key.values():
            aggregate.durations.settle()
            aggregate.attempt_durations.settle()

    def _count_waiting(self) -> None:
        """Count the runs and attempts that wait into their aggregates."""
        if self.waiting:
            waiting, self.waiting = self.waiting, Waiting()
            for key in waiting:
                waiting.count(key, self._aggregate(key))

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
                rows = self.waiting.singles.get(key)
                if rows is None:
                    rows = self.waiting.singles[key] = []
                rows += started, rc, duration_ms, outcome or BY_RC.get(rc) or outcome_of(rc)
            return
        if counted:
            tries = self.waiting.tries.get(key)
            if tries is None:
                tries = self.waiting.tries[key] = []
            tries += duration_ms, outcome or BY_RC.get(rc) or outcome_of(rc)
        if run is None:
            run = self.open[run_id] = Run(key, started, attempt)
        if run.add(started, attempt, rc, duration_ms, waits, outcome):
            del self.open[run_id]
            self._count(run)

    def merge(self, other: Summary) -> None:
        """Fold in a summary of a later part of the same log."""
        self.newest = max(self.newest, other.newest)
        for key, aggregate in other._counted().items():  # durations placed once, here
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

    def finished(self) -> dict[str, Aggregate]:
        """Copies of the aggregates with the runs never seen to end (a killed runner) counted
        as they stand; the summary itself goes on unchanged. In a window (`since`), a run
        whose first attempt was not seen began before what was read: it is not counted."""
        groups = {key: aggregate.copy() for key, aggregate in self.by_key.items()}
        for run in self.open.values():
            if self.since is None or run.first_attempt == 1:
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

    def bound(self, first: list[str], keys: int, runs: int) -> bool:
        """Keep `keys` keys apart at most: those of `first` that are here (the ones already
        exported), then the busiest; the rest are counted together under OTHER. Keep the
        `runs` open runs that ended last, at most. Whether any key joined OTHER.

        Saved aggregates are read only to join OTHER, or to find the busiest when fewer
        keys than that were exported."""
        if len(self.open) > runs:
            latest = sorted(self.open.items(), key=lambda item: item[1].last_end)[-runs:]
            self.open = dict(latest)
        present = self.awake.keys() | self.saved.keys()
        if len(present) <= keys:
            return False
        kept = [key for key in dict.fromkeys(first) if key in present and key != OTHER][:keys]
        if len(kept) < keys - 1:
            by_key = self.by_key
            busiest = sorted(by_key, key=lambda key: by_key[key].runs, reverse=True)
            chosen = set(kept)
            kept = (kept + [key for key in busiest if key not in chosen and key != OTHER])[
                : keys - 1
            ]
        chosen = set(kept)
        joining = [key for key in present if key not in chosen and key != OTHER]
        if not joining:  # the exported keys and OTHER: OTHER is not read, nor changed
            return False
        other = self._aggregate(OTHER)
        for key in joining:
            other.merge(self._aggregate(key))
            del self._by_key[key]
        return True

    def fold(self, keep: list[str], most: int) -> None:
        """Keep `most` keys apart while a long read goes on (memory): those of `keep`, then the
        busiest; the others join OTHER, what waits to be counted as it waits, with no
        aggregate of their own. Open runs keep their keys; saved aggregates stay as they are."""
        live = (self._by_key.keys() | set(self.waiting)) - {OTHER}
        if len(live) > most:
            size = {key: self.waiting.runs(key) for key in live}
            for key, aggregate in self._by_key.items():
                size[key] = size.get(key, 0) + aggregate.runs
            chosen = {key for key in keep if key in live}
            rest = sorted(live - chosen, key=lambda key: (-size[key], key))
            chosen.update(rest[: max(0, most - len(chosen))])
            dropped = live - chosen
            self.waiting.move(dropped, OTHER)
            for key in [key for key in self._by_key if key in dropped]:
                self._aggregate(OTHER).merge(self._by_key.pop(key))

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

    def _count(self, run: Run, groups: dict[str, Aggregate] | None = None) -> None:
        """Count a whole run into its aggregate: this summary's, or one of `groups`."""
        if self.since is not None and run.first < self.since:
            return
        if groups is None:
            rows = self.waiting.whole.get(run.key)
            if rows is None:
                rows = self.waiting.whole[run.key] = []
            rc = run.last_rc
            rows += run.first, run.last_end, rc, run.attempts, run.last_outcome or outcome_of(rc)
            return
        aggregate = groups.get(run.key) or groups.setdefault(run.key, Aggregate())
        aggregate.add(run.last_rc, run.attempts, run.first, run.last_end, run.last_outcome)

    def _aggregate(self, key: str) -> Aggregate:
        aggregate = self._by_key.get(key)
        if aggregate is None:
            kept = self.saved.pop(key, None)
            aggregate = self._by_key[key] = Aggregate() if kept is None else kept.wake()
        return aggregate


OTHER = "(other)"
"""The key under which the commands or names kept apart no longer are counted together."""
