"""The hand-written JSON encoder and timestamps."""

from __future__ import annotations

import json
import os
import time

import pytest
from freezegun import freeze_time
from hypothesis import given
from hypothesis import strategies as st

from adapters.jsonl import attempt_line, dumps, iso8601
from domain.attempts import AttemptRecord

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@given(values)
def test_encodes_what_json_decodes_back(value: object) -> None:
    """Any value round-trips through json.loads unchanged."""
    assert json.loads(dumps(value)) == value  # type: ignore[arg-type]


@given(st.text())
def test_strings_match_the_json_module(text: str) -> None:
    """Byte for byte what json.dumps writes, surrogates included."""
    assert dumps(text) == json.dumps(text)


def test_undecodable_argument_bytes_survive() -> None:
    """Arguments that are not UTF-8 arrive as surrogate escapes and are kept."""
    arg = os.fsdecode(b"\xff\xfe")
    assert json.loads(dumps([arg])) == [arg]


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.mark.usefixtures("utc")
@freeze_time("2026-11-29T10:33:40.123456+00:00")
def test_attempt_line_has_the_labs_keys_and_an_iso_timestamp() -> None:
    """ts, cmd, attempt, rc, duration_ms, run_id, and name for apply; one line. An rc of 124
    says whether the runner's timeout ended it."""
    line = attempt_line(AttemptRecord(time.time(), ["a", "b c"], 2, 124, 1500, "r1", "n"))
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert json.loads(line) == {
        "ts": "2026-11-29T10:33:40.123+00:00",
        "cmd": ["a", "b c"],
        "attempt": 2,
        "rc": 124,
        "duration_ms": 1500,
        "run_id": "r1",
        "name": "n",
        "timed_out": False,
    }


def test_iso8601_carries_the_local_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Local time with its UTC offset, parseable by datetime."""
    from datetime import datetime

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        stamp = iso8601(0.5)
    finally:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
    assert stamp == "1970-01-01T05:30:00.500+05:30"
    assert datetime.fromisoformat(stamp).timestamp() == 0.5


def test_int_enums_are_written_as_numbers() -> None:
    """An exit code that is an IntEnum member is a plain number in the log, on any Python."""
    from domain.errors import ExitStatus

    assert dumps([ExitStatus.NOT_FOUND]) == "[127]"
