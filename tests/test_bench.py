"""The benchmark still works (quick mode); its figures are never asserted as timings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.procs import ROOT

CRON_PYTHON = "/usr/bin/python3"
"""The interpreter of the README's cron recipe, which bench/stats.py also measures."""


def test_quick_benchmark_runs_and_checks_correctness(tmp_path: Path) -> None:
    """bench/run.py --quick writes every section; contention applied once, lines whole; its
    scratch files (logs of hundreds of MiB in a full run) are all removed."""
    out = tmp_path / "results.json"
    scratch = Path(tempfile.mkdtemp())  # not under tmp_path: the server's user must reach it
    scratch.chmod(0o711)
    try:
        result = subprocess.run(
            [sys.executable, str(Path(ROOT) / "bench" / "run.py"), "--quick", "--json", str(out)],
            capture_output=True,
            check=False,
            timeout=300,
            env={**os.environ, "TMPDIR": str(scratch)},
        )
        assert result.returncode == 0, result.stderr.decode()
        assert list(scratch.iterdir()) == []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    figures = json.loads(out.read_text())
    assert set(figures) >= {
        "machine",
        "startup",
        "streaming",
        "timeout",
        "contention",
        "state",
        "stats",
        "window",
        "fleet",
        "sweep",
        "capture",
    }
    assert figures["capture"]["left_behind"] == []
    assert figures["sweep"]["rc"] == 124
    assert figures["stats"]["lines"] == 20_000
    assert figures["stats"]["repeat_commands"] == 10_000
    assert figures["window"]["window_lines"] > 10_000
    cron = [CRON_PYTHON, "-c", "import sys; sys.exit(sys.version_info < (3, 10))"]
    recipe = os.access(CRON_PYTHON, os.X_OK) and subprocess.run(cron, check=False).returncode == 0
    assert ("cron_repeat_ratio" in figures["stats"]) == recipe  # measured as cron runs it
    assert figures["contention"]["applications"] == 1
    assert figures["contention"]["log_lines_whole"] == figures["contention"]["log_lines_expected"]
    assert b"runner / floor" in result.stdout
    fleet = figures["fleet"]
    assert "skipped" not in fleet or os.environ.get("CI") != "true", fleet  # a server is there
    assert "skipped" in fleet or (fleet["crowd"]["succeeded"], fleet["crowd"]["one_at_a_time"]) == (
        12,
        True,
    )
