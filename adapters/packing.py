"""Numbers as a checkpoint packs them: little-endian, in base64, written and read in one
C-level pass each way (a number written as text cost a call of `str`, and read, one of
`int` or `float`: more than the rest of what a repeat does with it); counts in the
fewest bytes that hold them."""

from __future__ import annotations

from array import array

from domain.packed import CODES, decoded, encoded, narrowest

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


NONE = float("nan")
"""Written for a figure there is none of: no figure a log gives is NaN."""


def or_none(values: list[float]) -> list[float | None]:
    """Doubles as `unpacked` read them, None for each NONE (NaN, alone unequal to itself)."""
    return [None if value != value else value for value in values]  # noqa: PLR0124


def packed(code: str, values: list[Any] | array[Any]) -> bytes:
    """`values` as numbers of the array type `code`; OverflowError for one it cannot hold."""
    return encoded(array(code, values))


def unpacked(code: str, text: bytes) -> list[Any]:
    """The numbers `packed` wrote as `code`; ValueError unless canonical base64 of whole ones
    (see domain.packed.decoded)."""
    return decoded(code, text).tolist()


def log_times(times: list[float]) -> bool:
    """Whether each of `times` (doubles as `unpacked` read them) is a time a log can give:
    within 1e15 seconds of the epoch, none NaN. Three C-level passes: the least, the
    greatest, and the sum, which is NaN if any is."""
    return (
        min(times, default=0.0) > -1e15 and max(times, default=0.0) < 1e15 and sum(times) * 0 == 0
    )


_CODE_OF = {code.encode(): code for code in CODES}


def packed_counts(counts: list[int]) -> bytes:
    """Whole numbers, none below zero, as unsigned integers of the fewest bytes that hold
    the largest (most counts are small: a quarter or an eighth of the bytes of 64-bit
    ones): that array type code, then `packed` of them. OverflowError for one below zero
    or of 2**64 or more."""
    code = narrowest(max(counts, default=0))
    return code.encode() + packed(code, counts)


def unpacked_counts(text: bytes) -> list[int]:
    """The counts `packed_counts` wrote; ValueError unless it wrote them so."""
    code = _CODE_OF.get(text[:1])
    if code is None:
        raise ValueError("not as packed")
    return unpacked(code, text[1:])
