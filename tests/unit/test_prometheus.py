"""The Prometheus view: parsed back by prometheus_client, counters that never go down."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from domain.aggregate import BY_RC
from domain.stats import Summary
from entrypoints import prometheus


def export(
    history: Summary,
    by: str,
    *,
    malformed: int = 0,
    series: list[str] | None = None,
    **options: Any,
) -> tuple[str, list[str], None]:
    """The textfile as text, and the label values it exported."""
    history.malformed = malformed
    exported = list(series or [])
    return prometheus.render(history, by, exported, **options).decode(), exported, None


def add(
    s: Summary, run_id: str, key: str, at: float, n: int, rc: int, ms: int, waits: bool
) -> None:
    s.add(run_id, key, at, n, rc, ms, BY_RC[rc], waits)


T0 = 1_800_000_000.0
WEIRD = 'sh -c "echo \\"hi\\"\\nbye" \\\\ done'


def history() -> Summary:
    s = Summary()
    add(s, "r1", "deploy", T0, 1, 1, 100, True)
    add(s, "r1", "deploy", T0 + 1, 2, 0, 400, False)
    add(s, "r2", WEIRD, T0 + 2, 1, 124, 2000, False)
    add(s, "r3", WEIRD, T0 + 9, 1, 0, 10, False)
    return s


def families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(text: str, family: str) -> dict[tuple[str, ...], float]:
    found = families(text)[family]
    return {
        (s.name, *(f"{k}={v}" for k, v in sorted(s.labels.items()))): s.value
        for s in found.samples  # type: ignore[attr-defined]
    }


def test_the_textfile_parses_back_with_escaped_labels() -> None:
    """A real parser reads every family; quotes, backslashes and newlines in labels survive."""
    text, series, _ = export(history(), "cmd", malformed=3, series=[], now=T0 + 60)
    runs = samples(text, "runner_runs")
    assert runs[("runner_runs_total", f"cmd={WEIRD}", "outcome=timeout")] == 1
    assert runs[("runner_runs_total", "cmd=deploy", "outcome=success")] == 1
    kinds = {name: family.type for name, family in families(text).items()}  # type: ignore[attr-defined]
    assert kinds["runner_runs"] == "counter"
    assert kinds["runner_run_duration_seconds"] == "histogram"
    assert kinds["runner_attempt_duration_seconds"] == "histogram"
    assert kinds["runner_last_exit_code"] == "gauge"
    assert sorted(series) == sorted([WEIRD, "deploy"])
    assert samples(text, "runner_log_malformed_lines")[("runner_log_malformed_lines_total",)] == 3


def test_histograms_count_runs_and_attempts_in_cumulative_buckets() -> None:
    """deploy: one run of 1.4 s, attempts of 0.1 s and 0.4 s; sums in seconds."""
    text, _, _ = export(history(), "cmd", malformed=0, series=[], now=T0)
    runs = samples(text, "runner_run_duration_seconds")
    assert runs[("runner_run_duration_seconds_bucket", "cmd=deploy", "le=1.0")] == 0
    assert runs[("runner_run_duration_seconds_bucket", "cmd=deploy", "le=2.5")] == 1
    assert runs[("runner_run_duration_seconds_count", "cmd=deploy")] == 1
    assert runs[("runner_run_duration_seconds_sum", "cmd=deploy")] == pytest.approx(1.4)
    attempts = samples(text, "runner_attempt_duration_seconds")
    assert attempts[("runner_attempt_duration_seconds_bucket", "cmd=deploy", "le=0.25")] == 1
    assert attempts[("runner_attempt_duration_seconds_count", "cmd=deploy")] == 2


def test_bucket_lines_carry_labels_with_format_marks_and_nul_as_they_are() -> None:
    """The bucket lines are one %-format a histogram: a label's own `%`, `%d` or NUL (a
    hand-written line can hold one) is text, in every bucket."""
    key = "printf '%d%%s\x00' 100%"
    s = Summary()
    add(s, "r1", key, T0, 1, 0, 1500, False)
    text, _, _ = export(s, "cmd", malformed=0, series=[], now=T0, constant=(("env", "5%"),))
    runs = samples(text, "runner_run_duration_seconds")
    buckets = [k for k in runs if k[0] == "runner_run_duration_seconds_bucket"]
    assert len(buckets) == 23
    assert all(k[1:3] == (f"cmd={key}", "env=5%") for k in buckets)
    assert runs[("runner_run_duration_seconds_bucket", f"cmd={key}", "env=5%", "le=2.5")] == 1
    assert runs[("runner_run_duration_seconds_bucket", f"cmd={key}", "env=5%", "le=1.0")] == 0


def test_counters_never_go_down_and_series_never_disappear() -> None:
    """Two exports with runs between: no counter is smaller, no series has gone."""
    s = history()
    first, series, _ = export(s, "cmd", malformed=0, series=[], now=T0 + 10)
    add(s, "r4", "new-job", T0 + 20, 1, 1, 5, True)
    add(s, "r5", "deploy", T0 + 21, 1, 2, 5, False)
    second, series, _ = export(s, "cmd", malformed=0, series=series, now=T0 + 30)
    before = {k: v for f in text_string_to_metric_families(first) for k, v in _keyed(f)}
    after = {k: v for f in text_string_to_metric_families(second) for k, v in _keyed(f)}
    assert set(before) <= set(after)
    counters = {
        f.name for f in text_string_to_metric_families(first) if f.type in ("counter", "histogram")
    }
    for key, value in before.items():
        if key[0] in counters:
            assert after[key] >= value, key


def _keyed(family: object) -> list[tuple[tuple[str, ...], float]]:
    return [
        ((family.name, s.name, *sorted(f"{k}={v}" for k, v in s.labels.items())), s.value)  # type: ignore[attr-defined]
        for s in family.samples  # type: ignore[attr-defined]
    ]


def test_an_open_run_is_in_progress_not_a_counted_failure() -> None:
    """A run waiting for a retry counts no run yet, so its later success lowers no counter."""
    s = Summary()
    add(s, "r1", "job", T0, 1, 1, 10, True)
    text, _, _ = export(s, "cmd", malformed=0, series=[], now=T0)
    assert samples(text, "runner_runs")[("runner_runs_total", "cmd=job", "outcome=failure")] == 0
    assert samples(text, "runner_runs_in_progress")[("runner_runs_in_progress", "cmd=job")] == 1
    assert (
        samples(text, "runner_attempts")[("runner_attempts_total", "cmd=job", "outcome=failure")]
        == 1
    )


def test_daily_names_share_one_series_and_the_count_is_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """nightly-DATE: one label for all nights; past MAX_SERIES, new labels fold into (other)."""
    monkeypatch.setattr(prometheus, "MAX_SERIES", 3)
    s = Summary()
    for day in range(1, 8):
        add(s, f"n{day}", f"nightly-2026-11-{day:02d}", T0 + day, 1, 0, 5, False)
    for n, name in enumerate(["alpha", "beta", "gamma"]):
        add(s, f"x{n}", name, T0 + 100 + n, 1, 0, 5, False)
    text, series, _ = export(s, "name", malformed=0, series=[], now=T0)
    runs = samples(text, "runner_runs")
    assert runs[("runner_runs_total", "name=nightly-N-N-N", "outcome=success")] == 7
    assert series == ["nightly-N-N-N", "alpha", "beta"]
    assert runs[("runner_runs_total", "name=(other)", "outcome=success")] == 1
    _, kept, _ = export(s, "name", malformed=0, series=series, now=T0)
    assert kept == series


def test_a_window_is_exported_as_gauges_next_to_the_counters() -> None:
    """--since: runner_window_* gauges for the window; counters still the whole history."""
    s = history()
    window = Summary(since=T0 + 5)
    add(window, "r3", WEIRD, T0 + 9, 1, 0, 10, False)
    text, _, _ = export(
        s, "cmd", malformed=0, series=[], now=T0, window=window.finished(), window_seconds=3600
    )
    kinds = {name: family.type for name, family in families(text).items()}  # type: ignore[attr-defined]
    assert kinds["runner_window_runs"] == "gauge"
    gauge = samples(text, "runner_window_runs")
    assert gauge[("runner_window_runs", "cmd=deploy", "outcome=success")] == 0
    assert gauge[("runner_window_runs", f"cmd={WEIRD}", "outcome=success")] == 1
    assert samples(text, "runner_runs")[("runner_runs_total", "cmd=deploy", "outcome=success")] == 1


def test_a_busy_run_is_its_own_outcome_of_the_runs_counter() -> None:
    """A run refused by a busy lock is runner_runs_total{outcome="busy"}, never a failure."""
    s = history()
    s.add_busy("deploy", T0 + 30)
    text, _, _ = export(s, "cmd", now=T0)
    runs = samples(text, "runner_runs")
    assert runs[("runner_runs_total", "cmd=deploy", "outcome=busy")] == 1
    assert runs[("runner_runs_total", "cmd=deploy", "outcome=failure")] == 0


def test_retiring_never_drops_a_job_with_a_run_in_progress_nor_moves_its_window() -> None:
    """Regression: --retire-after dropped a job that was running (its in-progress gauge went
    with it), and with --since a retired job's window runs were summed under (other)."""
    s = Summary()
    add(s, "old", "quiet", T0, 1, 0, 10, False)
    add(s, "slow", "running", T0, 1, 1, 10, True)
    window = Summary(since=T0 - 1)
    add(window, "old", "quiet", T0, 1, 0, 10, False)
    text, series, _ = export(
        s, "cmd", now=T0 + 86400, retire_before=T0 + 3600, window=window.finished(),
        window_seconds=86400 * 2,
    )  # fmt: skip
    assert series == ["running"]
    assert samples(text, "runner_runs_in_progress") == {
        ("runner_runs_in_progress", "cmd=running"): 1,
    }  # fmt: skip
    assert ("runner_window_runs", "cmd=(other)", "outcome=success") not in samples(
        text, "runner_window_runs"
    )
