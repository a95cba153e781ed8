"""SIGTERM and SIGINT end stats at every stage: open, checkpoint load, read, export."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from adapters.jsonl import attempt_line
from domain.attempts import AttemptRecord
from tests.e2e.conftest import RUNNER, Lab
from tests.procs import catches, children_of, group_members, lock_held_elsewhere, wait_for

MOMENTS = [k / 16 for k in range(16)] + [0.9, 0.95, 0.97, 0.99]
"""When a signal is sent, as fractions of how long the same stats takes uninterrupted
once its handlers are in place: sampled moments, not waits for an event, so that every
stage of a stats (lock, checkpoint load, workers reading, export, checkpoint save,
answer) is hit by some. Before its handlers are in place, Python itself is starting:
SIGINT then makes it fail to start (exit 1, "Fatal Python error"), which no program
can change."""

LONGEST = 3.0
"""Seconds from the signal to the end that the test accepts: a loaded machine's margin over
the one second stats promises (docs/performance.md has the measured figures)."""


def fill(lab: Lab) -> None:
    """A checkpoint holding 60,000 open runs (slow to load), then 240,000 new lines (about
    30 MiB, read by workers)."""
    with lab.log.open("wb") as log:
        for n in range(60_000):
            started = 1_800_000_000.0 + n
            log.write(attempt_line(AttemptRecord(started, ["job"], 1, 1, 5, f"o{n}", None, 1000)))
    result = lab.run("stats", "-q", "--prometheus", str(lab.tmp / "runner.prom"))
    assert result.returncode == 0, result.stderr
    assert os.path.getsize(lab.home / ".runs.jsonl.stats-cmd.json") > 2 << 20
    with lab.log.open("ab") as log:
        for n in range(240_000):
            started = 1_800_100_000.0 + n
            log.write(attempt_line(AttemptRecord(started, ["job"], 1, 0, 5 + n % 991, f"r{n}")))


def start(lab: Lab) -> subprocess.Popen[bytes]:
    """A stats, returned once it catches SIGTERM (its handlers are in place) or has ended."""
    stats = subprocess.Popen(
        [sys.executable, RUNNER, "stats", "-q", "--prometheus", str(lab.tmp / "runner.prom")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=lab.env,
        start_new_session=True,
    )

    def ready() -> bool:
        return catches(stats.pid, signal.SIGTERM) or stats.poll() is not None

    wait_for(ready, timeout=60, what="stats' signal handlers")
    return stats


def ended_by(process: subprocess.Popen[bytes], signum: int) -> bool:
    """Whether it ended on `signum`: 128+N, or by the signal itself (as the runner does on
    SIGINT)."""
    return process.returncode in (128 + signum, -signum)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_stats_at_any_moment_and_no_worker_outlives_it(lab: Lab, signum: int) -> None:
    """Regression: SIGTERM while a large checkpoint loaded gave exit 0 three seconds later."""
    fill(lab)
    saved = lab.home / ".runs.jsonl.stats-cmd.json"
    checkpoint = saved.read_bytes()
    began = time.monotonic()
    whole = start(lab)
    assert whole.wait(timeout=120) == 0
    took_whole = time.monotonic() - began
    interrupted = 0
    for moment in MOMENTS:
        saved.write_bytes(checkpoint)
        stats = start(lab)
        time.sleep(moment * took_whole)  # a sampled moment (see MOMENTS), not an event
        if stats.poll() is not None:
            continue
        sent, sent_at = time.monotonic(), time.time()
        stats.send_signal(signum)
        _, err = stats.communicate(timeout=60)
        took = time.monotonic() - sent
        # 0 only if its work was done before the signal came: once it is, the runner
        # exits as it was going to (a signal sent on the way out is ignored)
        done_before = stats.returncode == 0 and saved.stat().st_mtime <= sent_at
        assert ended_by(stats, signum) or done_before, (moment, stats.returncode, err)
        interrupted += stats.returncode != 0
        assert took < LONGEST, (moment, took)
        assert group_members(stats.pid) == [], moment
    assert interrupted >= len(MOMENTS) // 2


def test_a_signal_ends_a_stats_waiting_for_another(lab: Lab) -> None:
    """One stats at a time updates a checkpoint: the one waiting its turn still answers
    SIGTERM at once."""
    lab.run("run", "--", "true")
    with lock_held_elsewhere(str(lab.home / ".runs.jsonl.stats.lock")):
        stats = start(lab)
        wait_for(lambda: bool(children_of(stats.pid)), what="stats queueing for the lock")
        stats.send_signal(signal.SIGTERM)
        stats.communicate(timeout=10)
    assert stats.returncode == 128 + signal.SIGTERM
    assert children_of(stats.pid) == []
