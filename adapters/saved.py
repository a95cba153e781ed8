"""The checkpoint's file: a header, then each command's aggregate on a line of its own.

    {"version": 14, "crc": …}
    {"by": …, "position": …, "series": …, "open": …, "keys": [key, …], "last_runs": …,
     "export": {"path": …, "dev": …, "ino": …, "size": …, "mtime_ns": …, "labels": …,
                "lines": {"keys": {key: place, …}, "bounds": [offsets, …]}} or null, …}
    COUNTS<TAB>FIGURES<TAB>FINE<TAB>FINE<TAB>RECENT   (the first key's aggregate)
    …

Every line is ASCII; the first two are JSON, with numbers in bulk packed in it (see
adapters.packing): each key's last run as doubles (NaN for none) in `last_runs`, the
position's marks of where times begin in the log (domain.marks) as doubles, the open
runs by column (adapters.open_runs), and, for each family of the textfile, where each
place's lines start (and the last one's end) as counts (adapters.packing.packed_counts)
in `bounds`. Each aggregate's line is as adapters.aggregate_line writes it.
An aggregate is decoded only when something is added to it, or shown, and written back
as it was read while it is unchanged; `export` says where the textfile written last
holds each unchanged key's lines (its place among the series, and where each place's
lines start in each family), so that they are copied rather than rendered again (see
entrypoints.prometheus). A `stats` that reads a few new lines so decodes, renders and
encodes only the keys they touch, whatever the number of commands in the history. The
first line holds the CRC-32 of all the others: a file damaged in any byte is known at
once. Nothing in it is code to run. A checkpoint of version 8 (0.6) to 13 is carried
over: an aggregate's line that is a JSON object, its fine buckets in it or after a tab
each (version 11), is read as before (the fine buckets of versions 8 and 9, saved as
text, by domain.text_buckets); open runs as an array each (up to 13).
"""

from __future__ import annotations

from binascii import crc32

from adapters import aggregate_line, cjson
from adapters.open_runs import runs_of, writable
from adapters.packing import NONE, or_none, packed, packed_counts, unpacked, unpacked_counts
from domain import marks
from domain.aggregate import Aggregate
from domain.errors import Damaged
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

VERSION = 14


class Kept:
    """A key's aggregate as the file holds it (domain.ports.Saved): JSON, not read yet."""

    __slots__ = ("last_run", "state")

    def __init__(self, last_run: float | None, state: bytes | memoryview) -> None:
        self.last_run = last_run
        self.state = state

    def wake(self) -> Aggregate:
        try:
            data = bytes(self.state)
            if data[:1] != b"{":  # version 13 (a JSON object is of version 11 or before)
                return aggregate_line.read(data)
            head, *fine = data.split(b"\t")
            state = cjson.loads(head)
            if type(state) is not dict:
                raise TypeError(type(state).__name__)
            if fine:  # a line of version 11 (one all JSON is of version 10 or before)
                for name, packed in zip(FINE, fine, strict=True):
                    if state[name][0] != "":
                        raise ValueError("fine buckets in the JSON and after it")
                    state[name][0] = str(packed, "ascii")
            return Aggregate.from_state(state)
        except (ValueError, KeyError, IndexError, TypeError, RecursionError, OverflowError) as exc:
            raise Damaged(f"an aggregate does not hold together: {type(exc).__name__}") from None


class Loaded:
    """What a checkpoint file holds: its header's fields, and a Summary."""

    def __init__(self, header: dict[str, Any], summary: Summary) -> None:
        self.summary = summary
        self.lines: int = header["lines"]
        self.malformed: int = header["malformed"]
        self.series: list[str] = header["series"]
        self.position: dict[str, object] = header["position"]
        self.export: dict[str, Any] | None = header.get("export")
        self._check()

    def _check(self) -> None:
        """ValueError unless every field is of its kind (the aggregates are checked when
        they are read, the export's lines when they are copied)."""
        position, export = self.position, self.export
        if not -1e15 < self.summary.newest < 1e15:  # also false for NaN
            raise ValueError("newest")
        if not (_count(self.lines) and _count(self.malformed) and type(self.series) is list):
            raise ValueError("counts")
        if not all(type(label) is str for label in self.series):
            raise ValueError("series")
        if not (
            type(position) is dict
            and _count(position["dev"])
            and _count(position["ino"])
            and _count(position["offset"])
            and (position["head"] is None or type(position["head"]) is str)
            and type(position.get("log", "")) is str
            and marks.valid(position.get("marks", []), int(str(position["offset"])))
        ):
            raise ValueError("position")
        if export is not None and not (
            type(export) is dict
            and type(export["path"]) is str
            and all(_count(export[name]) for name in ("dev", "ino", "size", "mtime_ns"))
            and type(export["labels"]) is list
            and all(
                type(pair) is list and set(map(type, pair)) == {str} for pair in export["labels"]
            )
            and type(export["lines"]) is dict
        ):
            raise ValueError("export")


def read(raw: bytes, by: str) -> Loaded | None:
    """The checkpoint in `raw`, or None when it is of another version or grouping. Raises
    ValueError (or KeyError, TypeError, IndexError, AttributeError) when it is not one this
    module wrote whole; an aggregate is checked when it is read (Kept.wake)."""
    end = raw.find(b"\n")
    first = cjson.loads(raw[: end if end >= 0 else len(raw)])
    if type(first) is not dict:
        raise TypeError("first line")
    if first.get("version") == 7:  # one JSON document (0.5): read whole, once
        if first["by"] != by:
            return None
        summary = Summary.from_state(first["summary"])
        writable(summary.open)
        return Loaded(first, summary)
    version = first.get("version")
    if version not in (8, 9, 10, 11, 13, VERSION):
        return None
    if crc32(memoryview(raw)[end + 1 :]) != first.get("crc"):
        raise ValueError("its CRC does not match")
    second = raw.find(b"\n", end + 1)
    header = cjson.loads(memoryview(raw)[end + 1 : second if second >= 0 else len(raw)])
    if type(header) is not dict:
        raise TypeError("header")
    if header["by"] != by:
        return None
    keys = header["keys"]
    states = _lines(raw, second + 1, len(keys)) if type(keys) is list and second > 0 else None
    if states is None:
        raise ValueError("keys")
    if version >= 13:
        times = or_none(unpacked("d", header["last_runs"].encode()))  # AttributeError unless text
        last_runs = list(map(_when, times))
        header["export"] = _unpacked_bounds(header["export"])
        position = header["position"]
        if type(position) is dict and "marks" in position:  # AttributeError unless text
            position["marks"] = unpacked("d", position["marks"].encode())
    else:  # [key, last run] each
        keys, last_runs = [pair[0] for pair in keys], [_when(pair[1]) for pair in keys]
    summary = _kept(keys, last_runs, states)
    summary.open = runs_of(header["open"], by_column=version == VERSION)
    summary.newest = float(header["newest"])
    if version == 8:  # its export says where lines are in another form: all rendered anew once
        header["export"] = None
    return Loaded(header, summary)


def _kept(keys: list[str], last_runs: list[float | None], states: list[memoryview]) -> Summary:
    """A summary of the aggregates a checkpoint keeps, none read yet."""
    summary = Summary()
    for key, last_run, state in zip(keys, last_runs, states, strict=True):
        if type(key) is not str or key in summary.saved:
            raise ValueError("key")
        summary.saved[key] = Kept(last_run, state)
    return summary


def _lines(raw: bytes, start: int, count: int) -> list[memoryview] | None:
    """The `count` lines of `raw` from `start` on, without their newlines (views of `raw`, not
    copies of it); None unless it holds that many whole lines there, and nothing after."""
    view = memoryview(raw)
    lines: list[memoryview] = []
    while len(lines) < count and (end := raw.find(b"\n", start)) >= 0:
        lines.append(view[start:end])
        start = end + 1
    return lines if len(lines) == count and start == len(raw) else None


def write(header: dict[str, object], summary: Summary) -> list[bytes | memoryview]:
    """The checkpoint of `header` (without its keys) and `summary`, as the pieces of the file
    in order: an aggregate still as the file held it is written back unchanged (a view of
    the file read), the others anew."""
    keys: list[str] = []
    last_runs: list[float | None] = []
    states: list[bytes | memoryview] = []
    for key, kept in list(summary.saved.items()):
        if isinstance(kept, Kept):
            keys.append(key)
            last_runs.append(kept.last_run)
            states.append(kept.state)
        else:
            summary.aggregate(key)  # read: written below with the others
    for key, aggregate in summary.awake.items():
        keys.append(key)
        last_runs.append(aggregate.last_run)
        states.append(aggregate_line.line(aggregate))
    return sealed(keyed(header, keys, last_runs), states)


def keyed(
    header: dict[str, object], keys: list[str], last_runs: list[float | None]
) -> dict[str, object]:
    """`header` with its keys, each one's last run, and its export's bounds, packed."""
    times = packed("d", [NONE if at is None else at for at in last_runs]).decode()
    export = _packed_bounds(header.get("export"))
    made = {**header, "keys": keys, "last_runs": times, "export": export}
    position = header.get("position")
    if type(position) is dict and "marks" in position:
        made["position"] = {**position, "marks": packed("d", position["marks"]).decode()}
    return made


def _packed_bounds(export: Any) -> Any:
    """The export with its bounds packed; None when they cannot be (not read from a
    textfile this runner wrote: the next export renders every series anew)."""
    lines = export.get("lines") if type(export) is dict else None
    if type(lines) is not dict or "bounds" not in lines:
        return export
    try:
        bounds = [packed_counts(column).decode() for column in lines["bounds"]]
    except (TypeError, ValueError, OverflowError):
        return None
    return {**export, "lines": {**lines, "bounds": bounds}}


def _unpacked_bounds(export: Any) -> Any:
    """The export with its bounds as lists of offsets again."""
    lines = export.get("lines") if type(export) is dict else None
    if type(lines) is not dict or "bounds" not in lines:
        return export
    if type(lines["bounds"]) is not list or not all(type(c) is str for c in lines["bounds"]):
        raise TypeError("bounds")
    lines["bounds"] = [unpacked_counts(column.encode()) for column in lines["bounds"]]
    return export


FINE = ("durations", "attempt_durations")
"""The histograms of a version 11 aggregate: the first field of each is its fine buckets,
"" in its JSON, the buckets themselves after it."""


def sealed(
    header: dict[str, object], states: Sequence[bytes | memoryview]
) -> list[bytes | memoryview]:
    """The pieces of the file of `header` (its keys in it) and their aggregates' JSON, with
    the version and the CRC-32 put in first."""
    rest: list[bytes | memoryview] = [cjson.dumps(header), b"\n"]
    for state in states:
        rest += state, b"\n"
    crc = 0
    for piece in rest:
        crc = crc32(piece, crc)
    return [cjson.dumps({"version": VERSION, "crc": crc}), b"\n", *rest]


def _when(value: object) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or not -1e15 < value < 1e15:  # type: ignore[operator]
        raise ValueError("last run")  # also for NaN
    return float(value)  # type: ignore[arg-type]


def _count(value: object) -> bool:
    return type(value) is int and value >= 0
