"""Runs and aggregates from attempt lines, checked against hand-computed figures."""

from __future__ import annotations

import json
import math
import pickle
import re
from array import array
from bisect import bisect_left

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.aggregate import RECENT, Aggregate
from domain.buckets import FINE_MAX, Placed, fine_bounds
from domain.errors import Damaged
from domain.histogram import Histogram
from domain.outcomes import outcome_of
from domain.packed import pack, unpack
from domain.stats import OTHER, Summary
from domain.waiting import count_attempts, count_singles, count_whole
from entrypoints.exposition import Text
from tests.fakes import FakeSaved
from tests.procs import ROOT

T0 = 1_800_000_000.0


def attempt(
    summary: Summary, run_id: str, key: str, at: float, n: int, rc: int, ms: int, waits: bool
) -> None:
    summary.add(run_id, key, T0 + at, n, rc, ms, waits)


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
    assert (deploy.failures, backup.failures) == (1, 2)


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
def test_quantiles_are_within_two_percent(values: list[int], q: float) -> None:
    """The log-bucketed histogram answers within its bucket width of the exact quantile."""
    hist = Histogram()
    for value in values:
        hist.add(value)
    exact = sorted(values)[max(1, math.ceil(len(values) * q)) - 1]
    assert hist.quantile(q) == pytest.approx(exact, rel=0.021)
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
    recent = s.finished()["job"].recent
    assert len(recent) == RECENT
    assert [at for at, _ in recent] == sorted(at for at, _ in recent)
    assert recent[-1] == (T0 + 30, "success")


def test_the_state_of_a_summary_round_trips_through_json() -> None:
    """A checkpoint: the summary, open runs included, written and read back, goes on the same."""
    s = small_log()
    attempt(s, "r9", "deploy", 30, 1, 1, 10, True)
    again = Summary.from_state(json.loads(json.dumps(s.state())))
    attempt(s, "r9", "deploy", 31, 2, 0, 10, False)
    attempt(again, "r9", "deploy", 31, 2, 0, 10, False)
    mine, theirs = s.finished()["deploy"], again.finished()["deploy"]
    assert theirs.state() == mine.state()
    assert theirs.durations.quantile(0.5) == mine.durations.quantile(0.5)


def test_prometheus_buckets_are_cumulative_and_end_at_inf() -> None:
    """le buckets from milliseconds to a day, then +Inf; counts only grow along them."""
    h = Histogram()
    for ms in (1, 40, 40, 2000, 10**9):
        h.add(ms)
    text = Text._histogram("runner_run_duration_seconds", 'cmd="x"', h)
    buckets = [line.split('le="')[1].split('"} ') for line in text.splitlines()[:-2]]
    pairs = [(le, int(count)) for le, count in buckets]
    assert pairs[0] == ("0.005", 1)
    assert dict(pairs)["0.05"] == 3
    assert dict(pairs)["5.0"] == 4
    assert pairs[-1] == ("+Inf", 5)
    assert [count for _, count in pairs] == sorted(count for _, count in pairs)


def twin(values: list[int]) -> Histogram:
    made = Histogram()
    for value in values:
        made.add(value)
    return made


durations = st.lists(st.integers(min_value=0, max_value=10**13), max_size=30)


def figures(histogram: Histogram) -> tuple[object, ...]:
    first, counts = histogram.span()
    buckets = [0] * first + counts
    trimmed = buckets[: max((i + 1 for i, n in enumerate(buckets) if n), default=0)]
    return (trimmed, histogram.le, histogram.count, histogram.total, histogram.maximum)


def saved(histogram: Histogram) -> Histogram:
    return Histogram.from_state(json.loads(json.dumps(histogram.state())))


@given(durations, durations, durations)
def test_a_histogram_saved_and_loaded_goes_on_as_one_never_saved(
    before: list[int], after: list[int], other: list[int]
) -> None:
    """Adding to it, merging into it, saving it again and merging it elsewhere count every
    duration once, as in a histogram that was never saved."""
    whole = twin(before + after + other)
    loaded = saved(twin(before))
    for value in after:
        loaded.add(value)
    loaded.merge(twin(other))
    again = saved(loaded)
    assert (again.le, again.count) == (whole.le, whole.count)  # before the fine buckets
    assert figures(again) == figures(whole)
    assert again.quantile(0.5) == whole.quantile(0.5)
    elsewhere = twin([])
    elsewhere.merge(saved(whole))
    assert figures(elsewhere) == figures(whole)


@given(st.lists(durations, max_size=6))
def test_a_histogram_counted_in_parts_in_any_order_is_the_whole(parts: list[list[int]]) -> None:
    """Fine buckets are kept from the first one counted: parts that begin lower or higher
    than what is there (counted, merged, or sent from a worker) fill the same buckets."""
    whole = twin([value for part in parts for value in part])
    pieces = twin([])
    for part in reversed(parts):
        pieces.settle()
        for value in part:
            pieces.add(value)
    merged = twin([])
    for part in parts:
        merged.merge(pickle.loads(pickle.dumps(twin(part))))
    for histogram in (pieces, merged):
        assert figures(histogram) == figures(whole)
        assert histogram.quantile(0.5) == whole.quantile(0.5)
        assert histogram.state()[:1] == whole.state()[:1]


@pytest.mark.parametrize("more", [1, 2, 40])
def test_a_histogram_read_packed_takes_counts_past_what_its_bytes_held(more: int) -> None:
    """Fine buckets read from a checkpoint stay packed, one byte a count when each is below
    256, while a few durations are added to them: a count that outgrows its bytes, in a
    bucket below the first and past the last, is counted whole, and saved wider."""
    durations = [5] * 255 + [80]
    loaded = saved(twin(durations))
    assert str(loaded.state()[0]).split(":")[1] == "B"
    added = [5] * more + [1, 3_600_000]
    for value in added:
        loaded.add(value)
    whole = twin(durations + added)
    assert figures(saved(loaded)) == figures(whole)
    assert figures(loaded) == figures(whole)  # decoded, the durations placed in the array
    assert str(saved(loaded).state()[0]).split(":")[1] == "H"


def test_a_histogram_of_a_few_long_durations_holds_a_few_counts() -> None:
    """Memory: one duration of an hour held some 700 zeros before it, per histogram."""
    histogram = twin([3_600_000])
    first, counts = histogram.span()
    assert (first > 700, counts) == (True, [1])


@given(
    st.integers(0, FINE_MAX - 30),
    st.lists(st.integers(0, 255) | st.integers(0, 2**16) | st.integers(0, 2**64 - 1), max_size=30),
)
def test_fine_buckets_packed_come_back_as_they_were(first: int, counts: list[int]) -> None:
    """Counts of every size (one byte to eight each, by the largest) come back whole."""
    packed = pack(first, counts)
    assert packed.isascii()
    start, back, waiting = unpack(packed)
    assert (start, back.tolist(), waiting) == (first, counts, [])
    fewest = next(code for code in "BHIQ" if max(counts, default=0) < 1 << 8 * array(code).itemsize)
    assert back.typecode == fewest
    assert pack(first, back) == packed  # counts still packed are written as they were read
    with pytest.raises(OverflowError, match="2"):
        pack(first, [*counts, 2**64])


@pytest.mark.parametrize(
    "packed",
    [
        *("", "0:B", "0:B:AQ=", "0:B:AQ==:", "0:b:AQ==", "0:BB:AQ==", "0:X:AQ==", "-1:B:AQ=="),
        *("x:B:AQ==", "٣:B:AQ==", "12345:B:AQ==", "0:B:AQ==\n", "0:B:A Q==", "0:B:AQ=a"),
        *("0:H:AQ==", "0:I:AQID", "1999:B:AQI=", "0:B:é"),
        *("0:B:AQ==:2:BAQ==", "0:B:AQ==:1:", "0:B:AQ==:1:BAQ==:"),
    ],
)
def test_fine_buckets_pack_could_not_have_written_are_refused(packed: str) -> None:
    """Short data, a wrong or unknown type code, base64 in another form than pack's (its
    decoder would skip what it does not know), too many buckets: none is read. Text that
    could not be written back on a checkpoint's line is refused when it is read; the rest
    when the fine buckets are decoded, Damaged then, as an aggregate read late is."""
    state = Histogram().state()
    state[0] = packed
    if not (packed.isascii() and "\n" not in packed and packed.count(":") in (2, 4)):
        with pytest.raises(ValueError, match="histogram"):
            Histogram.from_state(state)
        return
    carried = Histogram.from_state(state)
    with pytest.raises(Damaged, match="does not hold together: histogram"):
        carried.span()


def test_a_histogram_saved_by_version_9_is_carried_over() -> None:
    """Versions 8 and 9 saved the fine buckets as text with (bucket, count) pairs beside
    them, below, inside and above the text's: read whole, as the histogram they held."""
    histogram = twin([5, 5, 80, 3_600_000, 3_600_000])
    first, counts = histogram.span()
    text = f"{first}:{','.join(map(str, counts))}"
    delta = [[first - 3, 2], [first + 1, 4], [first + len(counts) + 5, 1]]
    _, le, *totals = histogram.state()
    carried = Histogram.from_state([text, delta, le, *totals])
    assert carried.span() == (
        first - 3,
        [2, 0, 0, counts[0], counts[1] + 4, *counts[2:], *[0] * 5, 1],
    )
    assert (carried.le, carried.count) == (histogram.le, histogram.count)
    assert Histogram.from_state(carried.state()).span() == carried.span()


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        *(("", []), ("x", []), ("1:2,", []), ("1:-2", []), ("1: 2", []), ("99999:1", [])),
        *(("0:" + ",".join(["1"] * 2001), []), ("1:٣", []), ("1:2", [[1, -1]])),
        *(("1:2", [[2000, 1]]), ("1:2", [[1, 1, 1]]), ("1:2", [[1, 1]] * 257)),
    ],
)
def test_a_histogram_state_of_version_9_that_does_not_hold_together_is_refused(
    text: str, delta: list[object]
) -> None:
    _, le, *totals = Histogram().state()
    with pytest.raises(ValueError, match="histogram"):
        Histogram.from_state([text, delta, le, *totals])


def test_bound_keeps_the_exported_keys_then_the_busiest_and_the_rest_together() -> None:
    """The exported key stays apart even when quiet; the busiest fill the rest; every
    other run is counted under (other), none lost. The latest open runs are kept."""
    s = Summary()
    for n, (key, runs) in enumerate(
        [("quiet", 1), ("busy", 9), ("mid", 5), ("low", 2), ("one", 1)]
    ):
        for r in range(runs):
            attempt(s, f"{key}{r}", key, n * 10 + r, 1, 0, 5, False)
    for r in range(4):
        attempt(s, f"open{r}", "busy", 100 + r, 1, 1, 5, True)
    s.bound(["quiet", "gone"], 3, 2)
    groups = s.finished()
    assert sorted(groups) == ["(other)", "busy", "quiet"]
    assert (groups["quiet"].runs, groups["(other)"].runs) == (1, 5 + 2 + 1)
    assert sorted(s.open) == ["open2", "open3"]
    s.bound(["quiet"], 3, 2)  # bounded already: nothing moves
    assert s.finished()["(other)"].runs == 8


def test_a_run_never_seen_to_end_of_a_key_counted_under_other_still_counts() -> None:
    """A killed run of a command whose history joined (other): counted as it stands, under
    its own key, beside the history."""
    s = Summary()
    for n, key in enumerate(["a", "a", "b", "c"]):
        attempt(s, f"r{n}", key, n, 1, 0, 5, False)
    attempt(s, "killed", "b", 10, 1, 1, 5, True)
    s.bound(["a"], 2, 10)
    groups = s.finished()
    assert (groups["a"].runs, groups[OTHER].runs, groups["b"].runs) == (2, 2, 1)
    assert groups["b"].outcomes["failure"] == 1


@settings(max_examples=1000)
@given(st.text(alphabet="0123456789,:x ٣", max_size=40))
def test_saved_fine_buckets_are_checked_so_that_decoding_them_cannot_fail(text: str) -> None:
    """What the cheap check takes decodes; what the full pattern takes, it takes too."""
    from domain.text_buckets import PACKED, readable

    if re.fullmatch(PACKED, text):
        assert readable(text)
    if readable(text):
        first, _, counts = text.partition(":")
        int(first)
        list(map(int, counts.split(","))) if counts else []


singles = st.lists(
    st.tuples(
        st.integers(0, 400).map(lambda at: T0 + at / 8),  # ties: starts in the same instant
        st.sampled_from([0, 0, 0, 1, 2, 124, 137, 143, 255]),
        st.integers(0, 10**8),
    ),
    min_size=1,
    max_size=80,
)


def attempt_of(aggregate: Aggregate, duration_ms: int, outcome: str) -> None:
    """One attempt counted the plain way: its outcome, and its duration."""
    aggregate.attempt_outcomes[outcome] += 1
    aggregate.attempt_durations.add(duration_ms)


@settings(max_examples=300)
@given(singles, singles)
def test_runs_of_one_attempt_counted_together_count_as_one_at_a_time(
    earlier: list[tuple[float, int, int]], later: list[tuple[float, int, int]]
) -> None:
    """`count_singles` (a whole batch in C-level passes) counts what `attempt` and `add` count
    run by run, over what was counted before: the last run, success and failure, and the
    latest RECENT runs, whatever the order and whatever the ties."""
    from domain.aggregate import Aggregate

    one_by_one, together = Aggregate(), Aggregate()
    for batch in (earlier, later):
        rows = [(at, rc, ms, outcome_of(rc)) for at, rc, ms in batch]
        for at, rc, ms, outcome in rows:
            attempt_of(one_by_one, ms, outcome)
            one_by_one.add(rc, 1, at, at + ms / 1000, outcome)
        count_singles(together, [value for row in rows for value in row])
    latest = one_by_one.recent[-RECENT:]
    assert [at for at, _ in together.recent] == [at for at, _ in latest]
    together.recent = latest  # runs that started in the same instant may come in either order
    assert together.state() == one_by_one.state()


wholes = st.lists(
    st.tuples(
        st.integers(0, 400).map(lambda at: T0 + at / 8),  # ties: runs begun in the same instant
        st.integers(0, 10**7).map(lambda ms: ms / 1000),  # how long the run took, in seconds
        st.sampled_from([0, 0, 1, 2, 124, 137, 143, 255]),
        st.lists(st.tuples(st.sampled_from([0, 1, 124, 137]), st.integers(0, 10**8)), max_size=4),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300)
@given(wholes, wholes)
def test_retried_runs_counted_together_count_as_one_at_a_time(
    earlier: list[tuple[float, float, int, list[tuple[int, int]]]],
    later: list[tuple[float, float, int, list[tuple[int, int]]]],
) -> None:
    """`count_whole` and `count_attempts` (a batch in C-level passes) count what `add` and
    `attempt` count run by run and attempt by attempt: attempts, retries and the longest,
    durations, the last run, success and failure, and the latest RECENT runs."""
    from domain.aggregate import Aggregate

    one_by_one, together = Aggregate(), Aggregate()
    for batch in (earlier, later):
        runs: list[object] = []
        tries: list[object] = []
        for first, took, rc, earlier_tries in batch:
            attempts = [*earlier_tries, (rc, round(took * 1000))]
            for try_rc, ms in attempts:
                attempt_of(one_by_one, ms, outcome_of(try_rc))
                tries += ms, outcome_of(try_rc)
            one_by_one.add(rc, len(attempts), first, first + took, outcome_of(rc))
            runs += first, first + took, rc, len(attempts), outcome_of(rc)
        count_whole(together, runs)
        count_attempts(together, tries)
    latest = one_by_one.recent[-RECENT:]
    assert [at for at, _ in together.recent] == [at for at, _ in latest]
    together.recent = latest  # runs that started in the same instant may come in either order
    assert together.state() == one_by_one.state()


def saved_summary(*keys: str) -> tuple[Summary, dict[str, FakeSaved]]:
    """A summary as a checkpoint leaves it: each key's aggregate kept, not read (one run)."""
    kept = {}
    for n, key in enumerate(keys):
        one = Summary()
        attempt(one, f"old-{key}", key, n, 1, 0, 10, False)
        kept[key] = FakeSaved(one.by_key[key])
    s = Summary()
    s.saved = dict(kept)
    return s, kept


def test_a_saved_aggregate_is_read_only_when_a_run_is_added_to_it() -> None:
    s, kept = saved_summary("deploy", "backup", "report")
    attempt(s, "r1", "deploy", 50, 1, 1, 100, True)
    attempt(s, "r1", "deploy", 51, 2, 0, 100, False)
    later = Summary()
    attempt(later, "r2", "backup", 60, 1, 0, 5, False)
    s.merge(later)
    assert set(s.awake) == {"deploy", "backup"}
    assert (kept["deploy"].wakes, kept["backup"].wakes, kept["report"].wakes) == (1, 1, 0)
    assert s.last_runs() == {"deploy": T0 + 50, "backup": T0 + 60, "report": T0 + 2}
    assert kept["report"].wakes == 0
    assert {key: group.runs for key, group in s.by_key.items()} == {
        "deploy": 2,
        "backup": 2,
        "report": 1,
    }
    assert kept["report"].wakes == 1


def test_bound_keeps_the_exported_saved_keys_unread() -> None:
    """Beyond the bound, keys already exported stay apart without being read; the new ones
    join (other)."""
    s, kept = saved_summary("a", "b", "c")
    for n, key in enumerate(["d", "e"]):
        attempt(s, f"new-{n}", key, 10 + n, 1, 0, 10, False)
    assert s.bound(["a", "b", "c"], keys=4, runs=10)
    assert [fake.wakes for fake in kept.values()] == [0, 0, 0]
    assert set(s.saved) == {"a", "b", "c"}
    assert set(s.awake) == {OTHER}
    assert s.by_key[OTHER].runs == 2
    assert not s.bound(["a", "b", "c"], keys=4, runs=10)


def test_bound_leaves_a_saved_other_unread_when_no_key_joins_it() -> None:
    """A checkpoint at its bound (every key exported, and (other)) after a few new runs of
    exported keys: nothing joins (other), so it is neither read nor said to have changed
    (its lines stay copyable from the textfile before)."""
    s, kept = saved_summary("a", "b", "c", OTHER)
    attempt(s, "new", "b", 10, 1, 0, 10, False)
    assert not s.bound(["a", "b", "c"], keys=3, runs=10)
    assert kept[OTHER].wakes == 0
    assert set(s.saved) == {"a", "c", OTHER}


def test_bound_never_counts_an_exported_other_twice() -> None:
    """Regression: a command named (other), once exported, made bound pop it twice."""
    s = Summary()
    for n, key in enumerate([OTHER, "a", "b", "c"]):
        attempt(s, f"r{n}", key, n, 1, 0, 10, False)
    s.bound([OTHER, "a", "b"], keys=3, runs=10)
    assert sum(group.runs for group in s.by_key.values()) == 4
    assert len(s.by_key) <= 3


def test_a_damaged_saved_aggregate_is_said_when_it_is_read() -> None:
    s, _ = saved_summary("deploy")
    s.saved["broken"] = FakeSaved(s.saved["deploy"].wake(), damaged=True)
    attempt(s, "r1", "deploy", 50, 1, 0, 100, False)
    assert s.awake["deploy"].runs == 2
    with pytest.raises(Damaged):
        s.by_key  # noqa: B018 - reading every aggregate


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("runs", "x"),
        ("runs", -1),
        ("retried", 1.5),
        ("attempts", True),
        ("last_run", float("nan")),
        ("last_run", "x"),
        ("last_duration", float("inf")),
        ("last_rc", "0"),
        ("recent", [[1.0]]),
    ],
)
def test_an_aggregate_state_of_a_wrong_kind_is_refused(field: str, value: object) -> None:
    """Nothing that passes from_state can fail later, when it is counted into or shown."""
    from domain.aggregate import Aggregate

    state = json.loads(json.dumps(small_log().by_key["deploy"].state()))
    assert Aggregate.from_state(state).runs == 2
    state[field] = value
    with pytest.raises((ValueError, TypeError)):
        Aggregate.from_state(state)


def test_reading_one_aggregate_leaves_the_others_waiting() -> None:
    """Regression: reading one key's aggregate counted every key's waiting runs, so an
    export of 10,000 commands did so 10,000 times (a first read took 24 s instead of 5)."""
    s = Summary()
    for n, key in enumerate(["a", "b", "c"]):
        attempt(s, f"r{n}", key, n, 1, 0, 10, False)
    assert s.aggregate("a").runs == 1
    assert set(s.waiting.singles) == {"b", "c"}
    assert s.aggregate("none").runs == 0
    assert {key: group.runs for key, group in s.by_key.items()} == {"a": 1, "b": 1, "c": 1}


def test_folding_bounds_the_keys_of_a_long_read_and_loses_no_run() -> None:
    """A command line that differs at every run (a date in an argument) made one key, with
    its aggregate, per run: 200,000 such lines took 3.4 GB. Past `most` keys, the keys
    neither kept nor among the busiest join (other), runs and attempts alike; a run still
    open keeps its key."""
    s = Summary()
    for n in range(5):
        attempt(s, f"b{n}", "busy", n, 1, 0, 5, False)
    attempt(s, "k", "kept", 1, 1, 0, 5, False)
    for n in range(100):
        attempt(s, f"d{n}", f"dated {n}", 10 + n, 1, 0, 5, False)
    for n in range(3):
        attempt(s, f"r{n}", f"retried {n}", 200 + n, 1, 1, 5, True)
        attempt(s, f"r{n}", f"retried {n}", 201 + n, 2, 0, 5, False)
    attempt(s, "open", "dated 7", 300, 1, 1, 5, True)
    before = s.finished()
    s.fold(["kept", "gone"], 4)
    after = s.finished()
    assert {"busy", "kept", OTHER} <= set(after)
    assert len(set(after) - {"dated 7"}) <= 4 + 1
    for field in ("runs", "attempts", "retried", "failures"):
        total = sum(getattr(aggregate, field) for aggregate in before.values())
        assert sum(getattr(aggregate, field) for aggregate in after.values()) == total
    assert sum(a.durations.count for a in after.values()) == 110
    assert sum(a.attempt_durations.count for a in after.values()) == 113
    assert s.in_progress() == {"dated 7": 1}
    s.fold(["kept"], 4)  # within bounds now: nothing moves
    assert s.finished()[OTHER].runs == after[OTHER].runs


def test_folding_while_runs_wait_to_be_counted_loses_none() -> None:
    """A long read folds after each batch, before what it read is counted: runs of one
    attempt, whole retried runs and their attempts, waiting, join (other) as they wait."""

    def read() -> Summary:
        s = Summary()
        for n in range(40):
            attempt(s, f"d{n}", f"dated {n}", n, 1, n % 3, 5 + n, False)
            attempt(s, f"r{n}", f"retried {n}", 100 + n, 1, 1, 5, True)
            attempt(s, f"r{n}", f"retried {n}", 101 + n, 2, 0, 7, False)
        return s

    folded, whole = read(), read()
    assert all((folded.waiting.singles, folded.waiting.whole, folded.waiting.tries))
    folded.fold([], 4)
    assert len(set(folded.waiting)) <= 5
    after, before = folded.finished(), whole.finished()
    assert len(after) <= 5
    for field in ("runs", "attempts", "retried", "failures"):
        total = sum(getattr(aggregate, field) for aggregate in before.values())
        assert sum(getattr(aggregate, field) for aggregate in after.values()) == total
    for histogram in ("durations", "attempt_durations"):
        total = sum(getattr(a, histogram).total for a in before.values())
        assert sum(getattr(a, histogram).total for a in after.values()) == total


def test_fine_bounds_are_the_formula_computed_only_as_far_as_needed() -> None:
    """Each fine bound is int(1.02 ** index), the last 2**128 (it holds anything longer);
    a process that places only short durations computes a few hundred of the 2,000."""
    import subprocess
    import sys

    code = (
        f"import sys; sys.path.insert(0, {ROOT!r});"
        "from domain.buckets import FINE_BOUNDS, Placed;"
        "Placed([3, 40, 7]).fine(); print(len(FINE_BOUNDS))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 0 < int(shown.stdout) <= 256
    everything = fine_bounds(1 << 200)  # past the last: ends, whole
    assert everything == [int(1.02**index) for index in range(FINE_MAX - 1)] + [1 << 128]
    assert fine_bounds(5) is everything
    assert Placed([10**13]).fine()[0] == bisect_left(everything, 10**13)


@given(
    st.lists(
        st.integers(0, 10**13) | st.integers(0, 7_200_000) | st.sampled_from([0, 1, 1000, 1001]),
        min_size=1,
        max_size=60,
    )
)
def test_durations_placed_together_fall_where_each_falls_alone(values: list[int]) -> None:
    """Many durations over few buckets (bisection by bound) and few over many (by duration)
    land in the bucket that holds each: the first whose bound is at least it."""
    placed = Placed(values)
    bounds = fine_bounds(max(values))
    alone: dict[int, int] = {}
    for value in values:
        alone[bisect_left(bounds, value)] = alone.get(bisect_left(bounds, value), 0) + 1
    first, fine, indexes = placed.fine()
    if fine is None:  # each placed alone: its bucket, in order
        assert indexes == sorted(bisect_left(bounds, value) for value in values)
        assert first == indexes[0]
    else:
        together = {first + at: times for at, times in enumerate(fine) if times}
        assert together == alone
        assert fine[0]
        assert fine[-1]
    assert (placed.count, placed.total, placed.maximum) == (len(values), sum(values), max(values))
