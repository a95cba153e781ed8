"""stats of a log whose folder it may not write to (a monitoring user's, a read-only mount):
its checkpoint kept elsewhere with --checkpoint, or said to be missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import RUNNER, Lab

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"


def _runs(text: str) -> float:
    """The runs_total of the command `true` that ended in success."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "runner_runs_total" and sample.labels["outcome"] == "success":
                return sample.value
    raise AssertionError("no runner_runs_total")


def test_the_checkpoint_kept_elsewhere_is_read_on_and_guarded(lab: Lab) -> None:
    """--checkpoint FILE: the history is kept there (nothing beside the log; its folders made),
    read on from there, and the lock is beside it."""
    kept = lab.tmp / "cache" / "runner" / "stats.json"
    prom = lab.tmp / "runner.prom"
    lab.run("run", "--", "true")
    args = ["stats", "-q", "--checkpoint", str(kept), "--prometheus", str(prom)]
    assert lab.run(*args).returncode == 0
    assert kept.is_file()
    assert (kept.parent.stat().st_mode & 0o777, kept.parent.parent.stat().st_mode & 0o777) == (
        0o700,
        0o700,
    )  # made, private, as the home is
    assert (kept.parent / ".runs.jsonl.stats.lock").is_file()
    assert not [p.name for p in lab.home.iterdir() if p.name.startswith(".")]
    first = kept.read_bytes()
    lab.run("run", "--", "true")
    assert lab.run(*args).returncode == 0
    assert kept.read_bytes() != first  # the new run counted into it
    assert _runs(prom.read_text()) == 2
    lab.log.unlink()  # gone, and no generation beside it: only the checkpoint knows
    result = lab.run("stats", "--json", "--checkpoint", str(kept))
    assert b'"runs": 2' in result.stdout


@pytest.mark.parametrize("what", ["the log", "a folder", "a link", "under a file", "the textfile"])
def test_a_checkpoint_that_would_replace_something_is_refused(lab: Lab, what: str) -> None:
    """--checkpoint is written whole and renamed over the file it names: never the log, a
    folder or a link, nor in a folder that cannot be, and never the textfile's own name."""
    lab.run("run", "--", "true")
    log = lab.log.read_bytes()
    prom = lab.tmp / "runner.prom"
    given = {
        "the log": lab.log,
        "a folder": lab.tmp,
        "a link": lab.tmp / "link.json",
        "under a file": lab.log / "stats.json",
        "the textfile": prom,
    }[what]
    if what == "a link":
        given.symlink_to(lab.tmp / "target.json")
    result = lab.run("stats", "-q", "--checkpoint", str(given), "--prometheus", str(prom))
    assert result.returncode == 125
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(b"runner: error: cannot ")
    assert lab.log.read_bytes() == log
    assert not prom.exists()


def test_checkpoint_goes_with_one_log_file(lab: Lab) -> None:
    for logs in (["--log", "a", "--log", "b"], ["--log", "-"]):
        result = lab.run("stats", "--checkpoint", str(lab.tmp / "c.json"), *logs)
        assert result.returncode == 125
        assert b"--checkpoint keeps the history of one log file" in result.stderr


def test_one_checkpoint_given_for_two_logs_is_refused(lab: Lab) -> None:
    """A --checkpoint copied into a second cron line, for another log: that log would be
    taken for the first one rotated, its runs added to the first one's history at every
    stats. It is an error, and the checkpoint stays the first log's."""
    kept = lab.tmp / "stats.json"
    other = lab.tmp / "other"
    other.mkdir()
    lab.run("run", "--", "true")
    lab.run("run", "--", "true", env={"RUNNER_HOME": str(other)})
    assert lab.run("stats", "-q", "--checkpoint", str(kept)).returncode == 0
    before = kept.read_bytes()
    result = lab.run("stats", "-q", "--log", str(other / "runs.jsonl"), "--checkpoint", str(kept))
    assert result.returncode == 125
    assert b"holds the history of another log, " + str(lab.log).encode() in result.stderr
    assert kept.read_bytes() == before
    lab.run("run", "--", "true")
    assert lab.run("stats", "-q", "--checkpoint", str(kept)).returncode == 0  # its own log


def test_one_log_named_through_a_linked_folder_is_the_same_log(lab: Lab) -> None:
    """Two cron lines may name one log through a link to its folder: after a rotation it is
    still the log the checkpoint holds."""
    kept = lab.tmp / "stats.json"
    linked = lab.tmp / "linked"
    linked.symlink_to(lab.home)
    lab.run("run", "--", "true")
    assert lab.run("stats", "-q", "--checkpoint", str(kept)).returncode == 0
    lab.log.rename(lab.home / "runs.jsonl.1")
    lab.run("run", "--", "true")
    log = str(linked / "runs.jsonl")
    result = lab.run("stats", "--json", "--log", log, "--checkpoint", str(kept))
    assert result.returncode == 0, result.stderr
    assert b'"runs": 2' in result.stdout


def test_a_home_moved_and_rotated_keeps_the_checkpoint_beside_its_log(lab: Lab) -> None:
    """Only a --checkpoint is held to the log it was kept for: a home moved to another path
    (its checkpoint beside the log), then rotated, is read on as before."""
    lab.run("run", "--", "true")
    assert lab.run("stats", "-q").returncode == 0
    moved = lab.tmp / "moved"
    lab.home.rename(moved)
    (moved / "runs.jsonl").rename(moved / "runs.jsonl.1")
    env = {"RUNNER_HOME": str(moved)}
    lab.run("run", "--", "true", env=env)
    result = lab.run("stats", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert b'"runs": 2' in result.stdout


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder of root's that another user can read: the log's, written by root only."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip("reading as another user needs root, setpriv and /usr/bin/python3")
    if not os.access(RUNNER, os.R_OK) or _as_nobody(["-c", f"open({RUNNER!r})"]).returncode:
        pytest.skip("the runner is not readable by another user here")
    folder = Path(tempfile.mkdtemp(prefix="runner-shared-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _as_nobody(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    setpriv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*setpriv, SYSTEM_PYTHON, *args],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )


def test_a_log_in_a_folder_stats_may_not_write_to(shared: Path, lab: Lab) -> None:
    """Regression: run by a user who may not write beside the log, every `stats -q
    --prometheus` read the whole log again, silently, and its counters fell when logrotate
    deleted an old generation. Now that is said, even under -q; with --checkpoint in a
    folder of the user's own the history is kept there, and no counter falls."""
    home = shared / "home"
    home.mkdir(mode=0o755)
    env = {"RUNNER_HOME": str(home)}
    for _ in range(2):
        lab.run("run", "--", "true", env=env)
    (home / "runs.jsonl").rename(home / "runs.jsonl.1")  # logrotate's create
    lab.run("run", "--", "true", env=env)
    for path in home.iterdir():
        path.chmod(0o644)
    out = shared / "out"
    out.mkdir()
    os.chown(out, NOBODY, NOBODY)
    log, prom, kept = str(home / "runs.jsonl"), str(out / "runner.prom"), str(out / "s.json")

    plain = _as_nobody([RUNNER, "stats", "-q", "--log", log, "--prometheus", prom])
    assert plain.returncode == 0
    assert b"cannot keep the stats checkpoint" in plain.stderr
    assert b"--checkpoint FILE" in plain.stderr
    assert len(plain.stderr.splitlines()) == 1
    assert _runs(Path(prom).read_text()) == 3

    args = [RUNNER, "stats", "-q", "--log", log, "--checkpoint", kept, "--prometheus", prom]
    first = _as_nobody(args)
    assert (first.returncode, first.stderr) == (0, b"")
    (home / "runs.jsonl.1").unlink()  # logrotate's rotate N: the oldest goes
    again = _as_nobody(args)
    assert (again.returncode, again.stderr) == (0, b"")
    assert _runs(Path(prom).read_text()) == 3  # the history kept: no counter falls
    assert not [p.name for p in home.iterdir() if p.name.startswith(".")]
