"""Durations in two histograms: fine (quantiles within 1%) and Prometheus' fixed buckets."""

from __future__ import annotations

import math
from bisect import bisect_left
from functools import lru_cache

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
_LE_MS = tuple(bound * 1000 for bound in LE_SECONDS)
FINE_MAX = 2000
"""More fine buckets than any duration a log line may hold (10**13 ms) needs."""


class Histogram:
    """Counts of durations (milliseconds): fine geometric buckets, and the exported ones.

    `buckets[i]` counts the durations of fine bucket i (a list, grown as needed: at
    most about 1,500 for the longest duration a log line may hold). `le` holds one
    count per bound of LE_SECONDS, then one for +Inf (not cumulative).
    """

    __slots__ = ("buckets", "count", "le", "maximum", "total")

    def __init__(self) -> None:
        self.buckets: list[int] = []
        self.le = [0] * (len(LE_SECONDS) + 1)
        self.count = 0
        self.total = 0.0
        self.maximum = 0.0

    def add(self, value: float) -> None:
        index, le = _buckets(value)
        buckets = self.buckets
        if index >= len(buckets):
            buckets.extend([0] * (index + 1 - len(buckets)))
        buckets[index] += 1
        self.le[le] += 1
        self.count += 1
        self.total += value
        self.maximum = max(self.maximum, value)

    def merge(self, other: Histogram) -> None:
        mine, theirs = self.buckets, other.buckets
        if len(theirs) > len(mine):
            mine.extend([0] * (len(theirs) - len(mine)))
        for index, count in enumerate(theirs):
            if count:
                mine[index] += count
        self.le = [mine + theirs for mine, theirs in zip(self.le, other.le, strict=True)]
        self.count += other.count
        self.total += other.total
        self.maximum = max(self.maximum, other.maximum)

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
        pairs, running = [], 0
        for bound, count in zip((*map(_le, LE_SECONDS), "+Inf"), self.le, strict=True):
            running += count
            pairs.append((bound, running))
        return pairs

    def state(self) -> list[object]:
        """A plain form for the checkpoint (see `from_state`)."""
        return [self.buckets, self.le, self.count, self.total, self.maximum]

    @classmethod
    def from_state(cls, state: list[Any]) -> Histogram:
        buckets, le, count, total, maximum = state
        made = cls()
        made.buckets = [int(c) for c in buckets]
        made.le = [int(c) for c in le]
        if len(made.buckets) > FINE_MAX:
            raise ValueError("too many histogram buckets")
        if len(made.le) != len(LE_SECONDS) + 1:
            raise ValueError("histogram buckets do not match")
        made.count, made.total, made.maximum = int(count), float(total), float(maximum)
        return made


def _le(seconds: float) -> str:
    """As the Prometheus client libraries write bounds: 1.0, 0.005, 86400.0."""
    return repr(float(seconds))


@lru_cache(maxsize=1 << 16)
def _buckets(value: float) -> tuple[int, int]:
    """The fine bucket of `value` and its exported one (remembered: durations repeat a lot)."""
    fine = math.ceil(math.log(value) / _LOG_RATIO) if value > 1 else 0
    return fine, bisect_left(_LE_MS, value)
