"""Compact ASCII JSON read and written by the json module's own C reader and writer, without
importing the json package, whose import compiles six regular expressions: a fifth of
what `stats`' imports cost when it reads a few new lines and rewrites its checkpoint.

`dumps` writes what `json.dumps(value, separators=(",", ":"))` writes. `loads` reads a
document that `dumps` could have written: ASCII, with no space around it (anything else
raises ValueError); what it reads, `json.loads` reads the same way. `each_line` reads
lines of a log one by one, as `json.loads` reads each. An interpreter without the C
module (or with another form of it) is served by the json package itself.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable


class _Reading:
    """What the C reader asks of its json.JSONDecoder: the defaults of `json.loads`."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity, as json.loads reads them


def _unknown(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _build() -> tuple[Callable[[str, int], tuple[object, int]], Callable[[object], str]]:
    """The reader (a document's value and where it ends) and the writer."""
    try:
        from _json import (  # noqa: PLC0415 - or json, below
            encode_basestring_ascii,
            make_encoder,
            make_scanner,
        )

        scan = make_scanner(_Reading())  # type: ignore[arg-type] # any object with its fields
        encoder = make_encoder(
            {}, _unknown, encode_basestring_ascii, None, ":", ",", False, False, True
        )
        if "".join(encoder([0.5, {"a": None}], 0)) == '[0.5,{"a":null}]':
            return scan, lambda value: "".join(encoder(value, 0))
    except (ImportError, TypeError):
        pass
    import json  # noqa: PLC0415 - another interpreter, or another form of _json

    return json.JSONDecoder().raw_decode, json.JSONEncoder(separators=(",", ":")).encode


_scan, _encode = _build()


def loads(data: bytes | memoryview) -> object:
    """The value of the JSON document in `data`; ValueError when it is not one `dumps` writes
    (UnicodeDecodeError for a byte that is not ASCII)."""
    text = str(data, "ascii")
    try:
        try:
            value, end = _scan(text, 0)
        except SystemError:
            value, end = _reported(text)
    except StopIteration as stop:
        raise ValueError(f"no JSON value at {stop.value}") from None
    if end != len(text):
        raise ValueError(f"more than one JSON value: extra data at {end}")
    return value


def _reported(text: str) -> tuple[object, int]:
    """Read `text` again once json.decoder is imported: before Python 3.13 the C reader
    raises a syntax error as json.decoder.JSONDecodeError, which it finds only when that
    module has been imported; before, it fails with a SystemError that says nothing. Only
    a malformed document pays for the import (`each_line` leaves such a line to json.loads)."""
    import json.decoder  # noqa: PLC0415, F401 - only for a malformed document

    return _scan(text, 0)


def dumps(value: object) -> bytes:
    """`value` as compact ASCII JSON; TypeError for what JSON cannot hold, ValueError for a
    value that holds itself."""
    return _encode(value).encode()


def each_line(chunk: bytes) -> list[object]:
    """The value of each line of `chunk` (lines joined by newlines) that is one JSON document
    from its first byte to its last, in UTF-8: what `json.loads` reads from that line. None
    for any other line (and for `null`): json.loads may still read it (spaces around it, a
    byte order mark, UTF-16), so its caller asks json.loads. Each line is read alone: a
    value that runs across lines is none."""
    try:
        lines = str(chunk, "utf-8").split("\n")
    except UnicodeDecodeError:
        return [None] * (chunk.count(b"\n") + 1)
    values: list[object] = []
    for line in lines:
        try:
            value, end = _scan(line, 0)
        except (StopIteration, ValueError, RecursionError, SystemError):  # see _reported
            value, end = None, -1
        values.append(value if end == len(line) else None)
    return values
