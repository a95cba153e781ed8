"""The stats table, JSON rows and Prometheus text."""

from __future__ import annotations

import pytest

from domain.aggregate import BY_RC, Aggregate
from domain.stats import Summary
from entrypoints import report

T0 = 1_800_000_000.0
WEIRD = 'sh -c "echo \\"hi\\"\\nbye" \\\\ done'


def groups() -> dict[str, Aggregate]:
    s = Summary()
    for run_id, key, at, n, rc, ms, waits in [
        ("r1", "deploy", T0, 1, 1, 100, True),
        ("r1", "deploy", T0 + 1, 2, 0, 400, False),
        ("r2", WEIRD, T0 + 2, 1, 124, 2000, False),
        ("r3", WEIRD, T0 + 9, 1, 0, 10, False),
    ]:
        s.add(run_id, key, at, n, rc, ms, BY_RC[rc], waits)
    return s.finished()


def test_rows_are_sorted_by_failures_and_carry_every_figure() -> None:
    """The command with a timeout comes first; rates, means and quantiles are right."""
    rows = report.document(groups(), "cmd")
    assert [row["cmd"] for row in rows] == [WEIRD, "deploy"]
    deploy = rows[1]
    assert deploy["runs"] == 1
    assert deploy["attempts_mean"] == 2
    assert deploy["retried_runs"] == 1
    assert deploy["success_rate"] == 1
    assert deploy["duration_max_s"] == pytest.approx(1.4)
    assert rows[0]["timed_out"] == 1
    assert rows[0]["failed"] == 1  # every run that did not succeed; the timeout is part of it
    assert rows[0]["success_rate"] == 0.5


def test_rows_carry_quantiles_attempts_codes_and_history() -> None:
    """p50/p95/p99 for runs and attempts, codes per exit code, the last failure, a strip."""
    rows = report.document(groups(), "cmd")
    weird, deploy = rows
    assert weird["exit_codes"] == {"0": 1, "124": 1}
    assert weird["attempts_timed_out"] == 1
    assert weird["history"] == ["timeout", "success"]
    assert deploy["attempts"] == 2
    assert deploy["attempt_p99_s"] == pytest.approx(0.4, rel=0.04)
    assert deploy["duration_p99_s"] == pytest.approx(1.4, rel=0.04)
    assert weird["last_failure"] is not None


def test_the_history_strip_is_plain_or_coloured() -> None:
    """Plain characters for a pipe or NO_COLOR; colours on a terminal."""
    plain = report.table(groups(), "cmd", 400, T0 + 60)
    assert plain[1].endswith("T.")
    coloured = report.table(groups(), "cmd", 400, T0 + 60, colour=True)
    assert coloured[1].endswith("\033[33mT\033[0m\033[32m.\033[0m")  # the cells, coloured


def test_times_are_ages_and_a_timeout_is_a_failure_in_the_table() -> None:
    """Regression: a job that timed out every time read `OK 0 FAIL 0`; times were dates."""
    lines = report.table(groups(), "cmd", 400, T0 + 190)
    titles = lines[0].split()
    weird = lines[1]
    assert titles[:3] == ["CMD", "RUNS", "OK"]
    assert weird.split()[len(WEIRD.split()) :][:3] == ["2", "1", "1"]
    assert "3m01s ago" in weird  # the last run started at T0 + 9
    assert "3m06s ago rc=124" in weird  # the timeout ended at T0 + 4


@pytest.mark.parametrize("width", [60, 80, 100, 140, 400])
def test_the_table_fits_the_terminal(width: int) -> None:
    """Every line fits (70 at the least); long keys are cut in the middle, keeping both ends."""
    found = groups()
    long = "/opt/deploy/" + "x" * 200 + "/final-step.sh"
    found[long] = found.pop("deploy")
    lines = report.table(found, "cmd", width, T0 + 60)
    assert len(lines) == 3
    assert all(len(line) <= max(width, 70) for line in lines)  # RUNS to HISTORY: 70 at least
    for title in ("RUNS", "FAIL", "LAST RUN", "LAST FAIL", "HISTORY"):
        assert title in lines[0]  # never the columns that say a job fails, or when it ran
    if width >= 400:
        assert long in lines[2]
    else:
        assert "…" in lines[2]
        assert lines[2].startswith("/opt/")
        assert "step.sh " in lines[2]


def test_shorten_keeps_both_ends() -> None:
    """Cut in the middle, to the exact width."""
    assert report.shorten("abcdefghij", 5) == "ab…ij"
    assert report.shorten("abc", 5) == "abc"
