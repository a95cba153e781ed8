"""An aggregate's line in the checkpoint (version 12): its figures in a JSON array, each in
its place, then, after a tab each, its two histograms' fine buckets and its recent runs.

    [runs,attempts,attempts_max,retried,[outcomes],[attempt outcomes],last_run,last_rc,
     last_duration,last_success,last_failure,last_failure_rc,[[rc,count],…],
     le,count,total,maximum,le,count,total,maximum]<TAB>FINE<TAB>FINE<TAB>RECENT

The outcomes are counted in the order of OUTCOMES; `le`, `count`, `total` and `maximum`
are each histogram's (run durations, then attempt durations), FINE its fine buckets as
domain.packed writes them (the counts packed, then perhaps the durations counted since).
RECENT is the start times of the latest runs as little-endian doubles in base64, a
colon, then each one's outcome as a digit (its place in OUTCOMES): the times come
back exactly, with neither a float written as text nor one read from it. Written and
read once for each command that new runs touch: a third less to write than the line it
replaces (a JSON object, the times in it), an eighth less to read.
"""

from __future__ import annotations

import sys
from array import array
from binascii import a2b_base64, b2a_base64
from itertools import chain

from adapters import cjson
from domain.aggregate import RECENT, Aggregate, is_moment
from domain.histogram import Histogram, whole_counts
from domain.outcomes import OUTCOMES

FIELDS = 21
"""Figures in the JSON array."""
_DIGITS = {outcome: ord("0") + place for place, outcome in enumerate(OUTCOMES)}
_OUTCOME = {ord("0") + place: outcome for place, outcome in enumerate(OUTCOMES)}


def line(aggregate: Aggregate) -> bytes:
    """`aggregate` as its line (without the newline)."""
    runs, attempts = aggregate.durations.state(), aggregate.attempt_durations.state()
    outcomes, tried = aggregate.outcomes, aggregate.attempt_outcomes
    fields = [
        aggregate.runs,
        aggregate.attempts,
        aggregate.attempts_max,
        aggregate.retried,
        [outcomes[outcome] for outcome in OUTCOMES],
        [tried[outcome] for outcome in OUTCOMES],
        aggregate.last_run,
        aggregate.last_rc,
        aggregate.last_duration,
        aggregate.last_success,
        aggregate.last_failure,
        aggregate.last_failure_rc,
        sorted(aggregate.codes.items()),
        *runs[1:],
        *attempts[1:],
    ]
    recent = aggregate.recent[-RECENT:]
    times = array("d", [at for at, _ in recent])
    if sys.byteorder == "big":
        times.byteswap()
    marks = bytes([_DIGITS[outcome] for _, outcome in recent])
    packed = b2a_base64(times, newline=False) + b":" + marks
    return b"\t".join(
        [cjson.dumps(fields), str(runs[0]).encode(), str(attempts[0]).encode(), packed]
    )


def read(data: bytes) -> Aggregate:
    """The aggregate of a line `line` wrote; ValueError, TypeError, KeyError or IndexError
    when it does not hold together (nothing that could fail later, when it is counted into
    or shown)."""
    head, fine_runs, fine_attempts, recent = data.split(b"\t")  # ValueError unless four
    fields = cjson.loads(head)
    if type(fields) is not list or len(fields) != FIELDS:
        raise ValueError("figures")
    (runs, attempts, most, retried, outcomes, tried, last_run, last_rc, last_duration) = fields[:9]
    last_success, last_failure, last_failure_rc, codes = fields[9:13]
    if not (
        type(outcomes) is list
        and type(tried) is list
        and len(outcomes) == len(tried) == len(OUTCOMES)
        and whole_counts([runs, attempts, most, retried, *outcomes, *tried])
    ):
        raise ValueError("counts")
    if not all(map(is_moment, (last_run, last_duration, last_success, last_failure))):
        raise ValueError("times")
    if not (last_rc is None or type(last_rc) is int) or not (
        last_failure_rc is None or type(last_failure_rc) is int
    ):
        raise ValueError("exit codes")
    if type(codes) is not list or not whole_counts(list(chain.from_iterable(codes))):
        raise ValueError("codes")
    made = Aggregate.__new__(Aggregate)  # every field set here: none made to be replaced
    made.runs, made.attempts, made.attempts_max, made.retried = runs, attempts, most, retried
    made.outcomes = dict(zip(OUTCOMES, outcomes, strict=True))
    made.attempt_outcomes = dict(zip(OUTCOMES, tried, strict=True))
    made.last_run, made.last_rc, made.last_duration = last_run, last_rc, last_duration
    made.last_success, made.last_failure = last_success, last_failure
    made.last_failure_rc = last_failure_rc
    made.codes = dict(codes)  # ValueError unless each is a pair
    made.durations = Histogram.from_state([str(fine_runs, "ascii"), *fields[13:17]])
    made.attempt_durations = Histogram.from_state([str(fine_attempts, "ascii"), *fields[17:]])
    made.recent = _recent(recent)
    return made


def _recent(packed: bytes) -> list[tuple[float, str]]:
    """The recent runs `line` packed: only what it writes (canonical base64, a time of a
    log's range for each outcome, at most RECENT)."""
    text, colon, marks = packed.partition(b":")
    data = a2b_base64(text)
    if not colon or b2a_base64(data, newline=False) != text:
        raise ValueError("recent runs")
    times = array("d")
    times.frombytes(data)  # ValueError unless whole doubles
    if sys.byteorder == "big":
        times.byteswap()
    if not (
        len(times) == len(marks) <= RECENT
        and all(map(_AFTER_EARLIEST, times))  # both false for NaN
        and all(map(_BEFORE_LATEST, times))
    ):
        raise ValueError("recent runs")
    return list(zip(times.tolist(), map(_OUTCOME.__getitem__, marks), strict=True))


_AFTER_EARLIEST = (-1e15).__lt__
_BEFORE_LATEST = (1e15).__gt__
"""A time a log can hold is within these (see domain.aggregate.is_moment), compared in C."""
