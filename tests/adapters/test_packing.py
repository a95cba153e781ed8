"""Numbers as a checkpoint packs them: counts in the fewest bytes that hold them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.packing import packed, packed_counts, unpacked, unpacked_counts


@pytest.mark.parametrize(
    ("largest", "code"),
    [(0, b"B"), (255, b"B"), (256, b"H"), (65_535, b"H"), (65_536, b"I"), (2**32, b"Q")],
)
def test_counts_take_the_fewest_bytes_that_hold_the_largest(largest: int, code: bytes) -> None:
    """Most counts a checkpoint holds are small: a byte each, not eight."""
    text = packed_counts([1, largest, 0])
    assert text[:1] == code
    assert unpacked_counts(text) == [1, largest, 0]
    assert packed_counts([]) == b"B"
    assert unpacked_counts(b"B") == []


@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=70))
def test_counts_come_back_exactly(counts: list[int]) -> None:
    assert unpacked_counts(packed_counts(counts)) == counts


@pytest.mark.parametrize("count", [-1, 2**64])
def test_a_count_no_unsigned_64_bit_integer_holds_is_refused(count: int) -> None:
    with pytest.raises(OverflowError):
        packed_counts([1, count])


@pytest.mark.parametrize(
    "text",
    [
        b"",  # no type code
        b"AQID",  # base64 alone
        b"bAQID",  # a type code of signed integers
        b"dAAAAAAAAAAA=",  # of doubles
        b"HAQID",  # three bytes: not whole counts of two
        b"BAQ ID",  # not base64
        b"BAQJ=",  # not canonical (bits past the data)
    ],
)
def test_text_packed_counts_could_not_have_written_is_refused(text: bytes) -> None:
    with pytest.raises(ValueError, match=r"as packed|whole|bytes|multiple"):
        unpacked_counts(text)


def test_doubles_come_back_exactly_nan_included() -> None:
    values = [0.1, 1.8e9 + 0.123456, float("inf")]
    assert unpacked("d", packed("d", values)) == values
    (nan,) = unpacked("d", packed("d", [float("nan")]))
    assert nan != nan  # noqa: PLR0124 - NaN, alone unequal to itself
