"""Fine buckets as a checkpoint holds them, `FIRST:CODE:BASE64[:WAITING:SEGMENTS]`: packed
counts, then the durations counted since and not yet placed among them.

A `stats` that reads an hour's new lines shows no quantile: it needs the exported
buckets of the histograms those lines touch, not their fine ones. So the fine buckets
it read are written back as they were, the new durations after them (`defer`), and
are decoded and counted only when something needs them, or when DEFERRED_MAX durations
wait (see domain.histogram). Like an aggregate a checkpoint keeps, the text is checked
when it is decoded (`unpack`), not when it is read: until then it is only carried.

The durations that wait are packed as the counts are, one segment for each `stats` that
deferred some (its type code, then the base64 of them), the segments comma-separated
after how many durations they hold in all: a `stats` appends its own segment, and the
one that counts them in decodes each in one C-level pass, where a duration written as
decimal text cost a call of `int` (some 1,000 instructions) to read back.
"""

from __future__ import annotations

import sys
from array import array
from binascii import a2b_base64, b2a_base64

from domain.buckets import FINE_MAX

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

DEFERRED_MAX = 256
"""Durations written after the packed counts at most: past that they are counted in."""

CODES = ("B", "H", "I", "Q")
"""Array type codes of unsigned integers, from the fewest bytes a count takes to the most."""
_SIZES = {code: array(code).itemsize for code in CODES}
_LIMITS = {code: 1 << (8 * size) for code, size in _SIZES.items()}
"""The smallest count each type code cannot hold."""
_DURATION_LIMIT = 10**14
"""A duration a log line may hold is below 10**14 milliseconds."""


def pack(first: int, counts: list[int] | array[int]) -> str:
    """Fine buckets as a checkpoint saves them, `FIRST:CODE:BASE64`: the first bucket's index,
    then the counts as unsigned integers of the fewest bytes that hold the largest (an
    array's type code), little-endian, in base64. Counts still packed as `unpack` read
    them are written in their own type (one that `pack` chose, or wider)."""
    data = counts if type(counts) is array else array(narrowest(max(counts, default=0)), counts)
    return f"{first}:{data.typecode}:{_base64(data)}"


def narrowest(most: int) -> str:
    """The type code of the unsigned integers of the fewest bytes that hold `most`;
    OverflowError for 2**64 or more."""
    for code in CODES:
        if most < _LIMITS[code]:
            return code
    raise OverflowError("a count of 2**64 or more")


def defer(packed: str, waiting: int, durations: list[int]) -> str:
    """`packed` (with `waiting` durations after it) and `durations` after them, in a segment
    of their own."""
    if not durations:
        return packed
    code = narrowest(max(durations))
    segment = f"{code}{_base64(array(code, durations))}"
    if not waiting:
        return f"{packed}:{len(durations)}:{segment}"
    front, _, segments = packed.rpartition(":")
    counts = front.rpartition(":")[0]
    return f"{counts}:{waiting + len(durations)}:{segments},{segment}"


def carried(packed: object) -> int:
    """How many durations `packed` says wait after its counts; ValueError unless it can be
    written back as it is, on a checkpoint's line (ASCII, no tab, no newline), in its
    parts (two or four colons, a number of durations from 1, of three digits at most). All
    else is checked when it is decoded."""
    if type(packed) is not str or not packed.isascii() or "\t" in packed or "\n" in packed:
        raise ValueError("histogram counts")
    first = packed.find(":")  # each found in C, not counted
    second = -1 if first < 0 else packed.find(":", first + 1)
    third = -1 if second < 0 else packed.find(":", second + 1)
    if second < 0:
        raise ValueError("histogram counts")
    if third < 0:
        return 0
    fourth = packed.find(":", third + 1)
    waiting = packed[third + 1 : fourth]
    if fourth < 0 or packed.find(":", fourth + 1) >= 0 or not 0 < len(waiting) <= 3:
        raise ValueError("histogram counts")
    if not waiting.isdigit() or waiting[0] == "0":  # as defer writes it: one or more
        raise ValueError("histogram counts")
    return int(waiting)


def unpack(packed: object) -> tuple[int, array[int], list[int]]:
    """The first bucket's index, the counts and the durations that wait; ValueError unless
    `pack` and `defer` could have written it: canonical base64 of whole counts, as many as
    the fine buckets from the first, then segments of canonical base64 of whole durations,
    as many as it says, at most DEFERRED_MAX, each one a log line may hold."""
    try:
        says = carried(packed)
        if type(packed) is not str:  # carried() has said so: this tells the type checker
            raise TypeError
        first, _, rest = packed.partition(":")  # not split: the text is long
        code, _, rest = rest.partition(":")
        text, more, rest = rest.partition(":")
        counts = _numbers(code, text)
        if not (first.isdigit() and len(first) <= 4 and int(first) + len(counts) <= FINE_MAX):
            raise ValueError
        waiting: list[int] = []
        if more:
            segments = rest.partition(":")[2].split(",")
            if not len(segments) <= says <= DEFERRED_MAX:  # each holds one or more
                raise ValueError
            for segment in segments:
                durations = _numbers(segment[:1], segment[1:])
                if not durations:
                    raise ValueError
                waiting += durations
            if not (len(waiting) == says and max(waiting) < _DURATION_LIMIT):
                raise ValueError
        return int(first), counts, waiting
    except (TypeError, ValueError):
        raise ValueError("histogram counts") from None


def encoded(numbers: array[Any]) -> bytes:
    """The numbers of an array, little-endian, in base64 (one C-level pass)."""
    if sys.byteorder == "big":
        numbers = array(numbers.typecode, numbers)
        numbers.byteswap()
    return b2a_base64(numbers, newline=False)


def decoded(code: str, text: str | bytes) -> array[Any]:
    """The numbers `encoded` wrote as array type `code`; ValueError unless `text` is the
    canonical base64 of whole numbers of it (the decoder skips what it does not know:
    what it reads is written again)."""
    data = a2b_base64(text)
    if b2a_base64(data, newline=False) != (text.encode() if type(text) is str else text):
        raise ValueError("not as packed")
    numbers = array(code)
    numbers.frombytes(data)  # ValueError unless whole numbers
    if sys.byteorder == "big":
        numbers.byteswap()
    return numbers


def _base64(numbers: array[int]) -> str:
    return encoded(numbers).decode()


def _numbers(code: str, text: str) -> array[int]:
    """Counts or durations packed as `code`, one of CODES (ValueError for another)."""
    if code not in CODES:
        raise ValueError(code)
    return decoded(code, text)
