"""`run --lock NAME` is one lock whatever the current folder, and state options need a state."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.procs import wait_for


def _start_in(lab: Lab, folder: Path, *args: str) -> subprocess.Popen[bytes]:
    folder.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, RUNNER, *args],
        cwd=folder,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=lab.env,
    )


def test_a_lock_name_is_one_lock_whatever_folder_cron_starts_in(lab: Lab) -> None:
    """Regression: `--lock nightly` was a file ./nightly in the current folder, so a run
    started from another folder ran beside the first, and `locks` never listed it."""
    started = lab.tmp / "started"
    holding = _start_in(
        lab, lab.tmp / "a", "run", "--lock", "nightly", "--", "sh", "-c",
        f"touch {started}; exec sleep 30",
    )  # fmt: skip
    try:
        wait_for(started.exists, what="the first run's command")
        busy = _start_in(lab, lab.tmp / "b", "run", "--lock", "nightly", "--", "true")
        _, err = busy.communicate(timeout=30)
        assert busy.returncode == 3, err
        assert b"run sh -c" in err
        assert not (lab.tmp / "a" / "nightly").exists()
        assert not (lab.tmp / "b" / "nightly").exists()
        listed = lab.run("locks", "--json")
        assert listed.returncode == 0, listed.stderr
        rows = json.loads(listed.stdout)
        assert [row["lock"] for row in rows] == ["run:nightly.lock"]
        assert rows[0]["pid"] == holding.pid
    finally:
        holding.terminate()
        holding.communicate(timeout=30)
    assert lab.run("run", "--lock", "nightly", "--", "true").returncode == 0


def test_a_lock_with_a_slash_is_a_file_as_flock_s(lab: Lab) -> None:
    here = lab.tmp / "here"
    done = _start_in(lab, here, "run", "--lock", "./job.lock", "--", "true")
    assert done.wait(timeout=30) == 0
    assert (here / "job.lock").exists()
    assert not lab.state.exists()


def test_a_lock_that_is_neither_a_name_nor_a_path_is_refused(lab: Lab) -> None:
    result = lab.run("run", "--lock", "my lock", "--", "true")
    assert result.returncode == 125
    assert result.stderr.decode().startswith("runner: error: --lock: 'my lock' is not a lock NAME")
    assert "./my lock" in result.stderr.decode()


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--namespace", "prod", "--lock", "nightly-report", "--", "true"],
        ["run", "--schema", "runner", "--lock", "n", "--", "true"],
        ["run", "--lease", "10s", "--lock", "n", "--", "true"],
        ["apply", "--connect-timeout", "2", "step"],
        ["applied", "--namespace", "prod"],
        ["forget", "--schema", "runner", "step"],
        ["locks", "--namespace", "prod"],
    ],
)
def test_a_state_option_without_a_state_is_an_error_not_one_host_s_lock(
    lab: Lab, args: list[str]
) -> None:
    """Regression: without RUNNER_STATE_URL, `--namespace prod --lock nightly-report` took a
    lock on this host alone, and ran the job on every host at once without a word."""
    lab.env.pop("RUNNER_STATE_URL", None)
    result = lab.run(*args)
    assert result.returncode == 125
    given = next(word for word in args if word.startswith("--"))
    assert result.stderr.decode().startswith(
        f"runner: error: {given} is for a state in PostgreSQL: give --state URL"
    )
    assert not lab.applications()
    assert not lab.log.exists()
