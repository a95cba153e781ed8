"""`stats --since` in cron: a window read from the checkpoint's marks.

The log holds the runs of the weeks before now, about a thousand lines an hour, as the
runner writes it: each line when its attempt ended (so a line can have started hours
before the one above it). For the two hours before now a `stats -q --since 1h
--prometheus` runs every five minutes, as in cron, each leaving a mark; then that export
is timed, in turns with the same export without `--since`: what the window costs.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from stats import RUNNER, realistic_lines, spawn  # bench/run.py imports it so

HOUR = 3600.0
EVERY = 300.0
"""Seconds between two `stats` in the two hours before the timed ones."""


def lines_by_end(lines: int, now: float) -> list[tuple[float, bytes]]:
    """About `lines` attempt lines of runs started over the weeks before `now`, each with
    when the runner wrote it (its attempt's end), in that order; none written after now."""
    span = lines / 1000 * HOUR
    found = []
    for line in realistic_lines(lines, now - span, span, seed=11):
        record = json.loads(line)
        end = datetime.fromisoformat(record["ts"]).timestamp() + record["duration_ms"] / 1000
        if end <= now:
            found.append((end, line))
    found.sort(key=lambda pair: pair[0])
    return found


def bench_window(lines: int, reps: int, env: dict[str, str], home: Path) -> dict[str, Any]:
    """Median wall times of both exports, over `reps` turns."""
    home.mkdir(exist_ok=True)
    log, prom = home / "runs.jsonl", str(home / "runner.prom")
    local = {**env, "RUNNER_HOME": str(home)}
    now = time.time()
    written = lines_by_end(lines, now)

    def write(after: float, until: float) -> None:
        with log.open("ab") as handle:
            handle.write(b"".join(line for end, line in written if after < end <= until))

    def export(*options: str) -> float:
        argv = [sys.executable, RUNNER, "stats", "-q", *options, "--prometheus", prom]
        return spawn(argv, local)[0]

    began = now - 2 * HOUR
    write(0.0, began)
    export("--since", "1h")
    for step in range(1, int(2 * HOUR / EVERY) + 1):
        write(began + (step - 1) * EVERY, began + step * EVERY)
        export("--since", "1h")
    marked, plain = [], []
    for _ in range(reps):
        marked.append(export("--since", "1h"))
        plain.append(export())
    return {
        "window_lines": len(written),
        "window_marked_ms": statistics.median(marked) * 1000,
        "window_plain_ms": statistics.median(plain) * 1000,
    }
