"""Marks of where times begin in a log: kept few, and never a line of the window missed."""

from __future__ import annotations

import random

import pytest

from domain.marks import MOST, SPACING, added, carried, start, thinned, valid


def test_a_mark_is_added_only_where_the_log_grew() -> None:
    assert added([], 5.0, 0) == []
    assert added([], 5.0, 100) == [5.0, 100.0]
    assert added([5.0, 100.0], 9.0, 100) == [5.0, 100.0]
    assert added([5.0, 100.0], 9.0, 50) == [5.0, 100.0]


def test_a_mark_carries_the_latest_start_before_it() -> None:
    """Lines written after others may have started earlier (a long attempt): the mark after
    them still says when the latest line before it started."""
    marks = added([50.0, 100.0], 20.0, 180)
    assert marks == [50.0, 100.0, 50.0, 180.0]
    assert start(marks, 40.0) == 0
    assert start(marks, 50.0) == 0
    assert start(marks, 50.5) == 180


def test_reading_on_carries_the_marks_only_from_where_they_end() -> None:
    """From the start of a log (first read, or rotated), a mark says when the lines read
    started; read on from the last mark, it says that or the last mark's time; read on
    from where no mark is (a checkpoint kept before marks were), the latest of all lines
    counted, since those before were not read now."""
    assert carried(None, 0, 50.0, 90.0, 100) == [50.0, 100.0]
    position: dict[str, object] = {"offset": 100, "marks": [50.0, 100.0]}
    assert carried(position, 100, 70.0, 90.0, 160) == [50.0, 100.0, 70.0, 160.0]
    assert carried(position, 100, 20.0, 90.0, 160) == [50.0, 100.0, 50.0, 160.0]
    assert carried({"offset": 100}, 100, 20.0, 90.0, 160) == [90.0, 160.0]
    assert carried({"offset": 120, "marks": [50.0, 100.0]}, 120, 20.0, 90.0, 160) == [
        90.0,
        160.0,
    ]
    assert carried(position, 0, 20.0, 90.0, 40) == [20.0, 40.0]  # rotated: a new file


def test_a_window_starts_at_the_latest_mark_strictly_before_it() -> None:
    marks = [10.0, 100.0, 20.0, 200.0, 30.0, 300.0]
    assert [start(marks, since) for since in (5, 10, 10.5, 20, 25, 30, 31)] == [
        0,
        0,
        100,
        100,
        200,
        200,
        300,
    ]


def test_marks_made_all_year_stay_few_and_close_to_every_window() -> None:
    """A stats every ten minutes (lines in most of them) for a year: about a hundred marks,
    and a window of any length is read from at most one SPACING-th of it, or ten minutes,
    before it."""
    rng = random.Random(7)
    marks: list[float] = []
    offset, minute, most = 0, 60.0, 0
    year = 365 * 24 * 60
    for now_minute in range(0, year, 10):
        offset += rng.randrange(0, 3) * 120
        marks = added(marks, now_minute * minute, offset)
        most = max(most, len(marks) // 2)
    assert most < 150  # as domain.marks says
    assert valid(marks, offset)
    now = marks[-2]
    times = dict(zip(marks[1::2], marks[0::2], strict=True))
    for age in [rng.uniform(60, year * minute) for _ in range(2000)]:
        since = now - age
        found = start(marks, since)
        if found:
            assert times[found] < since
            assert since - times[found] <= max(age / SPACING, 10 * minute)


def test_thinning_keeps_the_oldest_and_the_newest() -> None:
    marks = [float(n) for pair in zip(range(100), range(1, 101), strict=True) for n in pair]
    kept = thinned(marks)
    assert kept[:2] == marks[:2]
    assert kept[-2:] == marks[-2:]
    assert len(kept) < len(marks)


@pytest.mark.parametrize(
    "marks",
    [
        [1.0],
        [1.0, 10.0, 3.0],
        [1.0, 10.5],
        [1.0, 0.0],
        [1.0, 101.0],
        [2.0, 10.0, 1.0, 20.0],
        [1.0, 20.0, 2.0, 20.0],
        [1.0, 20.0, 2.0, 10.0],
        [float("nan"), 10.0],
        [1.0, 10.0, float("nan"), 20.0],
        [float("inf"), 10.0],
        [float("-inf"), 10.0],
        [1e16, 10.0],
        [float(n) for m in range(MOST + 1) for n in (m, m + 1)],
    ],
)
def test_marks_not_as_kept_are_refused(marks: list[float]) -> None:
    assert not valid(marks, 100)


def test_marks_as_kept_are_taken() -> None:
    assert valid([], 0)
    assert valid([1.0, 10.0, 1.0, 20.0, 3.0, 100.0], 100)
    many = [float(n) for m in range(500) for n in (m, m + 1)]
    assert valid(thinned(many), 500)
