"""Runs and attempts read and not yet counted: held by key in flat lists, then counted into
their aggregates together, in a few C-level passes over each list.

A log holds millions of lines. Counting each as it is read (`Aggregate.add` for a run,
and an attempt's outcome and duration: a call and a dozen fields each) cost more than
reading it; counted together, they come to the same figures (property tests hold the
two together).
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import add, eq, mul, not_, sub, truediv

from domain.aggregate import RECENT

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
        """The keys under which something waits, in the order they came (those of retried
        runs first): not a set's order, which changes with each process's string hashing
        and would decide which of equally busy commands a long read keeps apart."""
        return iter(dict.fromkeys(chain(self.tries, self.whole, self.singles)))

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
        """What waits under each of `keys` waits under `to` instead, in the order it came."""
        keys = set(keys)
        for kind in (self.singles, self.whole, self.tries):
            rows: list[Any] = []
            for key in [key for key in kind if key in keys]:
                rows += kind.pop(key)
            if rows:
                kind.setdefault(to, []).extend(rows)


def count_singles(aggregate: Aggregate, flat: list[Any]) -> None:
    """Count runs of one attempt each, given flat, four values a run: started, rc,
    duration_ms, outcome. What `add` would count for each, and its attempt."""
    starts, rcs, durations, outcomes = flat[0::4], flat[1::4], flat[2::4], flat[3::4]
    aggregate.attempts += len(starts)
    aggregate.attempts_max = max(aggregate.attempts_max, 1)
    ended = _counted(outcomes)
    for outcome, times in ended.items():
        aggregate.attempt_outcomes[outcome] += times
    aggregate.durations.add_many(durations)
    aggregate.attempt_durations.add_many(durations)
    ends = list(map(add, starts, map(truediv, durations, repeat(1000))))
    _count_runs(aggregate, starts, ends, rcs, durations, outcomes, ended)


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
    aggregate.durations.add_many(durations)
    outcomes = flat[4::5]
    _count_runs(aggregate, firsts, ends, rcs, durations, outcomes, _counted(outcomes))


def count_attempts(aggregate: Aggregate, flat: list[Any]) -> None:
    """Count attempts, given flat, two values each: duration_ms, outcome: into the attempts'
    outcomes and durations."""
    for outcome, times in _counted(flat[1::2]).items():
        aggregate.attempt_outcomes[outcome] += times
    aggregate.attempt_durations.add_many(flat[0::2])


def _count_runs(
    aggregate: Aggregate,
    starts: list[float],
    ends: list[float],
    rcs: list[int],
    durations: list[int],
    outcomes: list[str],
    ended: dict[str, int],
) -> None:
    """Count runs as `add` does, but their durations and attempts; `ended` counts their
    outcomes."""
    count = len(starts)
    aggregate.runs += count
    for outcome, times in ended.items():
        aggregate.outcomes[outcome] += times
    codes = aggregate.codes
    for rc, times in _counted(rcs).items():
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
    recent = [(starts[index], outcomes[index]) for index in _latest(starts)]
    aggregate.recent = sorted(aggregate.recent + recent)[-RECENT:]


def _counted(values: list[Any]) -> dict[Any, int]:
    """How many times each value comes: a pass in C for each distinct one, of which there
    are a few (outcomes, exit codes), where a Counter costs its Python-level making."""
    return {value: values.count(value) for value in set(values)}


def _latest(starts: list[float]) -> Iterable[int]:
    """The places of the RECENT latest of `starts` (ties: the later places). A log is
    written in order, so they are nearly always the last ones: that is checked in one
    pass, and only otherwise are they sorted."""
    if len(starts) <= RECENT:
        return range(len(starts))
    if min(starts[-RECENT:]) >= max(starts[:-RECENT]):
        return range(len(starts) - RECENT, len(starts))
    return sorted(range(len(starts)), key=starts.__getitem__)[-RECENT:]
