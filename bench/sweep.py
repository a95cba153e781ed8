"""The cost of ending a command on a busy host: the runner's CPU over a kill grace.

1,600 other processes run on the host (as on a busy node); the command's leader ends
on SIGTERM while a member of its group ignores it, so the runner sweeps for the whole
`--kill-after` grace before SIGKILL. Target: under 0.1 s of the runner's CPU for a 5 s
grace.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COMMAND = "(trap '' TERM; sleep 60) & wait"


def bench_sweep(others: int, grace: float, env: dict[str, str]) -> dict[str, Any]:
    crowd = subprocess.Popen(
        ["sh", "-c", f"i=0; while [ $i -lt {others} ]; do sleep 600 & i=$((i+1)); done; wait"],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while _count_processes() < others and time.monotonic() < deadline:
            time.sleep(0.05)
        host_processes = _count_processes()
        options = ["--timeout", "0.2", "--kill-after", f"{grace}s"]
        runner = subprocess.Popen(
            [sys.executable, str(ROOT / "runner.py"), "run", *options, "--", "sh", "-c", COMMAND],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        begun = time.monotonic()
        _, status, usage = os.wait4(runner.pid, 0)
        runner.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - begun
    finally:
        os.killpg(crowd.pid, 9)
        crowd.wait()
    return {
        "host_processes": host_processes,
        "grace_s": grace,
        "rc": runner.returncode,
        "elapsed_s": elapsed,
        "runner_cpu_s": usage.ru_utime + usage.ru_stime,
        "target_cpu_s": 0.1,
    }


def _count_processes() -> int:
    return sum(1 for entry in os.listdir("/proc") if entry.isdigit())
