"""The fast reader for the runner's own line form reads every line as json.loads would."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.jsonl import attempt_line
from adapters.line_form import MAYBE_OBJECT, POSSESSIVE, runner_line
from adapters.lines import LineReader, _decode
from domain.attempts import AttemptRecord
from domain.stats import Summary
from domain.words import KEY_MAX

LONG = "y" * 1500
"""A word longer than a key may be (KEY_MAX)."""

words = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["true", "-c", "echo $HOME", "\x1b[2J", "\\", '"', "\u2028", "\ud800", LONG, LONG + "z"]
)

records = st.builds(
    AttemptRecord,
    started=st.floats(min_value=0, max_value=4e9, allow_nan=False),
    cmd=st.lists(words, min_size=1, max_size=4),
    attempt=st.integers(min_value=1, max_value=5),
    rc=st.integers(min_value=0, max_value=255),
    duration_ms=st.integers(min_value=0, max_value=10**9),
    run_id=st.sampled_from(["a", "b", "c", "0123456789abcdef"]),
    name=st.none() | words,
    delay_ms=st.none() | st.integers(min_value=0, max_value=10**6),
    token=st.none() | st.integers(min_value=1, max_value=10**6),
    timed_out=st.booleans(),
    signal=st.none() | st.sampled_from([9, 15, 64]),
)


def by_json(lines: list[bytes], by: str) -> LineReader:
    """The reference: every line decoded by the json module."""
    reader = LineReader(Summary(), by)
    reader.lines = len(lines)
    for line in lines:
        reader._record(_decode(line))
    return reader


def by_feed(lines: list[bytes], by: str) -> LineReader:
    """The reader, with the pattern used for a batch of any size; and checked to read the
    same when the batch is read as a few lines are, line by line."""
    reader = LineReader(Summary(), by, fast_from=1)
    reader.feed(b"\n".join(lines), len(lines))
    few = LineReader(Summary(), by, fast_from=len(lines) + 1)
    few.feed(b"\n".join(lines), len(lines))
    same(few, reader)
    return reader


def same(first: LineReader, second: LineReader) -> None:
    assert (first.lines, first.malformed) == (second.lines, second.malformed)
    assert first.summary.state() == second.summary.state()


@pytest.mark.skipif(not POSSESSIVE, reason="no line pattern before Python 3.11")
@settings(max_examples=300, deadline=None)
@given(st.lists(records, min_size=1, max_size=12), st.sampled_from(["cmd", "name"]))
def test_every_line_the_runner_writes_is_read_fast_and_as_json_reads_it(
    attempts: list[AttemptRecord], by: str
) -> None:
    lines = [attempt_line(attempt).rstrip(b"\n") for attempt in attempts]
    pattern = runner_line()
    assert pattern is not None
    assert all(pattern.fullmatch(line) for line in lines)
    same(by_feed(lines, by), by_json(lines, by))


@settings(max_examples=200, deadline=None)
@given(st.lists(records | st.just(None), min_size=1, max_size=12), st.sampled_from(["cmd", "name"]))
def test_empty_lines_among_the_runner_s_are_malformed_and_the_rest_read_fast(
    attempts: list[AttemptRecord | None], by: str
) -> None:
    """A batch holds empty lines as they come (runs of them from a damaged disk): each is a
    malformed line, and the runner's lines beside them are read as json.loads reads them."""
    lines = [b"" if one is None else attempt_line(one).rstrip(b"\n") for one in attempts]
    same(by_feed(lines, by), by_json(lines, by))


@settings(max_examples=2000, deadline=None)
@given(
    st.binary(max_size=12).map(lambda line: line.replace(b"\n", b""))
    | st.builds(
        lambda head, text: head + text.encode("utf-16-le" if head else "utf-32-le"),
        st.sampled_from([b"", b"\xff\xfe", b"x"]),
        st.sampled_from(['{"a":1}', "[1]", '"x"', "7", " {}"]),
    )
)
def test_a_line_taken_for_no_object_is_none(line: bytes) -> None:
    """What MAYBE_OBJECT leaves out, json.loads never reads as an object (in any encoding
    it detects), so leaving it undecoded changes no count."""
    if not re.fullmatch(MAYBE_OBJECT, line):
        assert not isinstance(_decode(line), dict)


PIECES = [
    *(b"", b'"', b"\\", b",", b"}", b"]", b"0", b"-", b" ", b"\x00", b"\xff", b"1e3", b"\\u0041"),
    *(b',"rc":1', b',"name":"x"', b',"delay_ms":5', b'"cmd":[1]', b"null", b"\n"),
]
"""What an edit puts in: quotes, escapes, structure, numbers, keys again, bytes not UTF-8."""

MEMBER = re.compile(rb',"(?:name|delay_ms|token|timed_out|signal|ping_failed)":[^,}]*')
"""An optional member: lines written before it existed lack it."""


@settings(max_examples=800, deadline=None)
@given(st.lists(records, min_size=1, max_size=6), st.data(), st.sampled_from(["cmd", "name"]))
def test_a_hostile_edit_of_a_runner_line_is_read_as_json_reads_it(
    attempts: list[AttemptRecord], data: st.DataObject, by: str
) -> None:
    """Cut, spliced or duplicated keys, bad numbers, members left out, bytes that are not
    UTF-8: whatever the fast pattern takes, json.loads takes the same way; the rest is left
    to json.loads. Edits land where they matter: at a value's start or end."""
    text = b"\n".join(attempt_line(attempt).rstrip(b"\n") for attempt in attempts)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        members = [(m.start(), m.end()) for m in MEMBER.finditer(text)]
        drop: bool = data.draw(st.booleans())
        if members and drop:
            start, end = data.draw(st.sampled_from(members))
            text = text[:start] + text[end:]
            continue
        places = [m.end() for m in re.finditer(rb'[:,\[{"]|[0-9]', text)] + [len(text)]
        at = data.draw(st.sampled_from(places))
        cut = data.draw(st.integers(min_value=0, max_value=2))
        text = text[:at] + data.draw(st.sampled_from(PIECES)) + text[at + cut :]
    if lines := [line for line in text.split(b"\n") if line]:
        same(by_feed(lines, by), by_json(lines, by))


LINE = attempt_line(AttemptRecord(1e9, ["job"], 1, 143, 5, "r", "n", 100, 7, signal=15)).rstrip(
    b"\n"
)
HOSTILE = [
    (b'"attempt":1,', b'"attempt":01,'),
    (b'"rc":143,', b'"rc":-0,'),
    (b'"rc":143,', b'"rc":143.0,'),
    (b'"duration_ms":5,', b'"duration_ms":5e0,'),
    (b'"rc":143,', b'"rc":-1,'),
    (b'"rc":143,', b'"rc":255,'),
    (b'"rc":143,', b'"rc":256,'),
    (b'"rc":143,', b'"rc":1000,'),
    (b'"attempt":1,', b'"attempt":0,'),
    (b'"attempt":1,', b'"attempt":999999999,'),
    (b'"attempt":1,', b'"attempt":1000000000,'),
    (b'"attempt":1,', b'"attempt":1000000001,'),
    (b'"duration_ms":5,', b'"duration_ms":9999999999999,'),
    (b'"duration_ms":5,', b'"duration_ms":10000000000000,'),
    (b'"duration_ms":5,', b'"duration_ms":10000000000001,'),
    (b'"duration_ms":5,', b'"duration_ms":-5,'),
    (b'"run_id":"r"', b'"run_id":"\\u0072"'),
    (b'"run_id":"r"', b'"run_id":"r","rc":1'),
    (b'"signal":"TERM"', b'"signal":""'),
    (b'"signal":"TERM"', b'"signal":null'),
    (b'"signal":"TERM"', b'"signal":"TE\x7fRM"'),
    (b',"signal":"TERM"', b""),
    (b'"name":"n"', b'"name":5'),
    (b'"name":"n"', b'"name":"\x01"'),
    (b'"name":"n"', b'"name":"\xff"'),
    (b'"cmd":["job"]', b'"cmd":[1]'),
    (b'"cmd":["job"]', b'"cmd":[]'),
    (b'"cmd":["job"]', b'"cmd":["job",]'),
    (b'"cmd":["job"]', b'"cmd":["j\\x"]'),
    (b"}", b"} "),
    (b"}", b"}\r"),
    (b'{"ts":"', b'{ "ts":"'),
    (b'"ts":"2001', b'"ts":"\\u0032001'),
]


@pytest.mark.parametrize(("old", "new"), HOSTILE)
@pytest.mark.parametrize("by", ["cmd", "name"])
def test_each_hostile_variant_is_read_as_json_reads_it(old: bytes, new: bytes, by: str) -> None:
    assert old in LINE
    lines = [LINE, LINE.replace(old, new, 1)]
    same(by_feed(lines, by), by_json(lines, by))


def test_lines_in_other_forms_beside_runner_lines_are_read_in_order() -> None:
    """An attempt written by hand (spaces, another key order) between the runner's own lines
    of the same run: the run is whole, its attempts in order."""
    first = attempt_line(AttemptRecord(1e9, ["job"], 1, 1, 5, "r", None, 100)).rstrip(b"\n")
    second = json.dumps(
        {"run_id": "r", "ts": "2001-09-09T01:46:41+00:00", "cmd": ["job"], "attempt": 2}
        | {"rc": 0, "duration_ms": 5}
    ).encode()
    lines = [first, second]
    reader = by_feed(lines, "cmd")
    same(reader, by_json(lines, "cmd"))
    job = reader.summary.finished()["job"]
    assert (job.runs, job.attempts, job.outcomes["success"]) == (1, 2, 1)


@pytest.mark.parametrize("by", ["cmd", "name"])
def test_a_key_is_bounded_and_long_lines_that_differ_stay_apart(by: str) -> None:
    """A command line (or name) longer than KEY_MAX is cut there, with a CRC of the whole:
    two that differ only past the cut are two keys, the same one is one."""
    lines = [
        attempt_line(
            AttemptRecord(1e9 + n, ["sh", "-c", word], 1, 0, 1, f"r{n}", name=word)
        ).rstrip(b"\n")
        for n, word in enumerate([LONG + "a", LONG + "b", LONG + "a"])
    ]
    for reader in (by_json(lines, by), by_feed(lines, by)):
        keys = reader.summary.by_key
        assert sorted(group.runs for group in keys.values()) == [1, 2]
        assert all(len(key) <= KEY_MAX + 20 for key in keys)
        assert all(key.endswith("]") and "...[crc32 " in key for key in keys)


FORMS = [
    ("2026-12-01T00:00:00+00:00", 1796083200.0),
    ("2026-12-01T00:00:00Z", 1796083200.0),
    ("2026-12-01T00:00:00.5+00:00", 1796083200.5),
    ("2026-12-01T00:00:00.123Z", 1796083200.123),
    ("2026-12-01T00:00:00.123456789-01:00", 1796086800.123456),
    ("2026-12-01T02:00:00+0200", 1796083200.0),
    ("2026-12-01T02:00:00+02", 1796083200.0),
    ("2026-12-01 00:00:00,25+00:00", 1796083200.25),
    ("2026-12-01T00:00Z", 1796083200.0),
]
"""Timestamps other writers put in a log (a `Z`, an offset without its colon, a fraction
of any length: JavaScript's toISOString, Go's RFC3339Nano, `date +%FT%T%z`)."""


@pytest.mark.parametrize(("stamp", "epoch"), FORMS)
def test_a_timestamp_reads_the_same_on_every_python(stamp: str, epoch: float) -> None:
    """Regression: on Python 3.10, `…Z`, `…+0200` and `….5` were malformed lines, which
    Python 3.11 reads: one log gave two counts. Every Python reads them as 3.11 does."""
    line = json.dumps(
        {"ts": stamp, "cmd": ["job"], "attempt": 1, "rc": 0, "duration_ms": 1, "run_id": "r"}
    ).encode()
    for reader in (by_json([line], "cmd"), LineReader(Summary(), "cmd", fast_from=1)):
        if reader.lines == 0:
            reader.feed(line, 1)
        assert reader.malformed == 0
        assert reader.summary.newest == pytest.approx(epoch, abs=1e-6)


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-12-01T25:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-12-01T00:00:00+24:00",
        "yesterday",
        "2026-12-01T00:00:00ZZ",
    ],
)
def test_a_timestamp_that_is_none_is_malformed_on_every_python(stamp: str) -> None:
    line = json.dumps(
        {"ts": stamp, "cmd": ["job"], "attempt": 1, "rc": 0, "duration_ms": 1, "run_id": "r"}
    ).encode()
    assert by_json([line], "cmd").malformed == 1


@pytest.mark.parametrize("by", ["cmd", "name"])
def test_lines_that_are_json_only_when_joined_are_each_malformed(by: str) -> None:
    """Regression: a batch of lines in no runner form was decoded as one JSON array, trusted
    when it held as many values as there were lines. An object cut across two lines, beside
    a line of two objects, made three runs of three malformed lines."""
    whole = LINE.decode()
    cut = whole[:-1] + ',"x":[{}'
    lines = [cut.encode(), b"{}]}", f"{whole},{whole}".encode()]
    for reader in (by_json(lines, by), by_feed(lines, by)):
        assert (reader.lines, reader.malformed) == (3, 3)
        assert reader.summary.finished() == {}
