"""Durations in two histograms: fine (quantiles within 1%) and Prometheus' fixed buckets."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from functools import partial
from itertools import accumulate

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

BUCKET_RATIO = 1.02
"""Each fine bucket is 2% wider than the one before: quantiles within 1%."""
_LOG_RATIO = math.log(BUCKET_RATIO)

LE_SECONDS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
    60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400,
)  # fmt: skip
"""Upper bounds (seconds) of the exported buckets: jobs from milliseconds to a day; +Inf after."""
_LE_MS = tuple(round(bound * 1000) for bound in LE_SECONDS)
FINE_MAX = 2000
"""More fine buckets than any duration a log line may hold (10**13 ms) needs."""


class Histogram:
    """Counts of durations (milliseconds): fine geometric buckets, and the exported ones.

    `buckets[i]` counts the durations of fine bucket i (a list, grown as needed: at
    most FINE_MAX). `le` holds one count per bound of LE_SECONDS, then one for +Inf (not
    cumulative). Durations added wait in a list and are counted into buckets together
    when the histogram is next read: a million lines cost C-level passes, not a
    million calls.
    """

    __slots__ = ("_buckets", "_count", "_le", "_maximum", "_total", "pending")

    def __init__(self) -> None:
        self._buckets: list[int] = []
        self._le = [0] * (len(LE_SECONDS) + 1)
        self._count = 0
        self._total = 0.0
        self._maximum = 0.0
        self.pending: list[int] = []
        """Durations added and not yet counted (see `add`)."""

    def add(self, value: int) -> None:
        """Count a duration of whole milliseconds."""
        self.pending.append(value)

    def settle(self) -> None:
        """Count the pending durations into the buckets (reading it does so too)."""
        if self.pending:
            values, self.pending = self.pending, []
            _Placed(values).into(self)

    def __getstate__(self) -> list[object]:
        """For pickling (a stats worker's result): counted, not pending."""
        return [self.buckets, self.le, self.count, self.total, self.maximum]

    def __setstate__(self, state: list[Any]) -> None:
        self.pending = []
        self._buckets, self._le, self._count, self._total, self._maximum = state

    @property
    def buckets(self) -> list[int]:
        self.settle()
        return self._buckets

    @property
    def le(self) -> list[int]:
        self.settle()
        return self._le

    @property
    def count(self) -> int:
        self.settle()
        return self._count

    @property
    def total(self) -> float:
        self.settle()
        return self._total

    @property
    def maximum(self) -> float:
        self.settle()
        return self._maximum

    def merge(self, other: Histogram) -> None:
        mine, theirs = self._buckets, other.buckets
        if len(theirs) > len(mine):
            mine.extend([0] * (len(theirs) - len(mine)))
        for index, count in enumerate(theirs):
            if count:
                mine[index] += count
        self._le = [mine + theirs for mine, theirs in zip(self._le, other.le, strict=True)]
        self._count += other.count
        self._total += other.total
        self._maximum = max(self._maximum, other.maximum)

    def quantile(self, q: float) -> float:
        """The value below which a fraction `q` of the durations lie (0 when empty)."""
        if not self.count:
            return 0.0
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for index, count in enumerate(self.buckets):
            seen += count
            if seen >= rank:
                middle = BUCKET_RATIO ** (index - 0.5) if index else 1.0
                return min(middle, self.maximum)
        return self.maximum

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, count of durations at or below it) for each bound and +Inf, as Prometheus wants."""
        return list(zip(_LE_TEXT, accumulate(self.le), strict=True))

    def state(self) -> list[object]:
        """A plain form for the checkpoint (see `from_state`)."""
        buckets = self.buckets
        first = next((index for index, count in enumerate(buckets) if count), len(buckets))
        return [first, buckets[first:], self.le, self.count, self.total, self.maximum]

    @classmethod
    def from_state(cls, state: list[Any]) -> Histogram:
        """The histogram `state` describes; ValueError if it does not hold together. The
        fine buckets are kept from the first that is not empty."""
        first, buckets, le, count, total, maximum = state
        if not (_counts([first]) and _counts(buckets) and _counts(le)):
            raise ValueError("histogram counts")
        if first + len(buckets) > FINE_MAX or len(le) != len(LE_SECONDS) + 1:
            raise ValueError("histogram buckets do not match")
        made = cls()
        made._buckets = [0] * first + buckets
        made._le = le
        made._count, made._total, made._maximum = int(count), float(total), float(maximum)
        return made


def _counts(values: list[Any]) -> bool:
    """Whether `values` is a list of whole numbers, none below zero (in C-level passes)."""
    return type(values) is list and set(map(type, values)) <= {int} and min(values, default=0) >= 0


def add_all(values: list[int], *histograms: Histogram) -> None:
    """Count the same durations (whole milliseconds) into each histogram, placing each
    distinct one in its buckets once."""
    if values:
        placed = _Placed(values)
        for histogram in histograms:
            histogram.settle()
            placed.into(histogram)


class _Placed:
    """Durations placed in their buckets: counts by fine bucket and by exported one."""

    def __init__(self, values: list[int]) -> None:
        self.count = len(values)
        self.total = sum(values)
        self.maximum = max(values)
        seen = Counter(values)  # durations repeat: each distinct one is placed once
        lengths, times = list(seen), list(seen.values())
        self.fine = list(zip(map(partial(bisect_left, _FINE), lengths), times, strict=True))
        self.le = list(zip(map(partial(bisect_left, _LE_MS), lengths), times, strict=True))

    def into(self, histogram: Histogram) -> None:
        histogram._count += self.count
        histogram._total += self.total
        histogram._maximum = max(histogram._maximum, self.maximum)
        buckets, le = histogram._buckets, histogram._le
        for index, count in self.fine:
            if index >= len(buckets):
                buckets.extend([0] * (index + 1 - len(buckets)))
            buckets[index] += count
        for index, count in self.le:
            le[index] += count


def _le(seconds: float) -> str:
    """As the Prometheus client libraries write bounds: 1.0, 0.005, 86400.0."""
    return repr(float(seconds))


_LE_TEXT = (*map(_le, LE_SECONDS), "+Inf")
"""The exported bounds as the Prometheus client libraries write them."""


_FINE = [math.floor(BUCKET_RATIO**index) for index in range(FINE_MAX - 1)] + [1 << 128]
"""The largest whole number of milliseconds in each fine bucket: a duration goes into the
first that holds it (the last holds everything longer). Whole numbers compare faster."""
