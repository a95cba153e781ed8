"""metrics.md's logrotate recipe, run as written with the real logrotate: the log's paths
moved into the test's folder, and `runner` the command an install gives."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import RUNNER, Lab

ROOT = Path(__file__).resolve().parent.parent.parent


def _recipe() -> str:
    text = (ROOT / "docs" / "metrics.md").read_text()
    blocks: list[str] = re.findall(r"```[a-z]*\n(.*?)```", text, re.DOTALL)
    (found,) = [block for block in blocks if "rotate 8" in block]
    return found


def _runs_total(prom: Path) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(prom.read_text())
        for sample in family.samples
        if sample.name == "runner_runs_total"
    )


def test_the_logrotate_recipe_rotates_and_loses_no_run(lab: Lab) -> None:
    logrotate = shutil.which("logrotate") or "/usr/sbin/logrotate"
    if not os.access(logrotate, os.X_OK):
        if os.environ.get("CI") == "true":
            pytest.fail("logrotate is required in CI (make postgres installs it)")
        pytest.skip("no logrotate")
    root = lab.tmp / "root"
    (root / "var" / "lib" / "node_exporter").mkdir(parents=True)
    home = root / "var" / "lib" / "runner"
    home.mkdir(parents=True)
    bin_dir = lab.tmp / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "runner"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} {RUNNER} "$@"\n')
    shim.chmod(0o755)
    config = lab.tmp / "runner.logrotate"
    config.write_text(_recipe().replace("/var/lib/", f"{root}/var/lib/"))
    config.chmod(0o644)
    env = {**lab.env, "RUNNER_HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}"}

    def runs(count: int) -> None:
        for _ in range(count):
            subprocess.run([str(shim), "run", "--", "true"], env=env, check=True, timeout=60)

    runs(3)
    state = lab.tmp / "logrotate.state"
    done = subprocess.run(
        [logrotate, "-f", "-s", str(state), str(config)],
        env=env, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert list((home / "old").glob("runs.jsonl*.gz")), list(home.rglob("*"))
    prom = root / "var" / "lib" / "node_exporter" / "runner.prom"
    assert _runs_total(prom) == 3  # the prerotate stats read every line before the move
    runs(2)
    subprocess.run(
        [str(shim), "--home", str(home), "stats", "-q", "--prometheus", str(prom)],
        env=env, check=True, timeout=60,
    )  # fmt: skip
    assert _runs_total(prom) == 5
