"""Fine buckets as a checkpoint holds them: packed counts and the durations that wait after
them, carried without being decoded, and decoded and checked only when something needs
them."""

from __future__ import annotations

import pickle
from array import array
from binascii import Error as Base64Error
from binascii import a2b_base64, b2a_base64

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pytest_mock import MockerFixture

import domain.histogram
import domain.packed
from domain.buckets import FINE_MAX
from domain.packed import DEFERRED_MAX, defer, pack, unpack
from tests.unit.test_stats import figures, saved, twin


def held(packed: object) -> int:
    """How many durations wait after the counts; ValueError unless defer could have
    written them."""
    return len(unpack(packed)[2])


DURATIONS = st.lists(st.integers(0, 10**13), max_size=40)


@given(st.integers(0, FINE_MAX - 30), st.lists(st.integers(0, 2**64 - 1), max_size=30))
def test_counts_and_the_durations_after_them_come_back(first: int, counts: list[int]) -> None:
    """Durations deferred once and again follow the counts, in the order they came."""
    packed = pack(first, counts)
    once = defer(packed, 0, [5, 10**13])
    twice = defer(once, 2, [0, 7])
    assert (held(packed), held(once), held(twice)) == (0, 2, 4)
    start, back, waiting = unpack(twice)
    assert (start, back.tolist(), waiting) == (first, counts, [5, 10**13, 0, 7])
    assert defer(packed, 0, []) == packed


def segment(code: str, durations: list[int]) -> str:
    """Durations as `defer` packs them: their type code, then their base64."""
    return code + b2a_base64(array(code, durations), newline=False).decode()


@pytest.mark.parametrize(
    "waiting",
    [
        "",  # a colon, and nothing after it
        segment("B", [1, 2]),  # no count
        f"3:{segment('B', [1, 2])}",  # not as many as it says
        f"x:{segment('B', [1, 2])}",
        f"02:{segment('B', [1, 2])}",
        f"0:{segment('B', [1])}",
        f"1:{segment('B', [1])}:",
        f"2:{segment('B', [1])},",  # an empty segment
        f"2:{segment('B', [1])},{segment('B', [1])[1:]}",  # one with no type code
        f"1:b{segment('B', [1])[1:]}",  # a type code of signed integers
        f"1:H{segment('B', [1])[1:]}",  # not whole numbers of its type
        "1:BAQ=",  # not canonical base64 (bits past the data)
        f"1:{segment('Q', [10**14])}",  # past any duration a log line holds
        f"{DEFERRED_MAX + 1}:{segment('B', [1] * (DEFERRED_MAX + 1))}",
        f"1000:{segment('B', [1] * 1000)}",
        f"2:{segment('B', [1, 2])},B",  # a segment of none
        ",".join([f"2:{segment('B', [1])}", segment("B", [1]), segment("B", [1])]),
    ],
)
def test_durations_defer_could_not_have_written_are_refused(waiting: str) -> None:
    with pytest.raises(ValueError, match="histogram"):
        held(f"{pack(3, [1, 2])}:{waiting}")
    valid = f"{pack(3, [1, 2])}:3:{segment('Q', [10**14 - 1])},{segment('B', [0, 255])}"
    assert held(valid) == 3


def test_more_segments_than_durations_are_refused_before_any_is_read(
    mocker: MockerFixture,
) -> None:
    """Each segment holds one duration or more: a text of more segments than it says it
    holds durations (a hundred thousand) is refused without a segment decoded."""
    decoded = mocker.spy(domain.packed, "_numbers")
    many = ",".join([segment("B", [1])] * 100_000)
    with pytest.raises(ValueError, match="histogram"):
        held(f"{pack(3, [1, 2])}:2:{many}")
    assert decoded.call_count == 1  # the counts


@given(st.text("AQgwBCDE+/=", max_size=14), st.sampled_from("BHIQ"))
def test_counts_are_checked_as_decoding_and_encoding_them_again_would(text: str, code: str) -> None:
    """The check reads no base64, yet accepts exactly what decodes to whole counts and
    encodes back the same (the form `pack` writes)."""
    try:
        data = a2b_base64(text)
        canonical = b2a_base64(data, newline=False) == text.encode()
    except Base64Error:
        canonical = False
    whole = canonical and len(data) % {"B": 1, "H": 2, "I": 4, "Q": 8}[code] == 0
    try:
        held(f"0:{code}:{text}")
    except ValueError:
        assert not whole
    else:
        assert whole


@given(DURATIONS, DURATIONS, DURATIONS)
def test_a_histogram_read_packed_is_written_back_as_read_the_new_durations_after(
    before: list[int], after: list[int], later: list[int]
) -> None:
    """A few new durations are counted in the exported buckets and written after the
    packed counts as they were read: nothing is decoded until a quantile is asked for,
    and then each duration is where it would have been."""
    written = str(twin(before).state()[0])
    loaded = saved(twin(before))
    for value in after:
        loaded.add(value)
    again = saved(loaded)
    for value in later:
        again.add(value)
    whole = twin(before + after + later)
    assert (again.le, again.count, again.total, again.maximum) == (
        whole.le,
        whole.count,
        whole.total,
        whole.maximum,
    )
    text = str(again.state()[0])
    if len(after) + len(later) <= DEFERRED_MAX:
        assert text.startswith(written)  # the counts as they were read
        assert unpack(text)[2] == after + later
    assert figures(again) == figures(whole)
    assert figures(pickle.loads(pickle.dumps(saved(loaded)))) == figures(twin(before + after))


def test_a_repeat_decodes_no_fine_buckets(mocker: MockerFixture) -> None:
    decoded = mocker.spy(domain.histogram, "unpack")
    loaded = saved(twin([5, 80, 3_600_000]))
    for value in (1, 5, 90_000):
        loaded.add(value)
    assert loaded.le == twin([5, 80, 3_600_000, 1, 5, 90_000]).le
    saved(loaded)
    assert decoded.call_count == 0
    assert loaded.quantile(0.5) == twin([5, 80, 3_600_000, 1, 5, 90_000]).quantile(0.5)
    assert decoded.call_count == 1


def test_durations_wait_after_the_counts_up_to_a_bound_then_are_counted_in() -> None:
    """However many repeats, a checkpoint holds at most DEFERRED_MAX durations a histogram;
    past that the fine buckets are decoded, counted in and packed anew."""
    whole: list[int] = []
    histogram = saved(twin([]))
    waited = []
    for repeat in range(12):
        batch = [repeat * 1000 + n for n in range(60)]
        whole += batch
        histogram.add_many(batch)
        histogram = saved(histogram)
        waited.append(held(histogram.state()[0]))
    assert max(waited) <= DEFERRED_MAX
    assert waited[:5] == [60, 120, 180, 240, 0]  # the fifth hour's would have been 300
    assert figures(histogram) == figures(twin(whole))
