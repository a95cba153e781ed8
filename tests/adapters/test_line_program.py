"""The line pattern built from its program compiled beforehand is the one `re` compiles."""

from __future__ import annotations

import re
from binascii import crc32

import pytest
from pytest_mock import MockerFixture

import adapters.lines
from adapters import line_form, line_program
from adapters.jsonl import attempt_line
from adapters.line_form import POSSESSIVE, RUNNER_LINE_PATTERN, prebuilt, runner_line
from adapters.lines import LineReader
from domain.attempts import AttemptRecord
from domain.stats import Summary

pytestmark = pytest.mark.skipif(not POSSESSIVE, reason="no line pattern before Python 3.11")

REGENERATE = "run packaging/line_program.py with every Python to serve"

LINES = b"\n".join(
    [
        attempt_line(AttemptRecord(1.7e9, ["sh", "-c", 'echo "\\u00e9"'], 2, 1, 30, "r1"))[:-1],
        attempt_line(AttemptRecord(1.7e9, ["x"], 1, 0, 3, "r2", name="n", delay_ms=5))[:-1],
        attempt_line(AttemptRecord(1.7e9, ["x"], 1, 124, 9, "r3", timed_out=True, signal=9))[:-1],
        b'{"ts":"t","cmd":[],"attempt":1,"rc":0,"duration_ms":0,"run_id":""}',
        b'{"ts":"t","cmd":["a"],"attempt":0,"rc":0,"duration_ms":0,"run_id":""}',
        b'{"ts":"t","cmd":["\\x"],"attempt":1,"rc":0,"duration_ms":0,"run_id":""}',
        b'{"ts":"t","cmd":["a"],"attempt":1,"rc":1000,"duration_ms":0,"run_id":""} ',
        b"",
        b"not json",
    ]
)
"""The runner's lines; one the pattern takes whose `ts` is checked later, when read; and
lines it must refuse (an attempt 0, a bad escape, an rc out of range, a space after the
object, none, not JSON)."""


def compiled_by_re() -> list[int]:
    from re import _compiler, _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(RUNNER_LINE_PATTERN, re.MULTILINE)
    return [int(word) for word in _compiler._code(parsed, re.MULTILINE)]


def test_the_program_is_what_re_compiles_on_this_interpreter() -> None:
    """Run where it would be used: this engine is among the program's, and `re` makes the
    same program of the same pattern here. Fails once the pattern or the engine changes."""
    import _sre  # type: ignore[import-not-found]

    assert _sre.MAGIC in line_program.ENGINES, REGENERATE
    assert crc32(RUNNER_LINE_PATTERN) == line_program.PATTERN_CRC, REGENERATE
    assert list(map(int, line_program.PROGRAM.split())) == compiled_by_re(), REGENERATE
    by_re = re.compile(RUNNER_LINE_PATTERN, re.MULTILINE)
    assert (by_re.flags, by_re.groups) == (line_program.FLAGS, line_program.GROUPS)


def test_the_pattern_built_from_it_reads_as_the_one_re_compiles() -> None:
    built = prebuilt()
    assert built is not None
    by_re = re.compile(RUNNER_LINE_PATTERN, re.MULTILINE)
    assert (built.pattern, built.flags, built.groups) == (by_re.pattern, by_re.flags, by_re.groups)
    assert built.findall(LINES) == by_re.findall(LINES)
    assert len(built.findall(LINES)) == 4  # the runner's three, and one with a `ts` to read later


@pytest.mark.parametrize(
    ("name", "value"),
    [("ENGINES", ()), ("PATTERN_CRC", 0), ("PROGRAM", "14 4 0 1"), ("PROGRAM", "x")],
)
def test_another_engine_pattern_or_program_is_compiled_by_re(
    monkeypatch: pytest.MonkeyPatch, name: str, value: object
) -> None:
    """An engine the program was not made for, a pattern changed since, or a program the
    engine refuses: `re` compiles the pattern, which reads as before."""
    monkeypatch.setattr(line_program, name, value)
    monkeypatch.setattr(line_form, "_built", [])
    monkeypatch.setattr(line_form, "_compiled", [])
    assert prebuilt() is None
    pattern = runner_line()
    assert pattern is not None
    assert pattern.findall(LINES) == re.compile(RUNNER_LINE_PATTERN, re.MULTILINE).findall(LINES)


@pytest.mark.parametrize(
    ("built", "lines", "fast"),
    [(True, 99, False), (True, 100, True), (False, 999, False), (False, 1000, True)],
)
def test_a_batch_is_read_with_the_pattern_from_as_many_lines_as_it_pays(
    mocker: MockerFixture, built: bool, lines: int, fast: bool
) -> None:
    """From FAST_FROM lines where the pattern is built from its program, from COMPILED_FROM
    where `re` must compile it; each line of a smaller batch by the json module's C reader.
    Either way, every line is read."""
    if not built:
        mocker.patch.object(adapters.lines, "prebuilt", return_value=None)
    pattern = mocker.patch.object(adapters.lines, "runner_line", wraps=runner_line)
    reader = LineReader(Summary(), "cmd")
    record = AttemptRecord(1.7e9, ["x"], 1, 0, 3, "r")
    reader.feed(b"".join(attempt_line(record) for _ in range(lines))[:-1], lines)
    assert pattern.called == fast
    assert (reader.lines, reader.malformed, reader.summary.by_key["x"].runs) == (lines, 0, lines)
