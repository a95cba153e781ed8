"""One way to show a duration, for messages, busy locks and the stats table."""

from __future__ import annotations

import pytest

from domain.durations import human


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.0, "0ms"),
        (0.045, "45ms"),
        (0.2, "0.2s"),
        (0.25, "0.25s"),
        (1.39, "1.4s"),
        (12.25, "12s"),
        (59.4, "59s"),
        (59.6, "1m00s"),
        (192, "3m12s"),
        (7500, "2h05m"),
        (273600, "3d04h"),
    ],
)
def test_durations_read_as_a_person_writes_them(seconds: float, shown: str) -> None:
    assert human(seconds) == shown
