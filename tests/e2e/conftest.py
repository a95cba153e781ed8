"""End-to-end: the real runner.py in a subprocess, with the project's fixture commands."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.procs import FIXTURES, ROOT, TOKEN_VARIABLE

RUNNER = os.path.join(ROOT, "runner.py")


class Lab:
    """A home folder, an environment, and ways to call the runner in it."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.token = uuid.uuid4().hex
        self.applied_log = tmp_path / "applied.log"
        self.env = {
            **os.environ,
            "RUNNER_HOME": str(self.home),
            "RUNNER_APPLY_COMMAND": os.path.join(FIXTURES, "apply.sh"),
            "APPLY_LOG": str(self.applied_log),
            "FLAKY_STATE": str(tmp_path / "flaky.count"),
            TOKEN_VARIABLE: self.token,
        }
        self.env.pop("APPLY_FAIL", None)

    @property
    def log(self) -> Path:
        return self.home / "runs.jsonl"

    @property
    def state(self) -> Path:
        return self.home / "state"

    def fixture(self, name: str) -> str:
        return os.path.join(FIXTURES, name)

    def run(
        self, *args: str, env: dict[str, str] | None = None, stdin: bytes = b"", timeout: float = 60
    ) -> subprocess.CompletedProcess[bytes]:
        """Call the runner to its end (the deadline fails the test, not the runner)."""
        return subprocess.run(
            [sys.executable, RUNNER, *args],
            input=stdin,
            capture_output=True,
            env={**self.env, **(env or {})},
            timeout=timeout,
            check=False,
        )

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, RUNNER, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**self.env, **(env or {})},
        )

    def applications(self) -> list[str]:
        return self.applied_log.read_text().splitlines() if self.applied_log.exists() else []


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)
