"""Counts of durations: Prometheus' fixed buckets, and fine ones for quantiles within 4%."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from itertools import repeat
from math import ceil, log
from operator import add

LE_SECONDS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
    60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400,
)  # fmt: skip
"""Upper bounds (seconds) of the exported buckets: jobs from milliseconds to a day; +Inf after."""
LE_MS = tuple(round(bound * 1000) for bound in LE_SECONDS)
RATIO = 1.08
"""Each fine bucket's upper bound is 8% above the one before: a quantile read as the middle
of its bucket is within 4% of the true one (the table shows two figures)."""
"""Fine bucket i holds the durations in (RATIO**(i-1), RATIO**i] milliseconds; 0 holds 0 and 1."""
FINE_MAX = 400
"""More fine buckets than the longest duration a log line may hold (10**13 ms) needs."""


class Histogram:
    """Durations in milliseconds: `le` counts per exported bucket (not cumulative; the last
    is +Inf), `fine` counts per fine bucket from bucket `low` on, and their count, total and
    maximum.

    `add` only appends to `pending`; `settle` counts what is pending in a few C-level
    passes (a sort, one bisect per bound, a Counter of the fine buckets), which makes a
    first read of a million lines a second shorter than counting each duration alone.
    Every reader of the counts settles first."""

    __slots__ = ("_count", "_fine", "_le", "_low", "_maximum", "_total", "pending")

    def __init__(self) -> None:
        self._le = [0] * (len(LE_MS) + 1)
        self._fine: list[int] = []
        self._low = 0
        self._count = self._total = self._maximum = 0
        self.pending: list[int] = []

    def add(self, ms: int) -> None:
        self.pending.append(ms)

    def settle(self) -> None:
        pending = self.pending
        if not pending:
            return
        self.pending = []
        pending.sort()
        self._count += len(pending)
        self._total += sum(pending)
        self._maximum = max(self._maximum, pending[-1])
        at = 0
        for place, bound in enumerate(LE_MS):
            below = bisect_right(pending, bound, at)
            self._le[place] += below - at
            at = below
        self._le[-1] += len(pending) - at
        ones = bisect_right(pending, 1)
        counts = Counter(map(ceil, map(log, pending[ones:], repeat(RATIO))))
        if ones:
            counts[0] += ones
        self._widen(min(counts), max(counts))
        for index, n in counts.items():
            self._fine[index - self._low] += n

    def _widen(self, low: int, high: int) -> None:
        """Make room in `_fine` for the buckets `low` to `high`."""
        if not self._fine:
            self._fine, self._low = [0] * (high - low + 1), low
            return
        if low < self._low:
            self._fine[:0] = [0] * (self._low - low)
            self._low = low
        if high >= self._low + len(self._fine):
            self._fine += [0] * (high - self._low - len(self._fine) + 1)

    @property
    def le(self) -> list[int]:
        self.settle()
        return self._le

    @property
    def fine(self) -> tuple[int, list[int]]:
        """The first fine bucket counted, and the counts from it on."""
        self.settle()
        return self._low, self._fine

    @property
    def count(self) -> int:
        self.settle()
        return self._count

    @property
    def total(self) -> int:
        self.settle()
        return self._total

    @property
    def maximum(self) -> int:
        self.settle()
        return self._maximum

    def restore(
        self, le: list[int], fine: tuple[int, list[int]], count: int, total: int, most: int
    ) -> None:
        """Counts as a checkpoint kept them."""
        self._le, (self._low, self._fine) = le, fine
        self._count, self._total, self._maximum = count, total, most

    def merge(self, other: Histogram) -> None:
        self.settle()
        self._le = list(map(add, self._le, other.le))
        low, fine = other.fine
        if fine:
            self._widen(low, low + len(fine) - 1)
            start = low - self._low
            self._fine[start : start + len(fine)] = map(add, self._fine[start:], fine)
        self._count += other.count
        self._total += other.total
        self._maximum = max(self._maximum, other.maximum)

    def quantile(self, q: float) -> float:
        """The q-quantile in milliseconds (0 when empty), within 4%, never above the maximum."""
        if not self.count:
            return 0.0
        rank = max(1, ceil(q * self._count))
        seen = 0
        for index, n in enumerate(self._fine, self._low):
            seen += n
            if seen >= rank:
                middle = 1.0 if index == 0 else (RATIO ** (index - 1) + RATIO**index) / 2
                return min(middle, float(self._maximum))
        return float(self._maximum)
