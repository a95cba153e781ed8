#!/usr/bin/env python3
"""What the watcher costs, and how soon it ends a command whose runner was killed.

    python3 bench/watcher.py [--reps N]

Figures: `run --timeout 10 -- true` (a watcher is forked) against `run -- true` (none),
taken in turns, pair by pair; and the time from a runner's SIGKILL to the end of its
command, for a command that obeys SIGTERM and for one that ignores it (`--kill-after 1`:
it takes the SIGKILL a second later).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNER = [sys.executable, str(ROOT / "runner.py")]


def _took(argv: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def cost(reps: int, env: dict[str, str]) -> dict[str, float]:
    """Medians of both, and the median of the ratios pair by pair (turns alternate first)."""
    bare, watched, ratios = [], [], []
    for rep in range(reps):
        pair = [[*RUNNER, "run", "--", "true"], [*RUNNER, "run", "--timeout", "10", "--", "true"]]
        if rep % 2:
            pair.reverse()
        first, second = (_took(argv, env) for argv in pair)
        plain, limited = (first, second) if rep % 2 == 0 else (second, first)
        bare.append(plain)
        watched.append(limited)
        ratios.append(limited / plain)
    return {
        "run_true_ms": statistics.median(bare) * 1000,
        "run_timeout_true_ms": statistics.median(watched) * 1000,
        "paired_ratio": statistics.median(ratios),
    }


def kill_to_end(reps: int, env: dict[str, str], folder: Path, script: str) -> float:
    """Median seconds from the runner's SIGKILL to its command's end."""
    took = []
    for rep in range(reps):
        pid_file = folder / f"pid{rep}-{abs(hash(script))}"
        text = script.format(pid=pid_file)
        argv = [*RUNNER, "run", "--timeout", "1h", "--kill-after", "1", "--", "sh", "-c", text]
        runner = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
        while not pid_file.exists() or not pid_file.read_text().strip():
            time.sleep(0.005)
        command = int(pid_file.read_text())
        time.sleep(0.1)  # the command's loop under way
        began = time.perf_counter()
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        while _alive(command):
            time.sleep(0.001)
        took.append(time.perf_counter() - began)
    return statistics.median(took)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main() -> int:
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 40
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        env = {**os.environ, "RUNNER_HOME": str(folder)}
        found: dict[str, float] = cost(reps, env)
        obeys = "echo $$ > {pid}; while :; do sleep 0.05; done"
        ignores = "trap '' TERM; echo $$ > {pid}; while :; do sleep 0.05; done"
        found["sigkill_to_end_s"] = kill_to_end(10, env, folder, obeys)
        found["sigkill_to_end_ignoring_term_s"] = kill_to_end(10, env, folder, ignores)
    print(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
