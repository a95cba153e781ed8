"""stats and applied on hostile input and under signals."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.e2e.conftest import Lab
from tests.procs import alive, children_of, wait_for


def big_log(path: Path, mebibytes: int) -> None:
    """A log of `mebibytes` MiB of whole runs, large enough for the parallel path."""
    line = (
        '{"ts":"2026-01-01T00:00:00.000+00:00","cmd":["job","--flag"],"attempt":1,'
        '"rc":0,"duration_ms":12,"run_id":"r%08d"}\n'
    )
    block = "".join(line % n for n in range(10_000)).encode()
    with path.open("wb") as handle:
        for _ in range(mebibytes * (1 << 20) // len(block) + 1):
            handle.write(block)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, -2)])
def test_stats_answers_a_signal_and_leaves_no_worker(lab: Lab, signum: int, code: int) -> None:
    """Regression: stats ignored SIGTERM; now it ends (128+N, or by SIGINT) and its workers too."""
    log = lab.tmp / "big.jsonl"
    big_log(log, 120)
    stats = lab.start("stats", "--log", str(log))
    wait_for(lambda: len(children_of(stats.pid)) >= 1, what="the second reader")
    workers = children_of(stats.pid)
    stats.send_signal(signum)
    assert stats.wait(timeout=5) == code
    wait_for(lambda: not any(alive(pid) for pid in workers), 10, "workers")


def test_stats_workers_end_when_their_parent_is_killed(lab: Lab) -> None:
    """Regression: two workers stayed blocked for minutes after `kill -9` of stats."""
    log = lab.tmp / "big.jsonl"
    big_log(log, 120)
    stats = lab.start("stats", "--log", str(log))
    wait_for(lambda: len(children_of(stats.pid)) >= 1, what="the second reader")
    workers = children_of(stats.pid)
    stats.kill()
    stats.wait(timeout=5)
    wait_for(lambda: not any(alive(pid) for pid in workers), 10, "workers")


def test_stats_of_a_large_log_with_hostile_lines_still_reports(lab: Lab) -> None:
    """The parallel path: hostile lines are counted, the report and textfile are written."""
    log = lab.tmp / "big.jsonl"
    big_log(log, 10)
    with log.open("ab") as handle:
        handle.write(b"[" * 5000 + b"\n" + b'{"ts": 1e400}\n' + b"\xff\n")
    prom = lab.tmp / "runner.prom"
    result = lab.run("stats", "--json", "--log", str(log), "--prometheus", str(prom))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["malformed"] == 3
    assert report["groups"][0]["runs"] > 0
    assert "runner_log_malformed_lines_total 3" in prom.read_text()


def test_applied_lists_corrupt_markers_by_name_and_the_rest(lab: Lab) -> None:
    """Garbage, deep nesting, a FIFO, a folder: each listed as corrupt or unreadable, by name."""
    assert lab.run("apply", "good", "--", "true").returncode == 0
    (lab.state / "garbage.done").write_bytes(b"\xff{not json")
    (lab.state / "deep.done").write_bytes(b"[" * 100_000)
    (lab.state / "list.done").write_text("[1, 2]")
    os.mkfifo(lab.state / "fifo.done")
    (lab.state / "folder.done").mkdir()
    result = lab.run("applied", timeout=20)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    for name in ("garbage", "deep", "list", "fifo", "folder"):
        line = next(row for row in text.splitlines() if row.startswith(name + " "))
        assert "corrupt marker" in line or "unreadable marker" in line, line
    assert "good " in text
    entries = json.loads(lab.run("applied", "--json", timeout=20).stdout)
    assert [entry["name"] for entry in entries] == [
        "deep",
        "fifo",
        "folder",
        "garbage",
        "good",
        "list",
    ]
