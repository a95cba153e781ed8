"""An aggregate's line in the checkpoint (version 13): its counts, then its figures that
are not counts, its two histograms' fine buckets and its recent runs, a tab before each.

    COUNTS<TAB>FIGURES<TAB>FINE<TAB>FINE<TAB>RECENT

COUNTS, as little-endian unsigned integers of the fewest bytes that hold the largest, in
base64 after their array type code (adapters.packing.packed_counts): runs, attempts,
attempts_max, retried; runs by outcome, then attempts by outcome (in the order of
OUTCOMES); the exported buckets and the count of each histogram (run durations, then
attempt durations); then each exit code and its count of runs. FIGURES: last_run,
last_rc, last_duration, last_success, last_failure, last_failure_rc, and each
histogram's total and maximum, as little-endian doubles in base64, NaN where there is
none. FINE: each histogram's fine buckets as domain.packed writes them (the counts
packed, then perhaps the durations counted since). RECENT: the start times of the
latest runs as little-endian doubles in base64, a colon, then each one's outcome as a
digit (its place in OUTCOMES).

Written and read once for each command that new runs touch, each part by one C-level
pass: no number is written as text or read from it (a call of `int` or `float` a
number cost more than the rest), and no JSON scanned.
"""

from __future__ import annotations

from itertools import chain

from adapters.packing import (
    NONE,
    log_times,
    or_none,
    packed,
    packed_counts,
    unpacked,
    unpacked_counts,
)
from domain.aggregate import RECENT, Aggregate, is_moment
from domain.buckets import LE_SECONDS
from domain.histogram import Histogram
from domain.outcomes import OUTCOMES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_KINDS = len(OUTCOMES)
_LE = len(LE_SECONDS) + 1
"""Exported buckets of a histogram (its bounds, then +Inf)."""
_TRIED = 4 + _KINDS
_LE_RUNS = _TRIED + _KINDS
_LE_TRIES = _LE_RUNS + _LE + 1
_COUNTS = _LE_TRIES + _LE + 1
"""Where each part of the counts starts; the exit codes start at _COUNTS."""
_FIGURES = 10
_DIGITS = {outcome: ord("0") + place for place, outcome in enumerate(OUTCOMES)}
_BY_MARK: list[str | None] = [None] * 256
"""Each byte's outcome as a mark (None: not a mark)."""
for _place, _outcome in enumerate(OUTCOMES):
    _BY_MARK[ord("0") + _place] = _outcome


def line(aggregate: Aggregate) -> bytes:
    """`aggregate` as its line (without the newline)."""
    runs: list[Any] = aggregate.durations.state()  # fine buckets, le, count, total, maximum
    tries: list[Any] = aggregate.attempt_durations.state()
    outcomes, tried = aggregate.outcomes, aggregate.attempt_outcomes
    counts = [
        aggregate.runs,
        aggregate.attempts,
        aggregate.attempts_max,
        aggregate.retried,
        *map(outcomes.__getitem__, OUTCOMES),
        *map(tried.__getitem__, OUTCOMES),
        *runs[1],
        runs[2],
        *tries[1],
        tries[2],
        *chain.from_iterable(sorted(aggregate.codes.items())),
    ]
    missing = (
        aggregate.last_run,
        aggregate.last_rc,
        aggregate.last_duration,
        aggregate.last_success,
        aggregate.last_failure,
        aggregate.last_failure_rc,
    )
    figures = [NONE if value is None else value for value in missing]
    figures += runs[3], runs[4], tries[3], tries[4]
    recent = aggregate.recent[-RECENT:]
    times = [at for at, _ in recent]
    marks = bytes([_DIGITS[outcome] for _, outcome in recent])
    return b"\t".join(
        [
            packed_counts(counts),
            packed("d", figures),
            str(runs[0]).encode(),
            str(tries[0]).encode(),
            packed("d", times) + b":" + marks,
        ]
    )


def read(data: bytes) -> Aggregate:
    """The aggregate of a line `line` wrote; ValueError, TypeError, KeyError or IndexError
    when it does not hold together (nothing that could fail later, when it is counted into
    or shown; its fine buckets are checked when they are decoded: see domain.packed)."""
    counts_text, _, rest = data.partition(b"\t")  # not split: the fine buckets are long
    figures_text, _, rest = rest.partition(b"\t")
    fine_runs, _, rest = rest.partition(b"\t")
    fine_tries, tab, recent = rest.partition(b"\t")
    if not tab:
        raise ValueError("parts")
    counts = unpacked_counts(counts_text)
    if len(counts) < _COUNTS or (len(counts) - _COUNTS) % 2:
        raise ValueError("counts")
    figures = or_none(unpacked("d", figures_text))
    if len(figures) != _FIGURES:
        raise ValueError("figures")
    last_run, last_rc, last_duration, last_success, last_failure, last_failure_rc = figures[:6]
    total_runs, most_runs, total_tries, most_tries = figures[6:]
    if not all(map(is_moment, (last_run, last_duration, last_success, last_failure))):
        raise ValueError("times")
    made = Aggregate.__new__(Aggregate)  # every field set here: none made to be replaced
    made.runs, made.attempts, made.attempts_max, made.retried = counts[:4]
    made.outcomes = dict(zip(OUTCOMES, counts[4:_TRIED], strict=True))
    made.attempt_outcomes = dict(zip(OUTCOMES, counts[_TRIED:_LE_RUNS], strict=True))
    made.last_run, made.last_duration = last_run, last_duration
    made.last_success, made.last_failure = last_success, last_failure
    made.last_rc, made.last_failure_rc = _code(last_rc), _code(last_failure_rc)
    codes = counts[_COUNTS:]
    made.codes = dict(zip(codes[::2], codes[1::2], strict=True))
    runs = counts[_LE_RUNS:_LE_TRIES]
    tries = counts[_LE_TRIES:_COUNTS]
    made.durations = Histogram.from_state(
        [str(fine_runs, "ascii"), runs[:-1], runs[-1], total_runs, most_runs]
    )
    made.attempt_durations = Histogram.from_state(
        [str(fine_tries, "ascii"), tries[:-1], tries[-1], total_tries, most_tries]
    )
    made.recent = _recent(recent)
    return made


def _code(value: float | None) -> int | None:
    """An exit code kept as a double: a whole number, or none."""
    if value is None:
        return None
    if not (-1e15 < value < 1e15 and value.is_integer()):
        raise ValueError("exit code")
    return int(value)


def _recent(packed: bytes) -> list[tuple[float, str]]:
    """The recent runs `line` packed: only what it writes (canonical base64, a time of a
    log's range for each outcome, at most RECENT)."""
    text, colon, marks = packed.partition(b":")
    times = unpacked("d", text)
    outcomes = [_BY_MARK[mark] for mark in marks]
    if not (
        colon
        and len(times) == len(outcomes) <= RECENT
        and None not in outcomes
        and log_times(times)
    ):
        raise ValueError("recent runs")
    return list(zip(times, outcomes, strict=True))  # type: ignore[arg-type] # none is None
