"""Durations in two histograms: fine (quantiles within 1%) and Prometheus' fixed buckets."""

from __future__ import annotations

from array import array
from itertools import compress
from operator import add

from domain.buckets import BUCKET_RATIO, LE_SECONDS, Placed
from domain.errors import Damaged
from domain.packed import DEFERRED_MAX, carried, defer, pack, unpack

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

    In a checkpoint (`state`) the fine buckets are one string (see domain.packed). Read
    from one, they are left packed (`_packed`) until something needs them: durations
    added meanwhile are counted in the exported buckets and totals, and wait to be placed
    in the fine ones (`_unplaced`, after the `_waiting` ones the string holds), so that
    a `stats` that reads a few new lines does not decode and encode the fine buckets of
    every histogram they touch. Decoded, they are added to in the array they were read
    into (`_each`).
    """

    __slots__ = (
        "_buckets",
        "_count",
        "_first",
        "_le",
        "_maximum",
        "_packed",
        "_total",
        "_unplaced",
        "_waiting",
        "pending",
    )

    def __init__(self) -> None:
        self._buckets: list[int] | array[int] = []
        self._first = 0
        self._le = [0] * (len(LE_SECONDS) + 1)
        self._count = 0
        self._total = 0.0
        self._maximum = 0.0
        self.pending: list[int] = []
        """Durations added and not yet counted (see `add`)."""
        self._packed = ""
        """The fine buckets as a checkpoint held them, not decoded yet ("": decoded)."""
        self._waiting = 0
        """Durations `_packed` holds after its counts, not placed among them yet."""
        self._unplaced: list[int] = []
        """Durations counted since the fine buckets were read packed, not placed yet."""

    def add(self, value: int) -> None:
        """Count a duration of whole milliseconds."""
        self.pending.append(value)

    def add_many(self, values: list[int]) -> None:
        """Count durations of whole milliseconds: placed in their buckets with the others
        waiting, once for all when the histogram is next read (see `Placed`)."""
        self.pending += values

    def settle(self) -> None:
        """Count the pending durations into the buckets (reading it does so too)."""
        if self.pending:
            values, self.pending = self.pending, []
            if self._waiting + len(self._unplaced) + len(values) > DEFERRED_MAX:
                self._read()
            placed = Placed(values)
            self._count += placed.count
            self._total += placed.total
            self._maximum = max(self._maximum, placed.maximum)
            self._le = list(map(add, self._le, placed.le))
            if self._packed:
                self._unplaced += values
            else:
                self._place(placed)

    def _place(self, placed: Placed) -> None:
        """Count durations into the fine buckets (the exported ones counted apart)."""
        first, counts, indexes = placed.fine()
        if counts is None:
            self._each(indexes)
        else:
            self._fine(first, counts)

    def _read(self) -> None:
        """Decode the fine buckets read packed, and place the durations that wait; Damaged
        when they are not what a checkpoint writes (checked only now: see domain.packed)."""
        if self._packed:
            try:
                self._first, self._buckets, waiting = unpack(self._packed)
            except ValueError:
                raise Damaged("an aggregate does not hold together: histogram counts") from None
            waiting += self._unplaced
            self._packed, self._waiting, self._unplaced = "", 0, []
            if waiting:
                self._place(Placed(waiting))

    def _room(self, first: int, end: int) -> None:
        """Make the fine buckets span `first` to `end` (exclusive), zeros where none were."""
        buckets = self._buckets
        if not len(buckets):
            self._first, self._buckets = first, [0] * (end - first)
            return
        before, after = self._first - first, end - self._first - len(buckets)
        if isinstance(buckets, list):
            if before > 0:
                buckets[:0] = [0] * before
            if after > 0:
                buckets += [0] * after
        else:
            if before > 0:
                buckets[:0] = array(buckets.typecode, bytes(before * buckets.itemsize))
            if after > 0:
                buckets.frombytes(bytes(after * buckets.itemsize))
        self._first = min(first, self._first)

    def _each(self, indexes: list[int]) -> None:
        """Count one duration into each fine bucket of `indexes` (in order): each alone,
        in the buckets as they are, packed ones included (see `from_state`)."""
        self._room(indexes[0], indexes[-1] + 1)
        buckets, first = self._buckets, self._first
        done = 0
        try:
            for done, index in enumerate(indexes):  # noqa: B007 - where an overflow stopped
                buckets[index - first] += 1
        except OverflowError:  # packed in fewer bytes than the count now takes
            self._listed()
            self._each(indexes[done:])

    def _fine(self, first: int, counts: list[int]) -> None:
        """Add counts to the fine buckets from `first` on: in one C-level pass over the
        buckets they span, or, when most are zeros (a histogram of a few durations from a
        millisecond to an hour, merged in, spans hundreds), each of the others alone."""
        self._read()
        if not len(self._buckets):
            self._first, self._buckets = first, list(counts)
            return
        buckets = self._listed()  # a sum over a span runs faster in a list
        self._room(first, first + len(counts))  # in place
        start = first - self._first
        end = start + len(counts)
        if counts.count(0) * 4 < len(counts) * 3:
            buckets[start:end] = map(add, buckets[start:end], counts)
            return
        nonzero = compress(range(start, end), counts)
        for index, times in zip(nonzero, filter(None, counts), strict=True):
            buckets[index] += times

    def __getstate__(self) -> list[object]:
        """For pickling (a stats worker's result): counted, not pending."""
        first, counts = self.span()
        return [first, counts, self.le, self.count, self.total, self.maximum]

    def __setstate__(self, state: list[Any]) -> None:
        self.pending, self._packed, self._waiting, self._unplaced = [], "", 0, []
        self._first, self._buckets, self._le, self._count, self._total, self._maximum = state

    def span(self) -> tuple[int, list[int]]:
        """The fine buckets from the first one counted: its index, and the counts from it."""
        self.settle()
        counts = self._listed()  # decoded first: where they start is known then
        return self._first, counts

    def _listed(self) -> list[int]:
        """The fine buckets as a list: counts still packed (see `from_state`) are read out."""
        self._read()
        buckets = self._buckets
        if isinstance(buckets, list):
            return buckets
        self._buckets = listed = buckets.tolist()
        return listed

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
        """Count in what `other` counts: what it has counted, and, placed with this one's
        own when this is next read, the durations it has not (a summary of a few new
        lines merged into a saved one: each placed once, where it falls)."""
        self.pending += other.pending
        if other._count or other._packed or len(other._buckets):
            counts = other._listed()  # decoded first: where they start is known then
            self._fine(other._first, counts)
            self._le = list(map(add, self._le, other._le))
            self._count += other._count
            self._total += other._total
            self._maximum = max(self._maximum, other._maximum)

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

    def state(self) -> list[object]:
        """A plain form for the checkpoint (see `from_state`): the fine buckets packed
        (`pack`) from the first that is not empty (or as they were read, the durations
        since after them), then the exported buckets and totals."""
        self.settle()
        if self._packed:
            fine = defer(self._packed, self._waiting, self._unplaced)
            return [fine, self._le, self._count, self._total, self._maximum]
        buckets = self._buckets
        first = next((index for index, times in enumerate(buckets) if times), len(buckets))
        return [
            pack(self._first + first, buckets[first:]),
            self._le,
            self._count,
            self._total,
            self._maximum,
        ]

    @classmethod
    def from_state(cls, state: list[Any]) -> Histogram:
        """The histogram `state` describes; ValueError if it does not hold together. A state
        of six fields is one a checkpoint of version 8 or 9 saved (`text_buckets`)."""
        counts: list[int] | array[int]
        packed, waiting = "", 0
        if type(state) is list and len(state) == 6:
            from domain import text_buckets  # noqa: PLC0415 - only to carry an old checkpoint over

            text, delta, le, total_count, total, maximum = state
            first, counts, pairs = text_buckets.unpack(text, delta)
        else:
            packed, le, total_count, total, maximum = state
            first, counts, pairs = 0, [], {}  # decoded when needed (`_read`)
            waiting = carried(packed)
        if not (whole_counts(le) and len(le) == len(LE_SECONDS) + 1):
            raise ValueError("histogram buckets do not match")
        made = cls.__new__(cls)  # every field set here: none made to be replaced
        made.pending, made._unplaced = [], []
        made._packed, made._waiting = packed, waiting
        made._first, made._buckets, made._le = first, counts, le
        for index, times in pairs.items():  # an old checkpoint's counts beside its text
            made._fine(index, [times])
        made._count, made._total, made._maximum = int(total_count), float(total), float(maximum)
        if not (0 <= made._total < _INFINITY and 0 <= made._maximum < _INFINITY):  # nor NaN
            raise ValueError("histogram totals")
        return made


_INFINITY = float("inf")


def whole_counts(values: list[Any]) -> bool:
    """Whether `values` is a list of whole numbers, none below zero (in C-level passes)."""
    return type(values) is list and set(map(type, values)) <= {int} and min(values, default=0) >= 0
