"""The stats table, JSON rows and Prometheus text."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from domain.stats import Summary
from entrypoints import report

T0 = 1_800_000_000.0
WEIRD = 'sh -c "echo \\"hi\\"\\nbye" \\\\ done'


def groups() -> dict[str, object]:
    s = Summary()
    s.add("r1", "deploy", T0, 1, 1, 100, True)
    s.add("r1", "deploy", T0 + 1, 2, 0, 400, False)
    s.add("r2", WEIRD, T0 + 2, 1, 124, 2000, False)
    s.add("r3", WEIRD, T0 + 9, 1, 0, 10, False)
    return s.finish()  # type: ignore[return-value]


def test_rows_are_sorted_by_failures_and_carry_every_figure() -> None:
    """The command with a timeout comes first; rates, means and quantiles are right."""
    rows = report.document(groups(), "cmd")  # type: ignore[arg-type]
    assert [row["cmd"] for row in rows] == [WEIRD, "deploy"]
    deploy = rows[1]
    assert deploy["runs"] == 1
    assert deploy["attempts_mean"] == 2
    assert deploy["retried_runs"] == 1
    assert deploy["success_rate"] == 1
    assert deploy["duration_max_s"] == pytest.approx(1.4)
    assert rows[0]["timed_out"] == 1
    assert rows[0]["success_rate"] == 0.5


def test_prometheus_text_parses_back_with_escaped_labels() -> None:
    """A real parser reads every family; label values with quotes, backslashes, newlines survive."""
    text = report.prometheus(groups(), "cmd", malformed=3)  # type: ignore[arg-type]
    families = {f.name: f for f in text_string_to_metric_families(text)}
    runs = {
        (s.labels["cmd"], s.labels["outcome"]): s.value for s in families["runner_runs"].samples
    }
    assert runs[(WEIRD, "timeout")] == 1
    assert runs[(WEIRD, "success")] == 1
    assert runs[("deploy", "success")] == 1
    summary = families["runner_run_duration_seconds"]
    assert summary.type == "summary"
    counts = {s.labels["cmd"]: s.value for s in summary.samples if s.name.endswith("_count")}
    assert counts == {WEIRD: 2, "deploy": 1}
    last = {
        s.labels["cmd"]: s.value for s in families["runner_last_success_timestamp_seconds"].samples
    }
    assert last["deploy"] == pytest.approx(T0 + 1.4)
    assert families["runner_log_malformed_lines"].samples[0].value == 3


def test_prometheus_text_of_an_empty_log_is_valid() -> None:
    """No runs: only headers and the malformed-line gauge."""
    families = list(text_string_to_metric_families(report.prometheus({}, "cmd", 0)))
    assert "runner_log_malformed_lines" in [f.name for f in families]


@pytest.mark.parametrize("width", [60, 80, 100, 140, 400])
def test_the_table_fits_the_terminal(width: int) -> None:
    """Every line fits (64 at the least); long keys are cut in the middle, keeping both ends."""
    rows = report.document(groups(), "cmd")  # type: ignore[arg-type]
    rows[1]["cmd"] = "/opt/deploy/" + "x" * 200 + "/final-step.sh"
    lines = report.table(rows, "cmd", width)
    assert len(lines) == 3
    assert all(len(line) <= max(width, 64) for line in lines)
    if width >= 400:
        assert str(rows[1]["cmd"]) in lines[2]
    else:
        assert "…" in lines[2]
        assert lines[2].startswith("/opt/")
        assert "step.sh " in lines[2]


def test_shorten_keeps_both_ends() -> None:
    """Cut in the middle, to the exact width."""
    assert report.shorten("abcdefghij", 5) == "ab…ij"
    assert report.shorten("abc", 5) == "abc"
