"""Where a time begins in a log: marks, so that a --since window is read from near its start.

A mark (t, offset) says that every line before `offset` records an attempt that started
at `t` or earlier (t is the latest start time among them, by the log's own clock). A
window that begins after `t` therefore holds no line before `offset`, and is read from
there: exactly what reading the whole log would count, whatever the clocks did.

Each `stats` that reads on adds one mark; older marks are thinned so that they grow
sparser with age. Reading from the latest mark before a window's start reads at most
one SPACING-th of the window more than the window itself (or what was written between
two `stats`), and some 150 marks span a year of a log never rotated, read every minute.

Marks are one flat list, oldest first: t0, offset0, t1, offset1, … (as a checkpoint packs
them, doubles all; an offset is a whole number).
"""

from __future__ import annotations

SPACING = 8
"""A window of w seconds is read from a mark at most w / SPACING seconds before it."""
MOST = 1000
"""Marks kept at most, the newest (a clock that jumps about may defeat the thinning)."""
THIN_EVERY = 16
"""Marks are thinned when their number is a multiple of this: more marks only read less."""


def carried(
    position: dict[str, object] | None, start: int, read: float, ever: float, end: int
) -> list[float]:
    """The marks of a log read on from `start` to `end`: the position's, and one at `end`.
    Its lines started by the last mark's time (if it is at `start`) or `read`, the latest
    start among those read now; without a mark at `start`, by `ever`, the latest among all
    counted (the lines before `start` were not read now)."""
    marks = position.get("marks") if start and position else None
    if type(marks) is list and marks and marks[-1] == start:
        return added(marks, read, end)
    return added([], ever if start else read, end)


def added(marks: list[float], started: float, offset: int) -> list[float]:
    """`marks` with one more at `offset`, whose lines up to it are known to have started at
    `started` or before (the last mark's time is carried), thinned now and then. A mark at
    the start of the log, or where the last one is, adds nothing."""
    if offset <= (marks[-1] if marks else 0):
        return marks
    if marks and marks[-2] > started:
        started = marks[-2]
    more = [*marks, started, float(offset)]
    return thinned(more) if len(more) % (2 * THIN_EVERY) == 0 else more


def thinned(marks: list[float]) -> list[float]:
    """The marks to keep: the newest always; an older one only where dropping it would leave
    a gap wider than one SPACING-th of the age of the mark after the gap; MOST at most."""
    if len(marks) < 6:
        return marks
    newest = marks[-2]
    kept = [marks[-1], marks[-2]]  # backwards: offset, then time
    for index in range(len(marks) - 4, 0, -2):
        after, before = kept[-1], marks[index - 2]
        if (after - before) * SPACING > newest - after:
            kept += marks[index + 1], marks[index]
    kept += marks[1], marks[0]
    kept.reverse()
    return kept[-2 * MOST :]


def start(marks: list[float], since: float) -> int:
    """The offset to read a window that begins at `since` from: the latest mark's whose lines
    all started before `since`; 0 (the whole log) if none did."""
    found = 0.0
    for index in range(0, len(marks), 2):
        if marks[index] >= since:
            break
        found = marks[index + 1]
    return int(found)


def valid(marks: object, end: int) -> bool:
    """Whether `marks` (doubles, as unpacked) are marks as `added` keeps them up to the
    offset `end`: finite times that never fall, whole offsets that always grow, MOST at
    most. In C-level passes: a repeat checks them every time."""
    if type(marks) is not list or len(marks) % 2 or len(marks) > 2 * MOST:
        return False
    times, offsets = marks[0::2], marks[1::2]
    if not times:
        return True
    total = sum(times)  # NaN if any is
    return (
        total == total  # noqa: PLR0124 - false for NaN alone
        and times == sorted(times)
        and times[0] > -1e15
        and times[-1] < 1e15
        and offsets == sorted(set(offsets))
        and offsets[0] > 0
        and offsets[-1] <= end
        and all(map(float.is_integer, offsets))  # TypeError for what is not a double
    )
