"""--output-on-failure's cost: the runner keeping a command's output on disk, against the
command writing the same bytes to a file itself. Target: within 1.10x."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def bench_capture(size: int, repeats: int, env: dict[str, str]) -> dict[str, Any]:
    scratch = tempfile.mkdtemp(prefix="bench-capture-")
    target = os.path.join(scratch, "out")
    write = f"head -c {size} /dev/zero"
    direct = ["sh", "-c", f"{write} > {target}"]
    runner = [sys.executable, str(ROOT / "runner.py"), "run", "--output-on-failure", "--"]
    captured = [*runner, "sh", "-c", write]
    timings: dict[str, list[float]] = {"direct": [], "captured": []}
    for _ in range(repeats):
        for name, command in (("direct", direct), ("captured", captured)):
            begun = time.perf_counter()
            subprocess.run(command, env={**env, "TMPDIR": scratch}, check=True)
            timings[name].append(time.perf_counter() - begun)
            if os.path.exists(target):
                os.unlink(target)
    direct_s = statistics.median(timings["direct"])
    captured_s = statistics.median(timings["captured"])
    return {
        "bytes": size,
        "direct_s": direct_s,
        "captured_s": captured_s,
        "ratio": captured_s / direct_s,
        "target": 1.10,
        "left_behind": os.listdir(scratch),
    }
