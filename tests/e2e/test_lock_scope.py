"""apply --lock-scope name: different steps side by side, the same step still once, on both
backends; forget and an operator's flock still exclude every apply on one host."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import Lab
from tests.procs import UNTIL, lock_held_elsewhere, wait_for


@pytest.fixture(params=["files", "postgresql"])
def where(request: pytest.FixtureRequest, lab: Lab) -> list[str]:
    """Options that put apply's state in the home folder, or in PostgreSQL."""
    if request.param == "files":
        return []
    url = request.getfixturevalue("pg_url")
    return ["--state", url, "--namespace", request.getfixturevalue("namespace")]


def holding(
    lab: Lab, where: list[str], name: str, *options: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """apply NAME with a command that runs until the returned file exists."""
    started, release = lab.tmp / f"{name}.started", lab.tmp / f"{name}.release"
    script = f"touch {started}; {UNTIL.format(release=release)}"
    runner = lab.start("apply", *where, *options, name, "--", "sh", "-c", script)
    wait_for(started.exists, what=f"{name} to start")
    return runner, release


def test_name_scope_runs_different_steps_side_by_side(lab: Lab, where: list[str]) -> None:
    """With --lock-scope name, b runs while a holds its lock; a second a exits 3."""
    runner, release = holding(lab, where, "a", "--lock-scope", "name")
    other = lab.run("apply", *where, "--lock-scope", "name", "b", "--", "true")
    assert other.returncode == 0, other.stderr
    again = lab.run("apply", *where, "--lock-scope", "name", "a", "--", "true")
    assert again.returncode == 3
    assert b"another run in progress: apply a on " in again.stderr
    release.touch()
    assert runner.wait(timeout=30) == 0


def test_home_scope_is_the_labs_one_lock_for_every_apply(lab: Lab, where: list[str]) -> None:
    """The default (and RUNNER_LOCK_SCOPE=home): b waits for nobody and exits 3 while a runs."""
    runner, release = holding(lab, where, "a")
    other = lab.run("apply", *where, "b", "--", "true", env={"RUNNER_LOCK_SCOPE": "home"})
    assert other.returncode == 3
    release.touch()
    assert runner.wait(timeout=30) == 0


def test_scope_from_the_environment(lab: Lab) -> None:
    """RUNNER_LOCK_SCOPE=name is --lock-scope name; a wrong value is a usage error."""
    runner, release = holding(lab, [], "a", "--lock-scope", "name")
    env = {"RUNNER_LOCK_SCOPE": "name"}
    assert lab.run("apply", "b", "--", "true", env=env).returncode == 0
    bad = lab.run("apply", "b", "--", "true", env={"RUNNER_LOCK_SCOPE": "host"})
    assert bad.returncode == 125
    assert b"expected home or name" in bad.stderr
    release.touch()
    assert runner.wait(timeout=30) == 0


def test_forget_and_an_operators_flock_exclude_name_scoped_applies(lab: Lab) -> None:
    """forget takes state/lock exclusively: busy while a name-scoped apply runs; and an
    outside `flock state/lock` keeps every apply out, whatever its scope."""
    runner, release = holding(lab, [], "a", "--lock-scope", "name")
    assert lab.run("forget", "b").returncode == 3
    release.touch()
    assert runner.wait(timeout=30) == 0
    with lock_held_elsewhere(str(lab.state / "lock")):
        busy = lab.run("apply", "--lock-scope", "name", "c", "--", "true")
    assert busy.returncode == 3
    assert not (lab.state / "c.done").exists()
