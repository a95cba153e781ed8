"""pip install from a clone, into a fresh virtual environment, beside the index's
`entrypoints` and `adapters` packages: the `runner` command, its home, and both sides importing.

The wheel is built from a copy of the tree, so the build leaves nothing in the clone.
The index is needed (setuptools for the build, the two neighbours, psycopg); under
CI=true its absence fails the test, elsewhere it skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.procs import ROOT

BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


def _pip(python: Path, *args: str) -> None:
    result = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if result.returncode != 0:
        reason = f"pip {' '.join(args)} failed: {result.stderr.strip()[-500:]}"
        if os.environ.get("CI") == "true" or "No matching distribution" not in result.stderr:
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel (postgres extra included) and the index's neighbours."""
    work = tmp_path_factory.mktemp("install")
    source = work / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*_cache", "dist", "build"),
    )
    venv = work / "venv"
    subprocess.run([BASE_PYTHON, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    wheels = work / "wheels"
    _pip(python, "wheel", "--no-deps", "-w", str(wheels), str(source))
    (wheel,) = wheels.glob("pyops_runner-*.whl")
    _pip(python, "install", "entrypoints", "adapters", "--no-deps")
    _pip(python, "install", f"{wheel}[postgres]")
    return venv


def _runner_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "XDG_"))}
    env["HOME"] = str(home)
    return env


def test_the_runner_command_runs_with_its_home_in_the_users_state_folder(
    installed: Path, tmp_path: Path
) -> None:
    """`runner` does what runner.py does; its state goes to ~/.local/state/runner."""
    runner = installed / "bin" / "runner"
    env = _runner_env(tmp_path)
    result = subprocess.run(
        [str(runner), "run", "--retries", "1", "--backoff", "0", "--", "sh", "-c", "echo hi"],
        cwd="/",
        env=env,
        capture_output=True,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, b"hi\n")
    log = tmp_path / ".local" / "state" / "runner" / "runs.jsonl"
    assert json.loads(log.read_text())["cmd"] == ["sh", "-c", "echo hi"]
    applied = subprocess.run(
        [str(runner), "apply", "step", "--", "true"], env=env, capture_output=True, check=False
    )
    assert applied.returncode == 0
    assert (tmp_path / ".local" / "state" / "runner" / "state" / "step.done").exists()
    xdg = subprocess.run(
        [str(runner), "run", "--", "true"],
        env={**env, "XDG_STATE_HOME": str(tmp_path / "xdg")},
        check=False,
    )
    assert xdg.returncode == 0
    assert (tmp_path / "xdg" / "runner" / "runs.jsonl").exists()


def test_the_installed_code_folder_is_never_written(installed: Path, tmp_path: Path) -> None:
    """Regression: a forced build wrote runs.jsonl into site-packages."""
    runner = installed / "bin" / "runner"
    subprocess.run([str(runner), "run", "--", "true"], env=_runner_env(tmp_path), check=True)
    written = [p for p in installed.rglob("*") if p.name in ("runs.jsonl", "state")]
    assert written == []


def test_the_version_is_that_of_runner_py(installed: Path) -> None:
    """One version, kept in entrypoints/usage.py: the command's -V and the package's metadata."""
    runner = installed / "bin" / "runner"
    installed_version = subprocess.run([str(runner), "-V"], capture_output=True, check=True)
    here = subprocess.run(
        [sys.executable, os.path.join(ROOT, "runner.py"), "-V"], capture_output=True, check=True
    )
    assert installed_version.stdout == here.stdout
    metadata = subprocess.run(
        [
            str(installed / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print('runner', m.version('pyops-runner'))",
        ],
        capture_output=True,
        check=True,
        cwd=installed,  # not a checkout, where a build's leftover egg-info would answer
    )
    assert metadata.stdout == here.stdout


def test_the_index_packages_of_the_same_names_still_import(installed: Path, tmp_path: Path) -> None:
    """`entrypoints` and `adapters` from the index stay theirs: the wheel has no such top level."""
    probe = (
        "import importlib.util, json, entrypoints\n"
        "print(json.dumps([entrypoints.__file__, hasattr(entrypoints, 'get_group_all'),"
        " importlib.util.find_spec('adapters').origin,"
        " importlib.util.find_spec('domain')]))"
    )
    result = subprocess.run(
        [str(installed / "bin" / "python"), "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    where, theirs, adapters, domain = json.loads(result.stdout)
    assert where.endswith("site-packages/entrypoints.py")
    assert theirs
    assert adapters.endswith("site-packages/adapters/__init__.py")
    assert domain is None


def test_the_postgres_extra_brings_psycopg(installed: Path, tmp_path: Path, pg_url: str) -> None:
    """pip install '.[postgres]': apply with --state works from the installed command."""
    runner = installed / "bin" / "runner"
    namespace = "i" + os.urandom(4).hex()
    result = subprocess.run(
        [str(runner), "apply", "--state", pg_url, "--namespace", namespace, "step", "--", "true"],
        env=_runner_env(tmp_path),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
