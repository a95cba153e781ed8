"""The checkpoint's file and the export that copies from the textfile before: what is kept
comes back the same, and what is exported again is what a full export would say."""

from __future__ import annotations

import copy
import json
import math
import struct
from array import array
from binascii import a2b_base64, b2a_base64
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import aggregate_line, cjson, saved
from domain.aggregate import Aggregate
from domain.errors import Damaged
from domain.histogram import Histogram
from domain.stats import OTHER, Summary
from entrypoints import prometheus
from tests.checkpoints import HEADER

T0 = 1_800_000_000.0
VERSION = b'"version":%d' % saved.VERSION
KEYS = st.text(min_size=1, max_size=12)
"""Command keys with tabs, newlines, quotes, backslashes and any other character."""
RUNS = st.lists(
    st.tuples(KEYS, st.integers(1, 3), st.sampled_from([0, 1, 124, 137]), st.integers(0, 10**7)),
    min_size=1,
    max_size=30,
)
Run = tuple[str, int, int, int]


EXPORT = {"path": "/x.prom", "dev": 1, "ino": 2, "size": 3, "mtime_ns": 4, "labels": []}


def replay(runs: list[Run], into: Summary, first: int = 0) -> None:
    """Each run as its attempts (the failed ones followed by a wait), a second apart."""
    for n, (key, attempts, rc, ms) in enumerate(runs, start=first):
        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            into.add(f"r{n}", key, T0 + n + attempt / 10, attempt, rc if last else 1, ms, not last)


def export(history: Summary, series: list[str], **options: Any) -> Any:
    data, known, placed = prometheus.render(
        history, "cmd", malformed=0, series=series, now=T0, constant=(("env", "p\trod"),), **options
    )
    return b"".join(data), known, placed


def through_file(history: Summary) -> saved.Loaded:
    loaded = saved.read(b"".join(saved.write(dict(HEADER), history)), "cmd")
    assert loaded is not None
    return loaded


def fine(histogram: Histogram) -> list[int]:
    """Its fine buckets, every one from the first (0) to the last counted."""
    first, counts = histogram.span()
    return [0] * first + counts


def figures(history: Summary) -> dict[str, object]:
    """Everything the table and the export say of each key."""
    return {
        key: [
            *(getattr(group, name) for name in ("runs", "outcomes", "codes", "attempts")),
            *(getattr(group, name) for name in ("attempts_max", "retried", "attempt_outcomes")),
            *(getattr(group, name) for name in ("last_run", "last_rc", "last_duration")),
            *(getattr(group, name) for name in ("last_success", "last_failure", "recent")),
            *(
                [fine(hist), hist.le, hist.count, hist.total, hist.maximum]
                for hist in (group.durations, group.attempt_durations)
            ),
        ]
        for key, group in history.by_key.items()
    }


@settings(max_examples=150, deadline=None)
@given(RUNS, RUNS)
def test_lines_copied_from_the_textfile_before_are_what_a_full_export_says(
    before: list[Run], after: list[Run]
) -> None:
    """Keys with no new run are copied from the textfile written before, unread; keys with
    new runs are read and rendered anew: byte for byte what a summary read whole exports."""
    history = Summary()
    replay(before, history)
    first, series, placed = export(history, [])
    loaded = through_file(history)
    assert export(loaded.summary, series, before=(first, placed))[0] == first
    assert loaded.summary.awake == {}

    later = Summary()
    replay(after, later, first=len(before))
    loaded.summary.merge(later)
    whole = Summary()
    replay(before, whole)
    replay(after, whole, first=len(before))
    assert set(loaded.summary.awake) == {key for key, *_ in after}
    again, series_again, placed_again = export(loaded.summary, series, before=(first, placed))
    expected, expected_series, _ = export(whole, series)
    assert (again, series_again) == (expected, expected_series)

    reloaded = through_file(loaded.summary)
    assert export(reloaded.summary, series_again, before=(again, placed_again))[0] == expected
    assert reloaded.summary.awake == {}
    assert figures(reloaded.summary) == figures(whole)


def _moved(placed: Any, key: Any = None, bounds: Any = None) -> Any:
    """`placed` with the job's entry, or the bounds, changed by a function."""
    moved = copy.deepcopy(placed)
    moved["keys"] = {"job": moved["keys"]["job"]}  # the other job is rendered anew
    if key is not None:
        moved["keys"]["job"] = key(moved["keys"]["job"])
    if bounds is not None:
        moved["bounds"] = bounds(moved["bounds"], moved["keys"]["job"])
    return moved


@pytest.mark.parametrize(
    "where",
    [
        lambda placed: _moved(placed, key=lambda job: ["job", job]),  # an earlier form
        lambda placed: _moved(placed, key=str),
        lambda placed: _moved(placed, key=lambda job: -1),
        lambda placed: _moved(placed, key=float),
        lambda placed: _moved(placed, key=lambda job: job == 0),  # a bool is no place
        lambda placed: _moved(placed, key=lambda job: "job"),
        lambda placed: {**_moved(placed), "keys": "job"},
        lambda placed: _moved(placed, bounds=lambda bounds, at: bounds[:-1]),  # a family short
        lambda placed: _moved(placed, bounds=lambda bounds, at: [bounds[0][: at + 1], *bounds[1:]]),
        lambda placed: _moved(  # not where a family's lines start
            placed,
            bounds=lambda bounds, at: (
                [[n + (k == at) for k, n in enumerate(bounds[0])], *bounds[1:]]
            ),
        ),
        lambda placed: _moved(  # past the end
            placed, bounds=lambda bounds, at: [[*bounds[0][:-1], 10**9], *bounds[1:]]
        ),
        lambda placed: _moved(
            placed, bounds=lambda bounds, at: [[-1, *bounds[0][1:]], *bounds[1:]]
        ),
        lambda placed: _moved(  # not in order
            placed, bounds=lambda bounds, at: [bounds[0][::-1], *bounds[1:]]
        ),
        lambda placed: _moved(  # not whole numbers
            placed, bounds=lambda bounds, at: [[float(n) for n in bounds[0]], *bounds[1:]]
        ),
        lambda placed: _moved(placed, bounds=lambda bounds, at: "bounds"),
    ],
)
def test_lines_are_copied_only_from_where_they_are_under_the_same_label(where: Any) -> None:
    history = Summary()
    replay([("job", 1, 0, 5), ("other job", 1, 1, 5)], history)
    first, series, placed = export(history, [])
    marked = first.replace(b'env="p\trod"', b'env="p\tROD"')  # the same places: seen if copied
    loaded = through_file(history)
    copied = export(loaded.summary, series, before=(marked, _moved(placed)))[0]
    fresh = b"runner_runs_in_progress"  # rendered every time, from the open runs
    lines = [line for line in first.splitlines() if b'cmd="job"' in line]
    assert copied.count(b"ROD") == len([line for line in lines if not line.startswith(fresh)])
    loaded = through_file(history)
    text = export(loaded.summary, series, before=(marked, where(placed)))[0]
    assert text == first
    assert set(loaded.summary.awake) == {"job", "other job"}


def test_only_a_key_under_its_own_label_is_placed_to_be_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past MAX_SERIES a key alone under (other) is not under its own label: it is rendered
    anew each time. The key (other) itself, which the checkpoint's bound folds keys into,
    is under its own, and is copied as any other."""
    monkeypatch.setattr(prometheus, "MAX_SERIES", 2)
    history = Summary()
    replay([("a", 1, 0, 5), ("b", 1, 0, 5), ("c", 1, 0, 5)], history)
    assert export(history, [])[2]["keys"] == {"a": 1, "b": 2}  # (other) sorts first
    folded = Summary()
    replay([("a", 1, 0, 5), ("b", 1, 0, 5), (OTHER, 1, 0, 5)], folded)
    first, series, placed = export(folded, [])
    assert placed["keys"] == {OTHER: 0, "a": 1, "b": 2}
    marked = first.replace(b'env="p\trod"', b'env="p\tROD"')
    copied = export(through_file(folded).summary, series, before=(marked, placed))[0]
    fresh = b"runner_runs_in_progress"  # rendered every time, from the open runs
    lines = [line for line in copied.splitlines() if b'cmd="(other)"' in line]
    assert [line for line in lines if not line.startswith(fresh) and b"ROD" not in line] == []
    assert len(lines) > 20


def test_a_checkpoint_of_version_8_goes_on_and_renders_its_export_anew() -> None:
    """Version 8 said where lines are by spans: its counts carry over, its export is
    forgotten (every series is rendered anew once)."""
    history = Summary()
    replay([("job", 1, 0, 5)], history)
    export = {"path": "/x.prom", "dev": 1, "ino": 2, "size": 3, "mtime_ns": 4, "labels": []}
    export["lines"] = {"job": ["job", [0, 10] * 12]}
    data = b"".join(saved.write({**HEADER, "export": export}, history))
    assert saved.read(data, "cmd").export == export  # type: ignore[union-attr]
    job = history.by_key["job"]
    keys = {**HEADER, "export": export, "keys": [["job", job.last_run]]}  # each with its time
    data = b"".join(saved.sealed(keys, [aggregate_line.line(job)]))
    loaded = saved.read(data.replace(VERSION, b'"version":8', 1), "cmd")
    assert loaded is not None
    assert loaded.export is None
    assert figures(loaded.summary) == figures(history)


def test_a_checkpoint_of_version_9_goes_on_with_its_fine_buckets_in_text() -> None:
    """Versions 8 and 9 saved fine buckets as text, with pairs counted since beside it: such
    a checkpoint is read as the same history, and written back in the new form."""
    history = Summary()
    replay([("job", 1, 0, 5), ("job", 2, 1, 90_000), ("other", 1, 0, 3_600_000)], history)
    states = []
    for aggregate in history.by_key.values():
        state = aggregate.state()
        for name in ("durations", "attempt_durations"):
            histogram = getattr(aggregate, name)
            first, counts = histogram.span()
            text = f"{first + 1}:{','.join(map(str, counts[1:]))}" if counts else "0:"
            delta = [[first, counts[0]]] if counts else []  # below the text's first bucket
            state[name] = [text, delta, *histogram.state()[1:]]
        states.append(json.dumps(state, separators=(",", ":")).encode())
    keys = [[key, aggregate.last_run] for key, aggregate in history.by_key.items()]
    data = b"".join(saved.sealed({**HEADER, "keys": keys}, states))
    loaded = saved.read(data.replace(VERSION, b'"version":9', 1), "cmd")
    assert loaded is not None
    assert figures(loaded.summary) == figures(history)
    again = saved.read(b"".join(saved.write(HEADER, loaded.summary)), "cmd")
    assert again is not None
    assert figures(again.summary) == figures(history)


def _resealed(data: bytes, change: Any) -> bytes:
    """`data` with each aggregate's line changed by `change`, under a CRC that matches."""
    header, *states = data.split(b"\n")[1:-1]
    return b"".join(saved.sealed(json.loads(header), [change(state) for state in states]))


def test_an_aggregate_holds_its_counts_figures_fine_buckets_and_recent_runs() -> None:
    """Version 12: the counts packed in the fewest bytes that hold them (here one each);
    the figures that are not counts (times, exit codes that may be missing, totals) as
    doubles; the two histograms' fine buckets; the recent runs packed. A tab before each
    part, none in any (base64 and decimal have none); all come back exactly."""
    history = Summary()
    replay([("job", 2, 1, 5), ("job", 1, 0, 3_600_000), ("job", 1, 137, 7)], history)
    data = b"".join(saved.write(dict(HEADER), history))
    (line,) = data.split(b"\n")[2:-1]
    counts, doubles, *fine, recent = line.split(b"\t")
    job = history.by_key["job"]
    assert counts[:1] == b"B"
    whole = list(a2b_base64(counts[1:]))
    assert whole[:12] == [3, 4, 2, 1, 1, 1, 0, 1, 1, 2, 0, 1]  # runs, attempts, by outcome
    assert whole[-7:] == [4, 0, 1, 1, 1, 137, 1]  # attempts counted; each exit code, its runs
    last = struct.unpack("<10d", a2b_base64(doubles))
    assert last[:2] == (job.last_run, 137.0)
    assert last[4:6] == (job.last_failure, 137.0)
    assert fine == [
        str(hist.state()[0]).encode() for hist in (job.durations, job.attempt_durations)
    ]
    times, marks = recent.split(b":")
    assert (len(a2b_base64(times)), marks) == (24, b"103")  # failure, success, signal
    assert figures(through_file(history).summary) == figures(history)


def test_the_header_packs_each_key_s_last_run_and_where_each_series_is() -> None:
    """The numbers in bulk in the header (each key's last run, the export's bounds) are
    packed; a header where they are not as packed is not read; bounds that cannot be
    packed (not read from a textfile this runner wrote) are forgotten: the next export
    renders every series anew."""
    history = Summary()
    replay([("job", 1, 0, 5), ("other job", 1, 1, 5)], history)
    _, _, placed = export(history, [])
    data = b"".join(saved.write({**HEADER, "export": {**EXPORT, "lines": placed}}, history))
    header = json.loads(data.split(b"\n")[1])
    assert header["keys"] == ["job", "other job"]
    assert struct.unpack("<2d", a2b_base64(header["last_runs"])) == (T0 + 0.1, T0 + 1.1)
    assert all(type(column) is str for column in header["export"]["lines"]["bounds"])
    loaded = saved.read(data, "cmd")
    assert loaded is not None
    assert loaded.export is not None
    assert loaded.export["lines"] == placed
    for field, value in [
        ("last_runs", 5),
        ("last_runs", "AAAA"),
        ("export", {**EXPORT, "lines": {"bounds": [[1]]}}),
    ]:
        changed = b"".join(saved.sealed({**header, field: value}, data.split(b"\n")[2:-1]))
        with pytest.raises((ValueError, TypeError, AttributeError)):
            saved.read(changed, "cmd")
    unwritable = {**EXPORT, "lines": {**placed, "bounds": [[0.5]]}}
    again = b"".join(saved.write({**HEADER, "export": unwritable}, history))
    assert json.loads(again.split(b"\n")[1])["export"] is None


def v11_line(group: Aggregate) -> bytes:
    """An aggregate's line as version 11 wrote it: its state in JSON, its fine buckets after
    it, "" in their place."""
    state: dict[str, Any] = group.state()
    fine = [state[name][0].encode() for name in saved.FINE]
    for name in saved.FINE:
        state[name][0] = ""
    return b"\t".join([cjson.dumps(state), *fine])


def test_a_checkpoint_of_version_11_goes_on() -> None:
    """Version 11 held each aggregate in a JSON object: read as it is, its export copied
    from, and written back in the new form."""
    history = Summary()
    replay([("job", 2, 1, 5), ("other job", 1, 0, 3_600_000)], history)
    text, series, placed = export(history, [])
    lines = {**HEADER, "export": {**EXPORT, "lines": placed}}
    states = [v11_line(group) for group in history.by_key.values()]
    keys = [[key, group.last_run] for key, group in history.by_key.items()]
    data = b"".join(saved.sealed({**lines, "keys": keys}, states))
    loaded = saved.read(data.replace(VERSION, b'"version":11', 1), "cmd")
    assert loaded is not None
    assert export(loaded.summary, series, before=(text, placed))[0] == text
    assert figures(loaded.summary) == figures(history)
    again = b"".join(saved.write(HEADER, loaded.summary))
    assert not any(line.startswith(b"{") for line in again.split(b"\n")[2:-1])
    assert figures(through_file(loaded.summary).summary) == figures(history)


def test_a_checkpoint_of_version_10_goes_on() -> None:
    """Version 10 held the fine buckets inside the JSON: its aggregates are read as they
    are, its export copied from, and it is written back in the new form."""
    history = Summary()
    replay([("job", 2, 1, 5), ("other job", 1, 0, 3_600_000)], history)
    text, series, placed = export(history, [])
    lines = {**HEADER, "export": {**EXPORT, "lines": placed}}
    states = [cjson.dumps(group.state()) for group in history.by_key.values()]
    keys = [[key, group.last_run] for key, group in history.by_key.items()]
    data = b"".join(saved.sealed({**lines, "keys": keys}, states))
    loaded = saved.read(data.replace(VERSION, b'"version":10', 1), "cmd")
    assert loaded is not None
    assert loaded.export is not None
    assert loaded.export["lines"]["bounds"] == placed["bounds"]
    assert export(loaded.summary, series, before=(text, loaded.export["lines"]))[0] == text
    assert figures(loaded.summary) == figures(history)
    again = through_file(loaded.summary)
    assert figures(again.summary) == figures(history)


def _planted(change: Any, form: Any) -> saved.Loaded:
    """A checkpoint of one aggregate, its line in `form`, changed by `change`."""
    history = Summary()
    replay([("job", 2, 1, 5), ("job", 1, 137, 9)], history)
    header = saved.keyed(dict(HEADER), ["job"], [T0])
    data = b"".join(saved.sealed(header, [change(form(history.by_key["job"]))]))
    loaded = saved.read(data, "cmd")
    assert loaded is not None
    return loaded


def _recent(line: bytes, times: bytes | None = None, marks: bytes | None = None) -> bytes:
    """A line with its recent runs' times or marks replaced."""
    rest, recent = line.rsplit(b"\t", 1)
    old_times, old_marks = recent.split(b":")
    return rest + b"\t" + (old_times if times is None else times) + b":" + (marks or old_marks)


def _waiting(line: bytes, durations: bytes) -> bytes:
    """A line with `durations` after the counts of its first histogram."""
    counts, doubles, fine, *rest = line.split(b"\t")
    return b"\t".join([counts, doubles, fine + durations, *rest])


TWELVE_THREE = b"B" + b2a_base64(bytes([12, 3]), newline=False)
"""Durations 12 and 3 ms as `defer` packs them after the counts: a type code, then base64."""
NAN = b2a_base64(struct.pack("<2d", T0, math.nan), newline=False)
"""NaN after a time: the least and the greatest of both are the time."""
INFINITE = b2a_base64(struct.pack("<2d", T0, math.inf), newline=False)


def _counts(line: bytes, change: Any) -> bytes:
    """A line with its counts changed by a function of their list."""
    counts, *rest = line.split(b"\t")
    code = counts[:1].decode()
    changed = array(code, change(array(code, a2b_base64(counts[1:])).tolist()))
    return b"\t".join([code.encode() + b2a_base64(changed, newline=False), *rest])


def _doubles(line: bytes, at: int, value: float, count: int = 10) -> bytes:
    """A line with its figure `at` replaced by `value` (and `count` of them)."""
    counts, doubles, *rest = line.split(b"\t")
    figures = list(struct.unpack("<10d", a2b_base64(doubles)))
    figures[at] = value
    packed = b2a_base64(struct.pack(f"<{count}d", *(figures * 2)[:count]), newline=False)
    return b"\t".join([counts, packed, *rest])


@pytest.mark.parametrize(
    "change",
    [
        lambda line: line.rsplit(b"\t", 1)[0],  # four parts, not five
        lambda line: line + b"\t",  # six
        lambda line: _counts(line, lambda counts: counts[1:]),  # a count short
        lambda line: _counts(line, lambda counts: [1, *counts]),  # one more
        lambda line: _counts(line, lambda counts: counts[:-1]),  # an exit code's count short
        lambda line: b"x" + line,  # no type code
        lambda line: b"Q" + line[1:],  # not whole counts of the type it names
        lambda line: line[1:],  # no type code, and not base64
        lambda line: b"b" + line[1:],  # a type code of signed integers
        lambda line: line.replace(b"\t", b"A\t", 1),  # not whole counts
        lambda line: _doubles(line, 0, math.inf),  # a time past any a log holds
        lambda line: _doubles(line, 0, 1e16),
        lambda line: _doubles(line, 1, 1.5),  # an exit code not whole
        lambda line: _doubles(line, 6, math.nan),  # no total
        lambda line: _doubles(line, 7, -1.0),
        lambda line: _doubles(line, 8, math.inf),
        lambda line: _doubles(line, 0, T0, count=9),  # a figure short
        lambda line: _doubles(line, 0, T0, count=11),
        lambda line: line.replace(b"\t", b"\tAAAA", 1),  # not whole doubles
        lambda line: line.replace(b"=\t", b"\t", 1),  # not canonical
        lambda line: line.replace(b"\t", b"\t\xff", 2),  # fine buckets not ASCII
        lambda line: line.replace(b":B:", b":B: ", 1),
        lambda line: _waiting(line, b":3:" + TWELVE_THREE),  # fewer than it says
        lambda line: _waiting(line, b":4:" + TWELVE_THREE + b",,B" + TWELVE_THREE[1:]),
        lambda line: _waiting(line, b":2:" + TWELVE_THREE[1:]),  # no type code
        lambda line: _waiting(line, b":1:Q" + b2a_base64(struct.pack("<Q", 10**14), newline=False)),
        lambda line: _recent(line, marks=b"1"),  # fewer outcomes than times
        lambda line: _recent(line, marks=b"07"),  # an outcome of no place
        lambda line: _recent(line, times=b"AAAA"),  # not whole doubles
        lambda line: _recent(line, times=b"AAAAAAAAAAAAAAAAAAAAAB=="),  # not canonical
        lambda line: _recent(line, times=NAN),
        lambda line: _recent(line, times=NAN, marks=b"10"),  # as many times as marks
        lambda line: _recent(line, times=INFINITE, marks=b"10"),
        lambda line: line.rsplit(b":", 1)[0],  # no marks
        lambda line: b"\t" + line,
    ],
)
def test_an_aggregate_line_that_is_amiss_does_not_hold_together(change: Any) -> None:
    """Found when the aggregate is read, or its fine buckets decoded (see domain.packed)."""
    loaded = _planted(change, aggregate_line.line)
    with pytest.raises(Damaged, match="does not hold together"):
        read_whole(loaded.summary.aggregate("job"))


def read_whole(group: Aggregate) -> None:
    """Read an aggregate's every part, its fine buckets decoded."""
    group.durations.span()
    group.attempt_durations.span()


def test_the_planted_aggregate_holds_together_unchanged() -> None:
    """The lines the test above changes, unchanged, are read (each change is what fails)."""
    for form in (aggregate_line.line, v11_line):
        assert _planted(lambda line: line, form).summary.aggregate("job").runs == 2
    plain = _planted(lambda line: line, aggregate_line.line).summary.aggregate("job")
    waiting = _planted(lambda line: _waiting(line, b":2:" + TWELVE_THREE), aggregate_line.line)
    placed = waiting.summary.aggregate("job").durations.span()[1]
    assert sum(placed) == sum(plain.durations.span()[1]) + 2  # the two that waited


@pytest.mark.parametrize(
    "change",
    [
        lambda line: line.rsplit(b"\t", 1)[0],  # one histogram's buckets, not two
        lambda line: line + b"\t" + line.rsplit(b"\t", 1)[1],  # three
        lambda line: line.replace(b'"durations":[""', b'"durations":["0:B:AQ=="', 1),
        lambda line: line.replace(b'"durations":["",', b'"durations":[', 1),
        lambda line: line.replace(b'"durations":[', b'"durations":{"a":', 1),
        lambda line: line.rsplit(b"\t", 1)[0] + b"\t\xff",  # not ASCII
        lambda line: line.rsplit(b"\t", 1)[0] + b"\t0:B:A Q==",
        lambda line: line.replace(b'"durations":["",', b'"durations":[[],', 1),
        lambda line: line.replace(b'"durations":["",', b'"x":[],"durations":[],', 1),
        lambda line: line.replace(b'"failure"]', b'"lost"]', 1),  # a recent run's outcome
    ],
)
def test_a_version_11_aggregate_that_is_amiss_does_not_hold_together(change: Any) -> None:
    loaded = _planted(change, v11_line)
    with pytest.raises(Damaged, match="does not hold together"):
        read_whole(loaded.summary.aggregate("job"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1],  # cut short
        lambda data: data.replace(b"\nBAQEB", b"\nBAgEB"),  # a count changed (runs: 2)
        lambda data: data.replace(b'"lines":0', b'"lines":7'),  # the header changed
        lambda data: data + b"x",
    ],
)
def test_a_file_damaged_in_any_byte_is_refused(damage: Any) -> None:
    history = Summary()
    replay([("job", 1, 0, 5)], history)
    data = b"".join(saved.write(dict(HEADER), history))
    assert saved.read(data, "cmd") is not None
    with pytest.raises(ValueError, match="CRC"):
        saved.read(damage(data), "cmd")


def test_another_version_or_grouping_is_read_as_none() -> None:
    data = b"".join(saved.write(dict(HEADER), Summary()))
    assert saved.read(data, "name") is None
    assert saved.read(json.dumps({"version": 6, "by": "cmd"}).encode(), "cmd") is None


def test_a_checkpoint_of_0_5_is_read_whole_not_set_aside() -> None:
    """Version 7 (one JSON document) goes on where it stopped: its counts carry over to the
    new form, so an upgrade between two exports lowers no counter."""
    history = Summary()
    replay([("job", 2, 0, 5), ("job", 1, 1, 7)], history)
    document = {**HEADER, "version": 7, "summary": history.state()}
    for field in ("open", "newest", "export"):
        del document[field]
    loaded = saved.read(json.dumps(document).encode(), "cmd")
    assert loaded is not None
    assert loaded.position == HEADER["position"]
    assert figures(loaded.summary) == figures(history)
    assert saved.read(json.dumps({**document, "by": "name"}).encode(), "cmd") is None


@pytest.mark.parametrize("extra", [b"\n" * 100_000, b"{}", b"{}\n{}\n"])
def test_lines_that_the_header_does_not_name_are_refused(extra: bytes) -> None:
    """A file whose CRC holds (its owner can write one) with more lines, or fewer, than the
    header has keys: refused as a whole, its lines not even cut apart."""
    history = Summary()
    replay([("job", 1, 0, 5)], history)
    data = b"".join(saved.write(dict(HEADER), history))
    header, *states = data.split(b"\n")[1:-1]
    planted = b"".join(saved.sealed(json.loads(header), [*states, *extra.split(b"\n")]))
    with pytest.raises(ValueError, match="keys"):
        saved.read(planted, "cmd")
    with pytest.raises(ValueError, match="keys"):
        saved.read(b"".join(saved.sealed(json.loads(header), [])), "cmd")


def test_an_aggregate_read_from_its_line_has_every_field_set() -> None:
    """The line is read into an aggregate and histograms made without their defaults: each
    field is set from the line, none left out (a field added later included)."""
    history = Summary()
    replay([("job", 2, 1, 5), ("job", 1, 0, 3_600_000)], history)
    job = through_file(history).summary.aggregate("job")
    assert all(hasattr(job, name) for name in Aggregate.__slots__)
    for histogram, counted in ((job.durations, 2), (job.attempt_durations, 3)):
        assert all(hasattr(histogram, name) for name in Histogram.__slots__)
        histogram.add(7)
        assert histogram.count == counted + 1
