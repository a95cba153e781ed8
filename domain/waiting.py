"""Runs and attempts read and not yet counted: held by key in flat lists, then counted into
their aggregates together, in a few C-level passes over each list.

A log holds millions of lines. Counting each as it is read (`Aggregate.add` and
`attempt`, a call and a dozen fields each) cost more than reading it; counted together,
they come to the same figures (property tests hold the two together).
"""

from __future__ import annotations

from collections import Counter
from itertools import compress, repeat
from operator import add, eq, mul, not_, sub, truediv

from domain.aggregate import RECENT
from domain.histogram import add_all

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    from domain.aggregate import Aggregate


class Waiting:
    """What waits to be counted, by key, each kind in one flat list (no tuple for each):

    - `singles`, runs of one attempt (most runs): started, rc, duration_ms, outcome;
    - `whole`, whole runs of more attempts: first, end, rc, attempts, outcome;
    - `tries`, the attempts of those: duration_ms, outcome.
    """

    __slots__ = ("singles", "tries", "whole")

    def __init__(self) -> None:
        self.singles: dict[str, list[Any]] = {}
        self.whole: dict[str, list[Any]] = {}
        self.tries: dict[str, list[Any]] = {}

    def __bool__(self) -> bool:
        return bool(self.singles or self.whole or self.tries)

    def __contains__(self, key: str) -> bool:
        return key in self.singles or key in self.whole or key in self.tries

    def __iter__(self) -> Iterator[str]:
        """The keys under which something waits."""
        return iter(self.singles.keys() | self.whole.keys() | self.tries.keys())

    def runs(self, key: str) -> int:
        """How many runs wait under `key`."""
        return len(self.singles.get(key, ())) // 4 + len(self.whole.get(key, ())) // 5

    def count(self, key: str, aggregate: Aggregate) -> None:
        """Count what waits under `key` into `aggregate`, and forget it: the whole runs first,
        as when each was counted as it ended."""
        whole = self.whole.pop(key, None)
        if whole:
            count_whole(aggregate, whole)
        singles = self.singles.pop(key, None)
        if singles:
            count_singles(aggregate, singles)
        tries = self.tries.pop(key, None)
        if tries:
            count_attempts(aggregate, tries)

    def move(self, keys: Iterable[str], to: str) -> None:
        """What waits under each of `keys` waits under `to` instead."""
        keys = list(keys)
        for kind in (self.singles, self.whole, self.tries):
            rows: list[Any] = []
            for key in keys:
                rows += kind.pop(key, ())
            if rows:
                kind.setdefault(to, []).extend(rows)


def count_singles(aggregate: Aggregate, flat: list[Any]) -> None:
    """Count runs of one attempt each, given flat, four values a run: started, rc,
    duration_ms, outcome. What `attempt` and `add` would count for each."""
    starts, rcs, durations, outcomes = flat[0::4], flat[1::4], flat[2::4], flat[3::4]
    aggregate.attempts += len(starts)
    aggregate.attempts_max = max(aggregate.attempts_max, 1)
    for outcome, times in Counter(outcomes).items():
        aggregate.attempt_outcomes[outcome] += times
    add_all(durations, aggregate.durations, aggregate.attempt_durations)
    ends = list(map(add, starts, map(truediv, durations, repeat(1000))))
    _count_runs(aggregate, starts, ends, rcs, durations, outcomes)


def count_whole(aggregate: Aggregate, flat: list[Any]) -> None:
    """Count runs whose attempts are counted apart (`count_attempts`), given flat, five
    values a run: first, end, rc, attempts, outcome. What `add` would count for each."""
    firsts, ends, rcs, attempts = flat[0::5], flat[1::5], flat[2::5], flat[3::5]
    aggregate.attempts += sum(attempts)
    aggregate.retried += len(attempts) - attempts.count(1)
    most = max(attempts)
    aggregate.attempts_max = max(aggregate.attempts_max, most)
    spans = map(mul, map(sub, ends, firsts), repeat(1000))
    durations = list(map(max, repeat(0), map(round, spans)))
    add_all(durations, aggregate.durations)
    _count_runs(aggregate, firsts, ends, rcs, durations, flat[4::5])


def count_attempts(aggregate: Aggregate, flat: list[Any]) -> None:
    """Count attempts, given flat, two values each: duration_ms, outcome. What `attempt`
    would count for each."""
    for outcome, times in Counter(flat[1::2]).items():
        aggregate.attempt_outcomes[outcome] += times
    add_all(flat[0::2], aggregate.attempt_durations)


def _count_runs(
    aggregate: Aggregate,
    starts: list[float],
    ends: list[float],
    rcs: list[int],
    durations: list[int],
    outcomes: list[str],
) -> None:
    """Count runs as `add` does, but their durations and attempts."""
    count = len(starts)
    aggregate.runs += count
    for outcome, times in Counter(outcomes).items():
        aggregate.outcomes[outcome] += times
    codes = aggregate.codes
    for rc, times in Counter(rcs).items():
        codes[rc] = codes.get(rc, 0) + times
    started = max(starts)
    last = count - 1 - starts[::-1].index(started)  # the last of those that started last
    if aggregate.last_run is None or started >= aggregate.last_run:
        aggregate.last_run, aggregate.last_rc = started, rcs[last]
        aggregate.last_duration = durations[last] / 1000
    succeeded = list(map(eq, outcomes, repeat("success")))
    success = max(compress(ends, succeeded), default=None)
    if success is not None and (aggregate.last_success is None or success > aggregate.last_success):
        aggregate.last_success = success
    failed = list(compress(range(count), map(not_, succeeded)))
    if failed:
        last = max(failed, key=ends.__getitem__)
        if aggregate.last_failure is None or ends[last] > aggregate.last_failure:
            aggregate.last_failure, aggregate.last_failure_rc = ends[last], rcs[last]
    latest = sorted(range(count), key=starts.__getitem__)[-RECENT:]
    recent = [(starts[index], outcomes[index]) for index in latest]
    aggregate.recent = sorted(aggregate.recent + recent)[-RECENT:]
