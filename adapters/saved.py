"""The checkpoint's file: a header, then each command's aggregate and its exported lines.

    {"version": 8, "crc": …, "by": …, "position": …, "series": …, "open": …, …}
    ["<key>", <last run>, "<label>", [<length>, …]]<TAB>{<the aggregate>}
    <the key's lines of the first metric family>
    …

One line of JSON a key, then (when it was exported under a label of its own) its
lines of each metric family, as many characters as the lengths say, each followed
by a newline. A key's JSON is read only when something is added to it, and its
lines are exported again as they are while it is unchanged: a `stats` that reads a
few new lines decodes, renders and encodes the few keys they touch, whatever the
number of commands in the history. The header holds the CRC-32 of all that follows
it, so a file damaged in any byte is known at once. Nothing in it is code to run.
"""

from __future__ import annotations

import json
import math
from binascii import crc32

from domain.aggregate import Aggregate
from domain.errors import Damaged
from domain.runs import Run
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

VERSION = 8
PIECES_MAX = 64
"""Metric families a key's exported lines may be split into, at most."""

Lines = tuple[str, list[str]]
"""A key's exported lines: the label it was exported under alone, and its lines of each
metric family (one string a family)."""


class Kept:
    """A key as the file holds it (domain.ports.Saved): its aggregate's JSON, not read yet."""

    __slots__ = ("label", "last_run", "pieces", "state", "text")

    def __init__(
        self,
        last_run: float | None,
        label: str | None,
        pieces: list[str] | None,
        state: str,
        text: str,
    ) -> None:
        self.last_run = last_run
        self.label = label
        """The label its `pieces` were exported under (None: they were not)."""
        self.pieces = pieces
        """Its exported lines, one string a metric family (None: not exported alone)."""
        self.state = state
        self.text = text
        """The key as the file holds it, to write back unchanged."""

    def wake(self) -> Aggregate:
        try:
            state = json.loads(self.state)
            if type(state) is not dict:
                raise TypeError(type(state).__name__)
            return Aggregate.from_state(state)
        except (ValueError, KeyError, TypeError, RecursionError, OverflowError) as exc:
            raise Damaged(f"an aggregate does not hold together: {type(exc).__name__}") from None


class Loaded:
    """What a checkpoint file holds: its header's fields, a Summary, and the exported lines
    kept for its keys."""

    def __init__(self, header: dict[str, Any], summary: Summary, kept: dict[str, Lines]) -> None:
        self.summary = summary
        self.lines: int = header["lines"]
        self.malformed: int = header["malformed"]
        self.series: list[str] = header["series"]
        self.labels: list[list[str]] | None = header.get("labels")
        self.position: dict[str, object] = header["position"]
        self.kept = kept
        self._check()

    def _check(self) -> None:
        """ValueError unless every field is of its kind (the keys' aggregates are checked
        when they are read)."""
        position, labels = self.position, self.labels
        if not -1e15 < self.summary.newest < 1e15:  # also false for NaN
            raise ValueError("newest")
        if not (_count(self.lines) and _count(self.malformed) and type(self.series) is list):
            raise ValueError("counts")
        if not all(type(label) is str for label in self.series):
            raise ValueError("series")
        if labels is not None and not all(
            type(pair) is list and len(pair) == 2 and set(map(type, pair)) == {str}
            for pair in labels
        ):
            raise ValueError("labels")
        if not (
            type(position) is dict
            and _count(position["dev"])
            and _count(position["ino"])
            and _count(position["offset"])
            and (position["head"] is None or type(position["head"]) is str)
        ):
            raise ValueError("position")


def read(raw: bytes, by: str) -> Loaded | None:
    """The checkpoint in `raw`, or None when it is of another version or grouping. Raises
    ValueError (or KeyError, TypeError, IndexError) when it is not one this module wrote
    whole; a key's aggregate is checked when it is read (Kept.wake)."""
    end = raw.find(b"\n")
    header = json.loads(raw[: end if end >= 0 else len(raw)])
    if type(header) is not dict:
        raise TypeError("header")
    if header.get("by") != by:
        return None
    if header.get("version") == 7:  # one JSON document (0.5), read whole once
        return Loaded({**header, "labels": None}, Summary.from_state(header["summary"]), {})
    if header.get("version") != VERSION:
        return None
    body = raw[end + 1 :] if end >= 0 else b""
    if crc32(body) != header.get("crc"):
        raise ValueError("its CRC does not match")
    keys = _keys(body.decode("utf-8", "surrogatepass"))
    summary = Summary()
    summary.saved = dict(keys)
    runs: dict[str, list[Any]] = header["open"]
    summary.open = {run_id: Run.from_state(value) for run_id, value in runs.items()}
    summary.newest = float(header["newest"])
    kept = {
        key: (found.label, found.pieces)
        for key, found in keys.items()
        if found.label is not None and found.pieces is not None
    }
    return Loaded(header, summary, kept)


def _keys(data: str) -> dict[str, Kept]:
    keys: dict[str, Kept] = {}
    at, size = 0, len(data)
    while at < size:
        tab, end = data.find("\t", at), data.find("\n", at)
        if not at < tab < end:
            raise ValueError("key line")
        key, last_run, label, lengths = json.loads(data[at:tab])
        if type(key) is not str or key in keys:
            raise ValueError("key")
        pieces, start = None, end + 1
        if lengths is not None:
            if not (type(lengths) is list and len(lengths) <= PIECES_MAX and type(label) is str):
                raise ValueError("lengths")
            pieces = []
            for length in lengths:
                if type(length) is not int or length < 0 or data[start + length] != "\n":
                    raise ValueError("piece")
                pieces.append(data[start : start + length])
                start += length + 1
        elif label is not None:
            raise ValueError("label")
        keys[key] = Kept(_when(last_run), label, pieces, data[tab + 1 : end], data[at:start])
        at = start
    return keys


def write(header: dict[str, object], summary: Summary, exported: dict[str, Lines] | None) -> bytes:
    """The checkpoint: the header, then the keys. A key still as the file held it is written
    back unchanged (without its lines when an export left it out); the others anew, with
    the lines `exported` under their label alone, if any (None: nothing was exported)."""
    parts = []
    for key, kept in list(summary.saved.items()):
        if not isinstance(kept, Kept):
            summary.aggregate(key)  # read: written anew below
        elif exported is None or key in exported:
            parts.append(kept.text)
        else:
            parts += [json.dumps([key, kept.last_run, None, None]), "\t", kept.state, "\n"]
    for key, aggregate in summary.awake.items():
        label, pieces = (exported or {}).get(key) or (None, None)
        lengths = None if pieces is None else [len(piece) for piece in pieces]
        state = json.dumps(aggregate.state(), separators=(",", ":"))
        parts += [json.dumps([key, aggregate.last_run, label, lengths]), "\t", state, "\n"]
        if pieces is not None:
            parts += [f"{piece}\n" for piece in pieces]
    return sealed(header, "".join(parts))


def sealed(header: dict[str, object], body: str) -> bytes:
    """The file of `header` and the keys' text `body`: the version and CRC put in."""
    data = body.encode("utf-8", "surrogatepass")
    first = {"version": VERSION, "crc": crc32(data), **header}
    return json.dumps(first, separators=(",", ":")).encode() + b"\n" + data


def _when(value: object) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value):  # type: ignore[arg-type]
        raise ValueError("last run")
    return float(value)  # type: ignore[arg-type]


def _count(value: object) -> bool:
    return type(value) is int and value >= 0
