"""Reading runs.jsonl: malformed lines, batches, and the parallel split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters import logfile
from adapters.jsonl import attempt_line
from domain.attempts import AttemptRecord
from domain.stats import Aggregate


def write_log(path: Path, runs: int) -> None:
    """`runs` runs of three commands, every third needing a retry."""
    with path.open("wb") as handle:
        for n in range(runs):
            cmd = [f"job{n % 3}", "--flag"]
            if n % 3 == 0:
                handle.write(attempt_line(AttemptRecord(n, cmd, 1, 1, 10, f"r{n}", None, 500)))
                handle.write(attempt_line(AttemptRecord(n + 0.6, cmd, 2, 0, 10, f"r{n}")))
            else:
                handle.write(attempt_line(AttemptRecord(n, cmd, 1, n % 2, 20, f"r{n}")))


def test_malformed_truncated_and_foreign_lines_are_counted_not_fatal(tmp_path: Path) -> None:
    """Garbage, a foreign object, wrong types and a cut-off last line are skipped, counted."""
    log = tmp_path / "runs.jsonl"
    write_log(log, 3)
    with log.open("ab") as handle:
        handle.write(b"not json\n")
        handle.write(b'{"level": "info", "msg": "hello"}\n')
        handle.write(b'{"ts":"x","cmd":["a"],"attempt":1,"rc":0,"duration_ms":1,"run_id":"z"}\n')
        handle.write(b'{"ts":"2026-01-01T00:00:00.000+00:00","cmd":["a"],"attempt":"1",')
        handle.write(b'"rc":0,"duration_ms":1,"run_id":"z"}\n[1, 2]\n\n')
        handle.write(b'{"ts":"2026-01-01T00:00:00.000+00:00","cmd":"job0","attempt":1,')
        handle.write(b'"rc":0,"duration_ms":1,"run_id":"s"}\n')
        handle.write(b'{"ts":"2026-01-01T00:00:00.000+00:00","cmd":["a"],"att')
    found = logfile.summarize(str(log), "cmd", None)
    assert found.malformed == 8
    assert found.lines == 4 + 8
    assert sum(group.runs for group in found.summary.finish().values()) == 3


def test_group_by_name_puts_plain_runs_under_a_dash(tmp_path: Path) -> None:
    """--by name: apply runs by their NAME, runs without one under '-'."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(
        attempt_line(AttemptRecord(0, ["a"], 1, 0, 1, "r1", "db"))
        + attempt_line(AttemptRecord(0, ["b"], 1, 0, 1, "r2"))
    )
    groups = logfile.summarize(str(log), "name", None).summary.finish()
    assert sorted(groups) == ["-", "db"]


@pytest.mark.parametrize("workers", [2, 3, 5])
def test_the_parallel_split_gives_the_same_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Split across processes (runs cut at the seams included), the sums are unchanged."""
    log = tmp_path / "runs.jsonl"
    write_log(log, 3000)
    serial = logfile.summarize(str(log), "cmd", None, workers=1).summary.finish()
    monkeypatch.setattr(logfile, "PARALLEL_FROM", 0)
    monkeypatch.setattr(logfile, "BATCH_BYTES", 4096)
    parallel = logfile.summarize(str(log), "cmd", None, workers=workers).summary.finish()

    def figures(groups: dict[str, Aggregate]) -> dict[str, tuple[object, ...]]:
        return {
            key: (g.runs, g.attempts, g.retried, dict(g.outcomes), g.durations.count)
            for key, g in groups.items()
        }

    assert figures(parallel) == figures(serial)
    assert serial["job0 --flag"].retried == 1000


def test_split_points_fall_on_line_starts(tmp_path: Path) -> None:
    """Every piece begins at the start of a line."""
    log = tmp_path / "runs.jsonl"
    write_log(log, 100)
    data = log.read_bytes()
    bounds = logfile._split(str(log), len(data), 4)
    assert bounds[0] == 0
    assert bounds[-1] == len(data)
    assert all(data[b - 1 : b] == b"\n" for b in bounds[1:-1])
    assert all(json.loads(data[b : data.index(b"\n", b)]) for b in bounds[:-1])
