"""The checkpoint's file: what it keeps comes back the same, and what it exports again is
what a full export would say."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import saved
from domain.stats import Summary
from entrypoints import prometheus

T0 = 1_800_000_000.0
HEADER: dict[str, object] = {
    "by": "cmd",
    "position": {"dev": 1, "ino": 2, "head": None, "offset": 0},
    "lines": 0,
    "malformed": 0,
    "series": [],
    "labels": None,
    "newest": 0.0,
    "open": {},
}
KEYS = st.text(min_size=1, max_size=12)
"""Command keys with tabs, newlines, quotes, backslashes and any other character."""
RUNS = st.lists(
    st.tuples(KEYS, st.integers(1, 3), st.sampled_from([0, 1, 124, 137]), st.integers(0, 10**7)),
    min_size=1,
    max_size=30,
)


def replay(runs: list[tuple[str, int, int, int]], into: Summary, first: int = 0) -> None:
    """Each run as its attempts (the failed ones followed by a wait), a second apart."""
    for n, (key, attempts, rc, ms) in enumerate(runs, start=first):
        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            into.add(f"r{n}", key, T0 + n + attempt / 10, attempt, rc if last else 1, ms, not last)


def export(history: Summary, series: list[str], kept: dict[str, saved.Lines] | None = None):  # type: ignore[no-untyped-def]
    return prometheus.text(
        history, "cmd", malformed=0, series=series, now=T0, constant=(("env", "p\trod"),), kept=kept
    )


def through_file(history: Summary, exported: dict[str, saved.Lines] | None) -> saved.Loaded:
    header = {**HEADER, "series": [], "labels": [["env", "p\trod"]]}
    loaded = saved.read(saved.write(header, history, exported), "cmd")
    assert loaded is not None
    return loaded


@settings(max_examples=150, deadline=None)
@given(RUNS, RUNS)
def test_lines_exported_again_are_what_a_full_export_says(
    before: list[tuple[str, int, int, int]], after: list[tuple[str, int, int, int]]
) -> None:
    """Keys with no new run are exported from the file as they were, unread; keys with new
    runs are read and exported anew: byte for byte what a summary read whole exports."""
    history = Summary()
    replay(before, history)
    first, series, exported = export(history, [])
    loaded = through_file(history, exported)
    assert export(loaded.summary, series, loaded.kept)[0] == first
    assert loaded.summary.awake == {}

    later = Summary()
    replay(after, later, first=len(before))
    loaded.summary.merge(later)
    whole = Summary()
    replay(before, whole)
    replay(after, whole, first=len(before))
    touched = {key for key, *_ in after}
    assert set(loaded.summary.awake) == touched
    again, series_again, exported_again = export(loaded.summary, series, loaded.kept)
    expected, expected_series, _ = export(whole, series)
    assert (again, series_again) == (expected, expected_series)

    reloaded = through_file(loaded.summary, exported_again)
    assert export(reloaded.summary, series_again, reloaded.kept)[0] == expected
    assert figures(reloaded.summary) == figures(whole)


def figures(history: Summary) -> dict[str, object]:
    """Everything the table and the export say of each key."""
    return {
        key: [
            *(getattr(group, name) for name in ("runs", "outcomes", "codes", "attempts")),
            *(getattr(group, name) for name in ("attempts_max", "retried", "attempt_outcomes")),
            *(getattr(group, name) for name in ("last_run", "last_rc", "last_duration")),
            *(getattr(group, name) for name in ("last_success", "last_failure", "recent")),
            *(
                [hist.buckets, hist.le, hist.count, hist.total, hist.maximum]
                for hist in (group.durations, group.attempt_durations)
            ),
        ]
        for key, group in history.by_key.items()
    }


def test_a_key_left_out_of_an_export_keeps_no_lines() -> None:
    """Lines are kept only for the constant labels of the last export: a key retired from
    it is written without them (its aggregate still as it was, unread)."""
    history = Summary()
    replay([("old", 1, 0, 5), ("new", 1, 0, 5)], history)
    _, series, exported = export(history, [])
    loaded = through_file(history, exported)
    retired, _, exported = prometheus.text(
        loaded.summary, "cmd", malformed=0, series=series, now=T0, retire_before=T0 + 0.5,
        constant=(("env", "p\trod"),), kept=loaded.kept,
    )  # fmt: skip
    assert 'cmd="old"' not in retired
    again = through_file(loaded.summary, exported)
    assert set(again.kept) == {"new"}
    assert again.summary.by_key["old"].runs == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1],  # cut short
        lambda data: data.replace(b'"runs":1', b'"runs":2'),  # a count changed
        lambda data: data.replace(b"\t", b" ", 1),  # a key line's shape
        lambda data: data + b"x",
    ],
)
def test_a_file_damaged_in_any_byte_is_refused(damage) -> None:  # type: ignore[no-untyped-def]
    history = Summary()
    replay([("job", 1, 0, 5)], history)
    _, _, exported = export(history, [])
    data = saved.write({**HEADER, "labels": [["env", "p\trod"]]}, history, exported)
    assert saved.read(data, "cmd") is not None
    with pytest.raises(ValueError, match="CRC"):
        saved.read(damage(data), "cmd")


def test_another_version_or_grouping_is_read_as_none() -> None:
    data = saved.write(dict(HEADER), Summary(), None)
    assert saved.read(data, "name") is None
    old = json.dumps({"version": 6, "by": "cmd", "summary": {}}).encode()
    assert saved.read(old, "cmd") is None


@pytest.mark.parametrize(("label", "reused"), [("job", True), ("(other)", False)])
def test_lines_are_exported_again_only_under_the_label_they_were_exported_under(
    label: str, reused: bool
) -> None:
    history = Summary()
    replay([("job", 1, 0, 5)], history)
    _, series, exported = export(history, [])
    loaded = through_file(history, exported)
    marked = [f"{piece} " for piece in loaded.kept["job"][1]]
    text, _, _ = export(loaded.summary, series, {"job": (label, marked)})
    assert (" \n" in text) is reused
    assert (loaded.summary.awake == {}) is reused


def test_a_checkpoint_of_0_5_is_read_whole_not_set_aside() -> None:
    """Version 7 (one JSON document) goes on where it stopped: its counts carry over to the
    new form, so an upgrade between two exports lowers no counter."""
    history = Summary()
    replay([("job", 2, 0, 5), ("job", 1, 1, 7)], history)
    document = {**HEADER, "version": 7, "summary": history.state()}
    del document["labels"], document["open"], document["newest"]
    loaded = saved.read(json.dumps(document).encode(), "cmd")
    assert loaded is not None
    assert loaded.position == HEADER["position"]
    assert figures(loaded.summary) == figures(history)
    assert saved.read(json.dumps({**document, "by": "name"}).encode(), "cmd") is None
