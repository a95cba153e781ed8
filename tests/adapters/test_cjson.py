"""Compact JSON through the json module's C reader and writer: the same text as json.dumps,
the same values as json.loads, and the json package itself where the C module is missing."""

from __future__ import annotations

import importlib
import json
import math
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters import cjson
from tests.procs import ROOT

SCALARS = (
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=8)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
"""What JSON holds: NaN and the infinities too (json writes and reads them), any text."""


def same(left: object, right: object) -> bool:
    """Equal, NaN equal to NaN."""
    return json.dumps(left) == json.dumps(right)


@pytest.fixture(params=["C", "json"])
def either(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The C reader and writer, then the json package as an interpreter without _json has."""
    if request.param == "json":
        monkeypatch.setitem(sys.modules, "_json", None)  # import _json raises ImportError
        importlib.reload(cjson)
        assert "JSONDecoder" in repr(cjson._scan)
    yield
    monkeypatch.undo()
    importlib.reload(cjson)


@pytest.mark.usefixtures("either")
@given(VALUES)
def test_it_writes_what_json_dumps_writes_and_reads_it_back(value: object) -> None:
    written = cjson.dumps(value)
    assert written == json.dumps(value, separators=(",", ":")).encode()
    assert written.isascii()
    assert same(cjson.loads(written), value)


@pytest.mark.usefixtures("either")
@given(st.text(alphabet='{}[],:"\\ 0123456789.eE+-truefalsnNIfiy\x01é', max_size=24))
def test_what_it_reads_json_loads_reads_the_same(text: str) -> None:
    data = text.encode()
    try:
        value = cjson.loads(data)
    except (ValueError, RecursionError):
        return
    assert same(value, json.loads(data))


@pytest.mark.usefixtures("either")
@pytest.mark.parametrize(
    "data", [b"", b" 1", b"1 ", b"1\n", b"[1] [2]", b'"\xc3\xa9"', b"{", b"nul", b"\xff"]
)
def test_anything_dumps_could_not_have_written_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match=r"JSON value|extra data|Expecting|codec"):
        cjson.loads(data)


@pytest.mark.usefixtures("either")
def test_what_json_cannot_hold_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="bytes is not JSON serializable"):
        cjson.dumps({"a": [b"x"]})
    with pytest.raises(TypeError):
        cjson.dumps({(1, 2): 3})


@pytest.mark.usefixtures("either")
def test_nan_and_the_infinities_come_and_go_as_in_json() -> None:
    assert cjson.dumps([math.nan, math.inf, -math.inf]) == b"[NaN,Infinity,-Infinity]"
    assert same(cjson.loads(b"[NaN,Infinity,-Infinity]"), [math.nan, math.inf, -math.inf])


def test_stats_reads_a_checkpoint_without_the_json_package() -> None:
    """The point of it: what a repeat loads has no json package in it (run in a fresh
    interpreter, since this one has long imported it)."""
    import subprocess

    code = (
        f"import sys; sys.path.insert(0, {ROOT!r});"
        "import adapters.saved, adapters.lines, adapters.checkpoint, entrypoints.stats;"
        "print('json' in sys.modules)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "False"


PIECES = '{}[],:"\\ 0123456789.eE+-truefalsnNIfiy\x00\x01\t\r\xe9\ufeff'
LINE = st.text(alphabet=PIECES, max_size=16)
"""A line of JSON's pieces, and what json.loads may still read around them: spaces, a NUL,
a byte order mark."""


@pytest.mark.usefixtures("either")
@given(st.lists(LINE.map(str.encode) | st.binary(max_size=8), min_size=1, max_size=6))
def test_each_line_reads_what_json_loads_reads_from_that_line(lines: list[bytes]) -> None:
    lines = [line.replace(b"\n", b"") for line in lines]
    values = cjson.each_line(b"\n".join(lines))
    assert len(values) == len(lines)
    for line, value in zip(lines, values, strict=True):
        if value is not None:
            assert same(value, json.loads(line))


@pytest.mark.usefixtures("either")
@given(st.lists(VALUES, min_size=1, max_size=5), st.booleans())
def test_each_line_reads_every_line_json_dumps_writes(values: list[object], ascii: bool) -> None:
    """In UTF-8 too, not only in ASCII: a log holds lines of other writers."""
    lines = [json.dumps(value, ensure_ascii=ascii, separators=(",", ":")) for value in values]
    read = cjson.each_line("\n".join(lines).encode())
    assert all(same(got, value) for got, value in zip(read, values, strict=True))


@pytest.mark.usefixtures("either")
def test_each_line_is_read_alone() -> None:
    """A value cut across two lines is none (lines beside a line of two objects once made as
    many values as lines when they were read as one array); a chunk that is not UTF-8 is
    left whole to json.loads."""
    assert cjson.each_line(b'{"a":[1,\n2]}\n{"b":1},{"c":1}\n{"d":1}\n') == [
        *(None, None, None),
        {"d": 1},
        None,
    ]
    assert cjson.each_line(b'{"a":1}\n\xff\n2') == [None, None, None]


@pytest.mark.parametrize("data", [b"{", b'"\\x"', b"[1}", b'{"a" 1}'])
def test_a_syntax_error_is_a_value_error_before_json_is_imported(data: bytes) -> None:
    """Regression: before Python 3.13 the C reader raises its syntax errors through
    json.decoder, found only once imported: without it, a SystemError (an internal error on
    a checkpoint or a log line that is not JSON). In a fresh interpreter, as stats runs."""
    import subprocess

    code = (
        f"import sys; sys.path.insert(0, {ROOT!r}); from adapters import cjson\n"
        "print(cjson.each_line(sys.argv[1].encode() + b'\\n1'))\n"
        "try: cjson.loads(sys.argv[1].encode())\n"
        "except ValueError as error: print(type(error).__name__)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code, data.decode()], capture_output=True, text=True, check=True
    ).stdout
    assert shown.split() == ["[None,", "1]", "JSONDecodeError"]
