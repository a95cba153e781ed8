"""Fine buckets as checkpoints of versions 8 and 9 saved them: the counts in text, and
what was counted since beside them as (bucket, count) pairs. Read once, when such a
checkpoint is carried over; the next save writes them as `histogram.pack` does."""

from __future__ import annotations

from domain.buckets import FINE_MAX

DELTA_MAX = 256
"""Pairs beside the text at most (such a checkpoint wrote the text anew past that)."""

PACKED = r"[0-9]{1,4}:(?:[0-9]{1,18}(?:,[0-9]{1,18})*)?"
"""The text: the first bucket's index, then counts (ASCII digits alone)."""


def unpack(text: object, delta: object) -> tuple[int, list[int], dict[int, int]]:
    """The first bucket's index, the counts from it, and the pairs counted since (bucket:
    count); ValueError for anything such a checkpoint could not have written."""
    if not (type(text) is str and readable(text)):
        raise ValueError("histogram counts")
    first, _, counts = text.partition(":")
    start = int(first)
    buckets = list(map(int, counts.split(","))) if counts else []
    if type(delta) is not list or len(delta) > DELTA_MAX:
        raise ValueError("histogram delta")
    try:
        pairs = dict(map(tuple, delta))
    except (TypeError, ValueError):
        raise ValueError("histogram delta") from None
    if not (
        all(type(value) is int and value >= 0 for value in [*pairs, *pairs.values()])
        and start + len(buckets) <= FINE_MAX
        and all(index < FINE_MAX for index in pairs)
    ):
        raise ValueError("histogram delta")
    return start, buckets, pairs


def readable(text: str) -> bool:
    """Whether `text` is counts as saved, so that int() cannot fail on it. Text too short
    to hold a number too long for int() is checked with C-level string methods; longer
    text with the pattern."""
    if len(text) > 4000:
        import re  # noqa: PLC0415 - only for a long text

        return re.fullmatch(PACKED, text) is not None
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
