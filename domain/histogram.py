"""Durations in two histograms: fine (quantiles within 1%) and Prometheus' fixed buckets."""

from __future__ import annotations

from itertools import accumulate, compress, count
from operator import add

from domain.buckets import BUCKET_RATIO, FINE_MAX, LE_SECONDS, LE_TEXT, Placed

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class Histogram:
    """Counts of durations (milliseconds): fine geometric buckets, and the exported ones.

    The fine buckets count the durations of each fine bucket (at most FINE_MAX); they are
    kept from the first one counted to the last (`span`), so a histogram of a few
    durations holds a few numbers, not hundreds of zeros before them. `le` holds one count per
    bound of LE_SECONDS, then one for +Inf (not cumulative). Durations added wait in a
    list and are counted together when the histogram is next read: a million lines cost
    C-level passes, not a million calls.

    The fine buckets of a histogram loaded from a checkpoint stay in their saved text
    (`packed`) until something reads them (a table's quantiles); what is counted in the
    meantime waits beside it as (bucket, count) pairs (`delta`), saved with it. So a
    `stats` that reads a few new lines and exports neither decodes nor encodes them.
    """

    __slots__ = (
        "_buckets",
        "_count",
        "_delta",
        "_first",
        "_le",
        "_maximum",
        "_packed",
        "_total",
        "pending",
    )

    def __init__(self) -> None:
        self._buckets: list[int] = []
        self._first = 0
        self._packed: str | None = None
        self._delta: dict[int, int] = {}
        self._le = [0] * (len(LE_SECONDS) + 1)
        self._count = 0
        self._total = 0.0
        self._maximum = 0.0
        self.pending: list[int] = []
        """Durations added and not yet counted (see `add`)."""

    def add(self, value: int) -> None:
        """Count a duration of whole milliseconds."""
        self.pending.append(value)

    def add_many(self, values: list[int]) -> None:
        """Count durations of whole milliseconds: placed in their buckets with the others
        waiting, once for all when the histogram is next read (placing costs one pass over
        the buckets they span, however few they are)."""
        self.pending += values

    def settle(self) -> None:
        """Count the pending durations into the buckets (reading it does so too)."""
        if self.pending:
            values, self.pending = self.pending, []
            self._add(Placed(values))

    def _fine(self, first: int, counts: list[int]) -> None:
        """Add counts to the fine buckets from `first` on: beside the saved text while there
        is one (a few pairs), else in one C-level pass over the buckets they span."""
        if self._packed is not None:
            delta = self._delta
            for index, times in compress(zip(count(first), counts), counts):
                delta[index] = delta.get(index, 0) + times
            return
        buckets = self._buckets
        if not buckets:
            self._first = first
        elif first < self._first:
            buckets[:0] = [0] * (self._first - first)
            self._first = first
        start = first - self._first
        end = start + len(counts)
        if end > len(buckets):
            buckets.extend([0] * (end - len(buckets)))
        buckets[start:end] = map(add, buckets[start:end], counts)

    def _add(self, placed: Placed) -> None:
        """Count durations placed in their buckets."""
        self._count += placed.count
        self._total += placed.total
        self._maximum = max(self._maximum, placed.maximum)
        self._fine(placed.first, placed.fine)
        self._le = list(map(add, self._le, placed.le))

    def _unpack(self) -> None:
        if self._packed is not None:
            first, _, counts = self._packed.partition(":")
            self._first = int(first)
            self._buckets = list(map(int, counts.split(","))) if counts else []
            self._packed, delta = None, self._delta
            self._delta = {}
            if delta:  # room for every bucket of the delta, then each added where it is
                low = min(delta)
                self._fine(low, [0] * (max(delta) - low + 1))
                buckets, start = self._buckets, self._first
                for index, times in delta.items():
                    buckets[index - start] += times

    def __getstate__(self) -> list[object]:
        """For pickling (a stats worker's result): counted, not pending."""
        first, counts = self.span()
        return [first, counts, self.le, self.count, self.total, self.maximum]

    def __setstate__(self, state: list[Any]) -> None:
        self.pending, self._packed, self._delta = [], None, {}
        self._first, self._buckets, self._le, self._count, self._total, self._maximum = state

    def span(self) -> tuple[int, list[int]]:
        """The fine buckets from the first one counted: its index, and the counts from it."""
        self.settle()
        self._unpack()
        return self._first, self._buckets

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
        first, theirs = other.span()
        if theirs:
            self._fine(first, theirs)
        self._le = [mine + theirs for mine, theirs in zip(self.le, other.le, strict=True)]
        self._count += other.count
        self._total += other.total
        self._maximum = max(self._maximum, other.maximum)

    def quantile(self, q: float) -> float:
        """The value below which a fraction `q` of the durations lie (0 when empty)."""
        if not self.count:
            return 0.0
        rank = max(1, -int(-q * self.count // 1))  # the ceiling
        seen = 0
        first, counts = self.span()
        for index, times in enumerate(counts, first):
            seen += times
            if seen >= rank:
                middle = BUCKET_RATIO ** (index - 0.5) if index else 1.0
                return min(middle, self.maximum)
        return self.maximum

    def cumulative(self) -> list[tuple[str, int]]:
        """(le, count of durations at or below it) for each bound and +Inf, as Prometheus wants."""
        return list(zip(LE_TEXT, accumulate(self.le), strict=True))

    def state(self) -> list[object]:
        """A plain form for the checkpoint (see `from_state`). The fine buckets are text,
        `FIRST:COUNT,COUNT,…` from the first that is not empty (text loads and saves far
        faster than a list of numbers), then what was counted beside it since."""
        self.settle()
        if self._packed is None or len(self._delta) > DELTA_MAX:
            start, buckets = self.span()
            first = next((index for index, times in enumerate(buckets) if times), len(buckets))
            self._packed = f"{start + first}:" + ",".join(map(str, buckets[first:]))
            self._buckets, self._first = [], 0
        delta = sorted(self._delta.items())
        return [self._packed, delta, self._le, self._count, self._total, self._maximum]

    @classmethod
    def from_state(cls, state: list[Any]) -> Histogram:
        """The histogram `state` describes; ValueError if it does not hold together."""
        packed, delta, le, total_count, total, maximum = state
        if not (type(packed) is str and _packed(packed) and _counts(le)):
            raise ValueError("histogram counts")
        first, _, counts = packed.partition(":")
        if int(first) + counts.count(",") + 1 > FINE_MAX or len(le) != len(LE_SECONDS) + 1:
            raise ValueError("histogram buckets do not match")
        if type(delta) is not list or len(delta) > DELTA_MAX:
            raise ValueError("histogram delta")
        pairs = dict(map(tuple, delta))
        if not (_counts(list(pairs)) and _counts(list(pairs.values()))) or any(
            index >= FINE_MAX for index in pairs
        ):
            raise ValueError("histogram delta")
        made = cls()
        made._packed, made._delta, made._le = packed, pairs, le
        made._count, made._total, made._maximum = int(total_count), float(total), float(maximum)
        return made


DELTA_MAX = 256
"""Fine buckets counted beside the saved text at most: past that, it is written anew."""


_PACKED = r"[0-9]{1,4}:(?:[0-9]{1,18}(?:,[0-9]{1,18})*)?"
"""Fine buckets as saved: the first one's index, then counts (ASCII digits alone). Compiled
only for the long texts that need it (`re` caches it)."""


def _packed(text: str) -> bool:
    """Whether `text` is fine buckets as saved, so that decoding it later cannot fail. Text
    too short to hold a number too long for int() is checked with C-level string methods
    (the pattern costs more than loading the checkpoint); longer text with the pattern."""
    if len(text) > 4000:
        import re  # noqa: PLC0415 - only for a long text

        return re.fullmatch(_PACKED, text) is not None
    first, colon, counts = text.partition(":")
    return (
        text.isascii()
        and not text.encode().translate(None, b"0123456789,:")
        and colon == ":"
        and 0 < len(first) <= 4
        and first.isdigit()
        and ":" not in counts
        and ",," not in counts
        and not counts.startswith(",")
        and not counts.endswith(",")
    )


def _counts(values: list[Any]) -> bool:
    """Whether `values` is a list of whole numbers, none below zero (in C-level passes)."""
    return type(values) is list and set(map(type, values)) <= {int} and min(values, default=0) >= 0
