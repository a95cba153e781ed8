"""Where a duration falls: fine geometric buckets (quantiles within 1%) and the fixed
buckets Prometheus is given; many durations placed at once."""

from __future__ import annotations

from functools import partial
from itertools import repeat
from operator import sub

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from bisect import bisect_left, bisect_right, insort_right
else:
    try:  # the C functions `bisect` exports, without that module (it first defines its own)
        from _bisect import bisect_left, bisect_right, insort_right
    except ImportError:  # an interpreter without the C module
        from bisect import bisect_left, bisect_right, insort_right

insort = insort_right
"""Insert into a list kept in order, after what is equal (domain.aggregate's recent runs)."""

BUCKET_RATIO = 1.02
"""Each fine bucket is 2% wider than the one before: quantiles within 1%."""

LE_SECONDS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
    60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400,
)  # fmt: skip
"""Upper bounds (seconds) of the exported buckets: jobs from milliseconds to a day; +Inf after."""
LE_MS = tuple(round(bound * 1000) for bound in LE_SECONDS)
FINE_MAX = 2000
"""More fine buckets than any duration a log line may hold (10**13 ms) needs."""


def _le(seconds: float) -> str:
    """As the Prometheus client libraries write bounds: 1.0, 0.005, 86400.0."""
    return repr(float(seconds))


LE_TEXT = (*map(_le, LE_SECONDS), "+Inf")
"""The exported bounds as the Prometheus client libraries write them."""


FINE_BOUNDS: list[int] = []
"""The largest whole number of milliseconds in each fine bucket, int(BUCKET_RATIO ** index):
a duration goes into the first that holds it (the last, 2**128, holds everything
longer). Whole numbers compare faster. Computed as far as the longest duration placed
so far needs (see `fine_bounds`): each costs a float power, all of them 0.4 ms, and a
`stats` reading a few new lines of short commands needs a few dozen."""
_STEP = 256


def fine_bounds(longest: int) -> list[int]:
    """FINE_BOUNDS, computed at least up to the first bound that holds `longest`."""
    bounds = FINE_BOUNDS
    while len(bounds) < FINE_MAX and (not bounds or bounds[-1] < longest):
        start = len(bounds)
        if start == FINE_MAX - 1:
            bounds.append(1 << 128)
        else:
            stop = min(start + _STEP, FINE_MAX - 1)
            bounds += map(int, map(pow, repeat(BUCKET_RATIO), range(start, stop)))
    return bounds


class Placed:
    """Durations placed in the exported buckets: `le` counts them by bucket (+Inf last);
    `fine()` places them in the fine ones (a histogram whose fine buckets were not read
    leaves them waiting: see domain.packed).

    The durations are sorted once (in C); then how many fall at or below each bound of
    the buckets they span is one bisection per bound, not one per duration. What the
    exported buckets need is worked out when asked for: durations that waited to be
    placed in the fine ones were counted in them already."""

    def __init__(self, values: list[int]) -> None:
        ordered = sorted(values)
        self.ordered = ordered
        self.count = len(ordered)

    @property
    def le(self) -> list[int]:
        below = [0, *map(partial(bisect_right, self.ordered), LE_MS), self.count]
        return list(map(sub, below[1:], below))

    @property
    def total(self) -> int:
        return sum(self.ordered)

    @property
    def maximum(self) -> int:
        return self.ordered[-1]

    def fine(self) -> tuple[int, list[int] | None, list[int]]:
        """The first fine bucket they fill, and the counts from it to the last they fill;
        or, when they are fewer than the buckets they span (a few new lines, from a
        millisecond to an hour: hundreds of buckets), None and the fine bucket of each,
        in order, each placed by one bisection."""
        ordered = self.ordered
        bounds = fine_bounds(ordered[-1])
        first, last = bisect_left(bounds, ordered[0]), bisect_left(bounds, ordered[-1])
        if self.count <= last - first:
            return first, None, list(map(partial(bisect_left, bounds), ordered))
        below = [0, *map(partial(bisect_right, ordered), bounds[first : last + 1])]
        return first, list(map(sub, below[1:], below)), []
