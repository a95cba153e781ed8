"""Open runs by column: back as they were, and nothing else taken."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters import cjson, saved
from adapters.open_runs import packed_runs, runs_of, unpacked_runs
from adapters.packing import packed, packed_counts
from domain.outcomes import OUTCOMES
from domain.runs import Run
from domain.stats import Summary
from tests.checkpoints import HEADER

times = st.floats(min_value=-1e14, max_value=1e14, allow_nan=False)
runs = st.dictionaries(
    st.text(max_size=20),
    st.tuples(
        st.sampled_from(["job", "backup --db x", 'é \\ " \x7f', ""]),
        times,
        st.integers(1, 1000),
        st.integers(0, 10_000),
        times,
        st.integers(0, 255),
        st.booleans(),
        st.sampled_from([None, *OUTCOMES]),
    ),
    max_size=30,
)


def made(states: dict[str, tuple[Any, ...]]) -> dict[str, Run]:
    return {run_id: Run.from_state(list(state)) for run_id, state in states.items()}


@given(runs)
def test_runs_by_column_come_back_as_they_were(states: dict[str, tuple[Any, ...]]) -> None:
    """Through the header's JSON, as a checkpoint keeps them: every field, in order."""
    before = made(states)
    after = unpacked_runs(cjson.loads(cjson.dumps(packed_runs(before))))
    assert list(after) == list(before)
    assert [run.state() for run in after.values()] == [run.state() for run in before.values()]


def columns(**change: object) -> dict[str, object]:
    """Two runs by column, with `change` made."""
    state = packed_runs(
        made(
            {
                "a": ("job", 1.0, 1, 1, 2.0, 1, True, None),
                "b": ("x", 3.0, 2, 2, 4.0, 0, False, "failure"),
            }
        )
    )
    return {**state, **change}


@pytest.mark.parametrize(
    "state",
    [
        columns(ids=["a"]),
        columns(ids=["a", "a"]),
        columns(ids=["a", 7]),
        columns(keys=["job"]),
        columns(keys="job"),
        columns(first=packed("d", [1.0]).decode()),
        columns(first=packed("d", [1.0, float("nan")]).decode()),
        columns(last_end=packed("d", [1.0, 1e16]).decode()),
        columns(key=packed_counts([0, 5]).decode()),
        columns(small=packed_counts([1, 1, 1, 1, 0]).decode()),
        columns(small=packed_counts([0, 1, 1, 1, 0, 1, 1, 0, 0, 0]).decode()),  # attempt 0
        columns(small=packed_counts([1, 1, 1, 2, 0, 1, 1, 0, 0, 0]).decode()),  # open 2
        columns(small=packed_counts([1, 1, 1, 1, 9, 1, 1, 0, 0, 0]).decode()),  # outcome 9
        columns(small="!"),
        {"ids": []},
    ],
)
def test_columns_packed_runs_could_not_have_written_are_refused(state: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError, KeyError, AttributeError)):
        unpacked_runs(state)


def test_an_empty_object_is_no_open_runs_in_either_form() -> None:
    assert runs_of({}, by_column=True) == {}
    assert runs_of({}, by_column=False) == {}


@pytest.mark.parametrize(
    "state", [["job", 1.0, 1, 1, 2.0, -1, True], ["job", 1.0, 0, 1, 2.0, 0, True]]
)
def test_runs_as_arrays_that_cannot_be_packed_again_are_refused(state: list[Any]) -> None:
    """A checkpoint before version 14 held each open run as an array: one with a negative rc or
    no first attempt could not be written by column, and is refused when it is read."""
    with pytest.raises(ValueError, match="open runs"):
        runs_of({"r": state}, by_column=False)


def test_a_checkpoint_of_version_13_goes_on_with_its_open_runs() -> None:
    """Up to version 13 each open run was an array: read as before, written by column."""
    history = Summary()
    history.add("r1", "job", 1_800_000_000.0, 1, 1, 5, True)
    history.add("r2", "job", 1_800_000_001.0, 1, 124, 5, True, "timeout")
    old = {**HEADER, "open": {rid: run.state() for rid, run in history.open.items()}}
    data = b"".join(saved.sealed(saved.keyed(old, [], []), []))
    data = data.replace(b'"version":%d' % saved.VERSION, b'"version":13', 1)
    loaded = saved.read(data, "cmd")
    assert loaded is not None
    assert [run.state() for run in loaded.summary.open.values()] == [
        run.state() for run in history.open.values()
    ]
    again = {**HEADER, "open": packed_runs(loaded.summary.open)}
    header = json.loads(b"".join(saved.sealed(saved.keyed(again, [], []), [])).split(b"\n")[1])
    assert set(header["open"]) == {"ids", "keys", "key", "first", "last_end", "small"}
