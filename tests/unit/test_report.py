"""The stats table, JSON rows and Prometheus text."""

from __future__ import annotations

import pytest

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
    return s.finished()  # type: ignore[return-value]


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


def test_rows_carry_quantiles_attempts_codes_and_history() -> None:
    """p50/p95/p99 for runs and attempts, codes per exit code, the last failure, a strip."""
    rows = report.document(groups(), "cmd")  # type: ignore[arg-type]
    weird, deploy = rows
    assert weird["exit_codes"] == {"0": 1, "124": 1}
    assert weird["attempts_timed_out"] == 1
    assert weird["history"] == ["timeout", "success"]
    assert deploy["attempts"] == 2
    assert deploy["attempt_p99_s"] == pytest.approx(0.4, rel=0.02)
    assert deploy["duration_p99_s"] == pytest.approx(1.4, rel=0.02)
    assert weird["last_failure"] is not None


def test_the_history_strip_is_plain_or_coloured() -> None:
    """Plain characters for a pipe or NO_COLOR; colours on a terminal."""
    rows = report.document(groups(), "cmd")  # type: ignore[arg-type]
    plain = report.table(rows, "cmd", 400)
    assert plain[1].endswith("T.")
    coloured = report.table(rows, "cmd", 400, colour=True)
    assert "\033[33m" in coloured[1]


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
