"""Runs and aggregates from attempt lines, checked against hand-computed figures."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters import stats_state
from domain.aggregate import BY_RC, RECENT, outcome_of
from domain.histogram import LE_MS, Histogram
from domain.stats import OTHER, Summary

T0 = 1_800_000_000.0


def attempt(
    summary: Summary, run_id: str, key: str, at: float, n: int, rc: int, ms: int, waits: bool
) -> None:
    summary.add(run_id, key, T0 + at, n, rc, ms, BY_RC[rc], waits)


def small_log() -> Summary:
    """deploy: one success on its 3rd attempt, one plain failure; backup: a timeout, a signal."""
    s = Summary()
    attempt(s, "r1", "deploy", 0, 1, 1, 100, True)
    attempt(s, "r2", "backup", 1, 1, 124, 2000, False)
    attempt(s, "r1", "deploy", 1.1, 2, 1, 100, True)
    attempt(s, "r1", "deploy", 3.2, 3, 0, 300, False)
    attempt(s, "r3", "deploy", 10, 1, 2, 50, False)
    attempt(s, "r4", "backup", 20, 1, 143, 500, False)
    return s


def test_runs_are_grouped_by_run_id_and_counted_by_outcome() -> None:
    """Attempts of one run_id make one run; its last rc decides the outcome."""
    groups = small_log().finished()
    deploy, backup = groups["deploy"], groups["backup"]
    assert (deploy.runs, deploy.outcomes["success"], deploy.outcomes["failure"]) == (2, 1, 1)
    assert (backup.outcomes["timeout"], backup.outcomes["signal"]) == (1, 1)
    assert (deploy.attempts, deploy.attempts_max, deploy.retried) == (4, 3, 1)
    assert (deploy.failures, backup.failures) == (1, 2)  # a timeout and a signal are failures


def test_run_duration_is_first_start_to_last_end() -> None:
    """r1 starts at 0 and its last attempt ends at 3.2 + 0.3 s: 3.5 s."""
    deploy = small_log().finished()["deploy"]
    assert deploy.durations.maximum == pytest.approx(3500)
    assert deploy.durations.count == 2
    assert deploy.last_run == T0 + 10
    assert deploy.last_success == pytest.approx(T0 + 3.5)


def test_since_keeps_runs_that_started_after_it() -> None:
    """--since: a run counts by the start of its first attempt."""
    s = Summary(since=T0 + 5)
    attempt(s, "old", "job", 0, 1, 0, 10, False)
    attempt(s, "new", "job", 6, 1, 0, 10, False)
    assert s.finished()["job"].runs == 1


def test_a_window_leaves_out_a_run_whose_first_attempt_was_not_read() -> None:
    """Read from a mark, or from a log rotated mid-run, a window sees a run's later attempts
    alone: it began before what was read, so before the window. Its attempts in the window
    still count as attempts."""
    s = Summary(since=T0 + 5)
    attempt(s, "began-before", "job", 6, 2, 0, 10, False)
    attempt(s, "waits", "job", 7, 3, 1, 10, True)
    attempt(s, "new", "job", 8, 1, 0, 10, False)
    groups = s.finished()
    assert (groups["job"].runs, groups["job"].attempt_durations.count) == (1, 3)
    whole = Summary()
    attempt(whole, "began-before", "job", 6, 2, 0, 10, False)
    assert whole.finished()["job"].runs == 1  # the history counts what it has


def test_a_run_never_seen_to_end_counts_as_it_stands() -> None:
    """A runner killed mid-run leaves an attempt followed by a wait: counted at the end."""
    s = Summary()
    attempt(s, "killed", "job", 0, 1, 1, 10, True)
    assert s.by_key["job"].runs == 0
    assert s.in_progress() == {"job": 1}
    groups = s.finished()
    assert groups["job"].outcomes["failure"] == 1
    assert s.by_key["job"].runs == 0


def test_merging_the_halves_of_a_log_gives_the_whole() -> None:
    """A run split between two parts of the log is joined when the parts merge."""
    first, second = Summary(), Summary()
    attempt(first, "r1", "job", 0, 1, 1, 10, True)
    attempt(first, "r2", "job", 0.5, 1, 0, 10, False)
    attempt(second, "r1", "job", 1, 2, 0, 10, False)
    first.merge(second)
    job = first.finished()["job"]
    assert (job.runs, job.attempts, job.retried, job.outcomes["success"]) == (2, 3, 1, 2)


@pytest.mark.parametrize(
    ("rc", "outcome"),
    [
        (0, "success"),
        (1, "failure"),
        (2, "failure"),
        (124, "timeout"),
        (130, "signal"),
        (143, "signal"),
        (137, "signal"),
        (127, "failure"),
        (255, "failure"),
    ],
)
def test_outcomes(rc: int, outcome: str) -> None:
    """124 is a timeout, 128+N a signal, other non-zero codes failures."""
    assert outcome_of(rc) == outcome


@given(st.lists(st.integers(1, 10**7), min_size=1, max_size=300), st.sampled_from([0.5, 0.95]))
def test_quantiles_are_within_four_percent(values: list[int], q: float) -> None:
    """The log-bucketed histogram answers within its bucket width of the exact quantile."""
    hist = Histogram()
    for value in values:
        hist.add(value)
    exact = sorted(values)[max(1, math.ceil(len(values) * q)) - 1]
    assert hist.quantile(q) == pytest.approx(exact, rel=0.041)
    assert hist.maximum == max(values)


def test_empty_histogram_answers_zero() -> None:
    """No runs: quantiles of 0, not an error."""
    assert Histogram().quantile(0.5) == 0


def test_attempts_are_counted_by_outcome_and_duration_apart_from_runs() -> None:
    """Per attempt: deploy's two failed attempts and its success; timeouts per attempt too."""
    deploy = small_log().finished()["deploy"]
    assert deploy.attempt_outcomes == {"success": 1, "failure": 3, "timeout": 0, "signal": 0}
    assert deploy.attempt_durations.count == 4
    assert deploy.attempt_durations.total == 100 + 100 + 300 + 50


def test_exit_codes_and_the_last_run_are_kept() -> None:
    """Counts per exit code; the last run's rc, duration, and the last failure's time."""
    deploy = small_log().finished()["deploy"]
    assert deploy.codes == {0: 1, 2: 1}
    assert deploy.last_rc == 2
    assert deploy.last_duration == pytest.approx(0.05)
    assert deploy.last_failure == pytest.approx(T0 + 10.05)
    assert deploy.last_failure_rc == 2
    assert deploy.last_success == pytest.approx(T0 + 3.5)


def test_recent_runs_are_the_latest_twenty_in_order() -> None:
    """The history strip: outcomes of the latest runs, oldest first, at most RECENT."""
    s = Summary()
    for n in range(30):
        attempt(s, f"r{n}", "job", 30 - n, 1, n % 2, 5, False)
    history = s.finished()["job"].history()
    assert len(history) == RECENT
    assert history == ["failure", "success"] * (RECENT // 2)  # those started at 11 to 30 s


def test_the_state_of_a_summary_round_trips_through_json() -> None:
    """A checkpoint: the summary, open runs included, written and read back, goes on the same."""
    s = small_log()
    attempt(s, "r9", "deploy", 30, 1, 1, 10, True)
    again = stats_state.load(json.loads(json.dumps(stats_state.dump(s))))
    attempt(s, "r9", "deploy", 31, 2, 0, 10, False)
    attempt(again, "r9", "deploy", 31, 2, 0, 10, False)
    assert stats_state.dump(again) == stats_state.dump(s)
    assert again.finished()["deploy"].durations.quantile(0.5) == s.finished()[
        "deploy"
    ].durations.quantile(0.5)


@given(st.lists(st.integers(0, 10**13), max_size=200), st.integers(0, 200))
def test_a_histogram_counted_in_parts_is_the_whole(values: list[int], cut: int) -> None:
    """Durations counted in two histograms then merged count as in one: buckets, total, max."""
    whole, first, second = Histogram(), Histogram(), Histogram()
    for value in values:
        whole.add(value)
    for value in values[:cut]:
        first.add(value)
    first.settle()
    for value in values[cut:]:
        second.add(value)
    first.merge(second)
    assert (first.le, first.fine, first.count, first.total, first.maximum) == (
        whole.le, whole.fine, whole.count, whole.total, whole.maximum,
    )  # fmt: skip


def test_the_exported_buckets_hold_each_duration_in_the_first_bound_not_below_it() -> None:
    """5 ms is in le=0.005, 6 ms in le=0.01; a day and a millisecond is in +Inf alone."""
    hist = Histogram()
    for ms in (5, 6, 86_400_001):
        hist.add(ms)
    assert hist.le[0] == 1
    assert hist.le[1] == 1
    assert hist.le[-1] == 1
    assert len(hist.le) == len(LE_MS) + 1


def test_a_busy_run_is_counted_apart_and_never_as_a_failure() -> None:
    """A run a busy lock refused made no attempt: busy, not among the runs."""
    s = Summary()
    s.add_busy("job", T0)
    attempt(s, "r1", "job", 1, 1, 0, 10, False)
    job = s.finished()["job"]
    assert (job.busy, job.runs, job.failures, job.attempt_durations.count) == (1, 1, 0, 1)


def test_a_run_ended_during_its_backoff_counts_its_attempts_alone() -> None:
    """A signal during the wait ends the run with the runner's code; no attempt is added."""
    s = Summary()
    attempt(s, "r1", "job", 0, 1, 1, 10, True)
    s.add("r1", "job", T0 + 1, 1, 143, 500, "signal", False, tried=False)
    job = s.finished()["job"]
    assert (job.runs, job.outcomes["signal"], job.attempt_durations.count) == (1, 1, 1)
    assert job.durations.maximum == 1500
    assert s.in_progress() == {}


def test_fold_joins_keys_by_label_first_then_keeps_the_exported_and_the_busiest() -> None:
    """Regression: past the bound, keys that share a label (a date in a name) went to OTHER
    one by one, so the exported sum under their label fell. Joined by label first, no
    exported series changes; past that the exported labels stay, then the busiest."""
    s = Summary()
    for day in range(1, 8):
        attempt(s, f"n{day}", f"nightly-{day}", day, 1, 0, 10, False)
    for n, name in enumerate(["a", "b", "b", "c", "c", "c"]):
        attempt(s, f"r{n}", name, 10 + n, 1, 0, 10, False)
    s.fold(lambda key: key.rstrip("0123456789") + "N" if key[-1].isdigit() else key, ["a"], 3)
    assert {key: group.runs for key, group in s.by_key.items()} == {
        "nightly-N": 7, "a": 1, "c": 3, OTHER: 2,
    }  # fmt: skip


def test_open_runs_a_week_past_the_newest_line_are_forgotten_and_at_most_some_kept() -> None:
    """Their runner was killed; a line dated ahead of now moves the log's clock no further."""
    s = Summary()
    attempt(s, "lost", "job", 0, 1, 1, 10, True)
    attempt(s, "kept", "job", 8 * 86400, 1, 1, 10, True)
    attempt(s, "later", "job", 8 * 86400 + 1, 1, 1, 10, True)
    s.forget_open(1, T0 + 10**9)
    assert list(s.open) == ["later"]
    ahead = Summary()
    attempt(ahead, "waits", "job", 0, 1, 1, 10, True)
    attempt(ahead, "ahead", "ntpdate", 10 * 365 * 86400, 1, 0, 10, False)
    ahead.forget_open(10, T0 + 60)
    assert list(ahead.open) == ["waits"]


@pytest.mark.parametrize(
    "damage",
    [
        {"newest": float("nan")},
        {"lines": -1},
        {"keys": {"job": {}}},
        {"open": {"r": ["job", T0, 0, 1, T0, 0, "success", True]}},
        {"open": {"r": ["job", T0, 1, 1, T0, 300, "success", True]}},
        {"open": {"r": ["job", T0, 1, 1, T0, 0, "won", True]}},
    ],
)
def test_a_kept_summary_that_does_not_hold_together_is_refused(damage: dict[str, object]) -> None:
    """Whatever a checkpoint holds, loading it gives a summary that counts on, or ValueError."""
    plain = {**stats_state.dump(small_log()), **damage}
    with pytest.raises(ValueError, match=r"^(a|an) "):
        stats_state.load(json.loads(json.dumps(plain)))


def _leaves(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """The path of every number, text, null and list in a plain value."""
    found = [path] if path else []
    if isinstance(value, dict):
        return found + [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return found + [p for n, v in enumerate(value) for p in _leaves(v, (*path, n))]
    return found


def _replaced(value: object, path: tuple[object, ...], new: object) -> object:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    inner = copy
    for step in path[:-1]:
        inner = inner[step]
    inner[path[-1]] = new
    return copy


HOSTILE: list[object] = [
    -1,
    256,
    10**16,
    float("nan"),
    float("inf"),
    True,
    None,
    "x",
    [],
    {},
    [1, "x"],
]


def test_any_value_of_a_kept_aggregate_replaced_loads_or_is_refused() -> None:
    """Each field of a kept aggregate, each count, time and code in its lists, replaced by a
    hostile value: ValueError, or a summary that settles, merges, dumps and reads on."""
    plain = json.loads(json.dumps(stats_state.dump(small_log())))
    key = next(iter(plain["keys"]))
    for path in _leaves(plain["keys"][key]):
        for new in HOSTILE:
            damaged = {**plain, "keys": {key: _replaced(plain["keys"][key], path, new)}}
            try:
                made = stats_state.load(json.loads(json.dumps(damaged)))
            except ValueError:
                continue
            made.merge(stats_state.load(plain))
            attempt(made, "later", "job", 99, 1, 1, 10, True)
            made.settle()
            for group in made.finished().values():
                assert group.runs >= 0
                assert group.failures >= 0
                assert 0 <= group.durations.quantile(0.5) <= group.durations.maximum
                assert all(type(v) is int and v >= 0 for v in group.durations.le)
                assert all(type(at) is float and -1e15 < at < 1e15 for at, _ in group.recent)
            assert stats_state.load(json.loads(json.dumps(stats_state.dump(made))))


@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.floats(0, 1e6), st.sampled_from([0, 1, 2, 124, 143])),
        max_size=60,
    ),
    st.integers(0, 60),
)
def test_runs_of_one_attempt_counted_together_count_as_one_at_a_time(
    runs: list[tuple[int, float, int]], cut: int
) -> None:
    """add_one keeps runs of one attempt to count them together at settle (Aggregate.singles):
    every figure is what counting each alone with add gives, settled at any moment."""
    together, alone = Summary(), Summary()
    for n, (key, at, rc) in enumerate(runs):
        ms = int(at) % 5000
        together.add_one(f"r{n}", f"k{key}", T0 + at, rc, ms)
        alone.add(f"r{n}", f"k{key}", T0 + at, 1, rc, ms, BY_RC[rc], False)
        if n == cut:
            together.settle()
    mine, theirs = stats_state.dump(together), stats_state.dump(alone)
    assert mine == theirs


def test_a_loaded_summary_counts_on_without_changing_what_it_was_loaded_from() -> None:
    """Regression: a loaded histogram counted into the checkpoint's own lists, so a read begun
    again after a rotation (which loads the same checkpoint again) started from buckets
    that held the first try's durations too."""
    plain = json.loads(json.dumps(stats_state.dump(small_log())))
    kept = json.dumps(plain)
    made = stats_state.load(plain)
    for n in range(5):
        attempt(made, f"more{n}", "deploy", 50 + n, 1, 0, 10 + n, False)
    made.settle()
    assert json.dumps(plain) == kept
    assert stats_state.load(plain)
