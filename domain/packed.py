"""Fine buckets as a checkpoint holds them, `FIRST:CODE:BASE64[:DURATIONS]`: packed counts,
then the durations counted since and not yet placed among them.

A `stats` that reads an hour's new lines shows no quantile: it needs the exported
buckets of the histograms those lines touch, not their fine ones. So the fine buckets
it read are written back as they were, the new durations after them (`defer`), and
are decoded and counted only when something needs them, or when DEFERRED_MAX durations
wait (see domain.histogram). Like an aggregate a checkpoint keeps, the text is checked
when it is decoded (`unpack`), not when it is read: until then it is only carried.
"""

from __future__ import annotations

import sys
from array import array
from binascii import a2b_base64, b2a_base64

from domain.buckets import FINE_MAX

DEFERRED_MAX = 256
"""Durations written after the packed counts at most: past that they are counted in."""

CODES = ("B", "H", "I", "Q")
"""Array type codes of unsigned integers, from the fewest bytes a count takes to the most."""
_SIZES = {code: array(code).itemsize for code in CODES}
_LIMITS = {code: 1 << (8 * size) for code, size in _SIZES.items()}
"""The smallest count each type code cannot hold."""
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_SPARE = {0: _ALPHABET, 1: b"AEIMQUYcgkosw048", 2: b"AQgw"}
"""What the character before one or two `=` may be: one whose bits past the data are zero."""
_DIGITS = b"0123456789"
_DURATION_DIGITS = 14
"""A duration a log line may hold is below 10**14 milliseconds."""


def pack(first: int, counts: list[int] | array[int]) -> str:
    """Fine buckets as a checkpoint saves them, `FIRST:CODE:BASE64`: the first bucket's index,
    then the counts as unsigned integers of the fewest bytes that hold the largest (an
    array's type code), little-endian, in base64. Counts still packed as `unpack` read
    them are written in their own type (one that `pack` chose, or wider)."""
    data = counts if type(counts) is array else array(narrowest(max(counts, default=0)), counts)
    if sys.byteorder == "big":
        data = array(data.typecode, data)
        data.byteswap()
    return f"{first}:{data.typecode}:{b2a_base64(data, newline=False).decode()}"


def narrowest(most: int) -> str:
    """The type code of the unsigned integers of the fewest bytes that hold `most`;
    OverflowError for 2**64 or more."""
    for code in CODES:
        if most < _LIMITS[code]:
            return code
    raise OverflowError("a count of 2**64 or more")


def defer(packed: str, waiting: int, durations: list[int]) -> str:
    """`packed` (with `waiting` durations after it) and `durations` after them."""
    if not durations:
        return packed
    return f"{packed}{',' if waiting else ':'}{','.join(map(str, durations))}"


def carried(packed: object) -> int:
    """How many durations `packed` says wait after its counts; ValueError unless it can be
    written back as it is, on a checkpoint's line (ASCII, no tab, no newline), in its
    parts (two or three colons). All else is checked when it is decoded."""
    if type(packed) is not str or not packed.isascii() or "\t" in packed or "\n" in packed:
        raise ValueError("histogram counts")
    first = packed.find(":")  # each found in C, not counted
    second = -1 if first < 0 else packed.find(":", first + 1)
    third = -1 if second < 0 else packed.find(":", second + 1)
    if second < 0 or (third >= 0 and packed.find(":", third + 1) >= 0):
        raise ValueError("histogram counts")
    return packed.count(",", third) + 1 if third >= 0 else 0


def checked(packed: object) -> int:
    """How many durations wait after the counts in `packed`; ValueError unless `pack` and
    `defer` could have written it (canonical base64 of whole counts, as many as the fine
    buckets from the first, and at most DEFERRED_MAX durations a log line may hold):
    checked without decoding it, so that decoding it then cannot fail."""
    try:
        if type(packed) is not str:
            raise TypeError
        first, colon, rest = packed.partition(":")  # not split: the text is long, has none
        code, again, rest = rest.partition(":")
        text, more, waiting = rest.partition(":")
        data = text.encode("ascii")  # UnicodeEncodeError, a ValueError, past ASCII
        body = data.rstrip(b"=")
        spare = len(data) - len(body)
        size = len(data) // 4 * 3 - spare
        if not (
            colon
            and again
            and code in CODES
            and first.isascii()
            and first.isdigit()
            and len(first) <= 4
            and len(data) % 4 == 0
            and spare <= 2
            and not body.translate(None, _ALPHABET)
            and (not spare or body[-1:] in _SPARE[spare])
            and size % _SIZES[code] == 0
            and int(first) + size // _SIZES[code] <= FINE_MAX
        ):
            raise ValueError
        return _waiting(waiting.encode("ascii")) if more else 0
    except (TypeError, ValueError):
        raise ValueError("histogram counts") from None


def _waiting(text: bytes) -> int:
    """How many durations `text` lists (decimal, comma-separated); ValueError unless it is
    what `defer` writes."""
    durations = text.split(b",")
    lengths = list(map(len, durations))
    if (
        text.translate(None, _DIGITS + b",")
        or len(durations) > DEFERRED_MAX
        or max(lengths) > _DURATION_DIGITS
        or min(lengths) < 1
    ):
        raise ValueError
    return len(durations)


def unpack(packed: str) -> tuple[int, array[int], list[int]]:
    """The first bucket's index, the counts and the durations that wait; ValueError unless
    `checked` accepts the text."""
    checked(packed)
    first, _, rest = packed.partition(":")
    code, _, rest = rest.partition(":")
    text, more, waiting = rest.partition(":")
    counts = array(code)
    counts.frombytes(a2b_base64(text))
    if sys.byteorder == "big":
        counts.byteswap()
    return int(first), counts, list(map(int, waiting.split(","))) if more else []
