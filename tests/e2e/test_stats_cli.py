"""stats, applied and forget through the real CLI."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Lab
from tests.procs import UNTIL, catches, lock_held_elsewhere, read_pid, wait_for


def test_stats_shows_the_runs_that_needed_retries(lab: Lab) -> None:
    """flaky.sh succeeded on its third attempt: the table and JSON say so."""
    lab.run("run", "--retries", "3", "--backoff", "0", "--", lab.fixture("flaky.sh"))
    lab.run("run", "--timeout", "0.1", "--", "sleep", "5")
    lab.run("run", "--", "true")
    result = lab.run("stats", "--json")
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    rows = {row["cmd"]: row for row in doc["groups"]}
    flaky = rows[lab.fixture("flaky.sh")]
    assert (flaky["runs"], flaky["succeeded"], flaky["attempts_max"], flaky["retried_runs"]) == (
        1,
        1,
        3,
        1,
    )
    assert rows["sleep 5"]["timed_out"] == 1
    assert doc["groups"][0]["cmd"] == "sleep 5"
    table = lab.run("stats", env={"COLUMNS": "200"}).stdout.decode().splitlines()
    assert table[0].split()[:4] == ["CMD", "RUNS", "OK", "FAIL"]
    assert len(table) == 4


def test_stats_reports_malformed_lines_and_never_crashes(lab: Lab) -> None:
    """Broken lines are counted on stderr; the rest is summarized."""
    lab.run("run", "--", "true")
    with lab.log.open("ab") as handle:
        handle.write(b'\x00\xff garbage\n{"half": \n')
    result = lab.run("stats")
    assert result.returncode == 0
    assert b"skipped 2 malformed lines" in result.stderr
    assert b"true" in result.stdout
    assert b"Traceback" not in result.stderr


def test_stats_of_a_missing_or_empty_log_says_so(lab: Lab) -> None:
    """No log yet: a clear line, exit 0; an empty one likewise."""
    missing = lab.run("stats")
    assert (missing.returncode, missing.stdout) == (0, b"")
    assert b"no attempt log" in missing.stderr
    lab.log.write_bytes(b"")
    empty = lab.run("stats")
    assert empty.returncode == 0
    assert b"no runs" in empty.stderr


def test_stats_since_and_by_name(lab: Lab) -> None:
    """--by name groups apply runs by NAME; --since 1h keeps today's runs."""
    lab.run("apply", "db", "--", "true")
    lab.run("run", "--", "true")
    doc = json.loads(lab.run("stats", "--by", "name", "--since", "1h", "--json").stdout)
    assert sorted(row["name"] for row in doc["groups"]) == ["-", "db"]


def test_prometheus_file_is_written_atomically_and_parses(lab: Lab) -> None:
    """--prometheus FILE: a textfile-collector file that a real parser reads."""
    lab.run("run", "--retries", "1", "--backoff", "0", "--", "false")
    out = lab.tmp / "runner.prom"
    assert lab.run("stats", "--prometheus", str(out)).returncode == 0
    families = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    attempts = families["runner_attempts"].samples
    failed = [(s.labels["cmd"], s.value) for s in attempts if s.labels["outcome"] == "failure"]
    assert failed == [("false", 2)]
    assert [p.name for p in lab.tmp.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("kind", ["link to a file", "link to a fifo", "fifo"])
def test_prometheus_never_replaces_a_link_or_a_device(lab: Lab, kind: str) -> None:
    """Regression: the textfile was renamed over whatever had its name, so, as root,
    `--prometheus /dev/stdout` (a link) or `/dev/null` (a device) replaced the system's
    node with a file. Only a regular file (or none) is replaced; anything else is left
    as it is, and refused before the log is read, pointing at `-` for stdout."""
    lab.run("run", "--", "true")
    target = lab.tmp / "target"
    if kind == "link to a file":
        target.write_text("theirs\n")
    else:
        os.mkfifo(target)
    out = lab.tmp / "runner.prom"
    if kind == "fifo":
        out = target
    else:
        out.symlink_to(target)
    before = os.lstat(out)
    result = lab.run("stats", "-q", "--prometheus", str(out))
    assert result.returncode == 125
    assert result.stderr.startswith(b"runner: error: cannot write " + str(out).encode())
    assert b"--prometheus -" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    after = os.lstat(out)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    if kind == "link to a file":
        assert target.read_text() == "theirs\n"
    assert not list(lab.home.glob(".runs.jsonl.stats-*.json"))  # refused before the read
    assert [p.name for p in lab.tmp.iterdir() if p.name.startswith(".")] == []


def _files(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_ino, p.read_bytes()) for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize(
    "name",
    [
        "runs.jsonl",
        "another name of runs.jsonl",
        ".runs.jsonl.stats-cmd.json",
        ".runs.jsonl.stats.lock",
        "runs.jsonl.1",
        "runs.jsonl-20261202.gz",
        "runs.1.jsonl",
    ],
)
def test_prometheus_never_replaces_the_log_or_what_stats_keeps_beside_it(
    lab: Lab, name: str
) -> None:
    """Regression: `stats --prometheus ~/.runner/runs.jsonl` (--log meant) renamed the
    textfile over the attempt log, its whole history lost, and said nothing (exit 0). The
    log under any of its names, stats' checkpoint and lock beside it, and a name stats would
    read as a rotated generation (one there, or one not yet) are refused before the log is
    read, and nothing in the home changes."""
    lab.run("run", "--", "true")
    lab.run("run", "--", "false")
    assert lab.run("stats", "-q").returncode == 0  # its checkpoint and lock are there
    (lab.home / "runs.jsonl.1").write_bytes(lab.log.read_bytes())  # an older generation
    out = lab.home / name
    if name.startswith("another"):
        os.link(lab.log, out)
    before = _files(lab.home)
    result = lab.run("stats", "-q", "--prometheus", str(out))
    assert result.returncode == 125
    assert result.stderr.startswith(b"runner: error: cannot write " + str(out).encode())
    assert b"runner.prom" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert _files(lab.home) == before


def test_prometheus_given_the_log_read_with_log_is_refused(lab: Lab) -> None:
    """The same for a log named by --log, also one that is not there yet."""
    lab.run("run", "--", "true")
    other = lab.tmp / "other.jsonl"
    other.write_bytes(lab.log.read_bytes())
    for log in (other, lab.tmp / "none.jsonl"):
        result = lab.run("stats", "-q", "--log", str(log), "--prometheus", str(log))
        assert result.returncode == 125
        assert b"it is the attempt log" in result.stderr
    assert other.read_bytes() == lab.log.read_bytes()
    assert not (lab.tmp / "none.jsonl").exists()


def test_prometheus_in_a_missing_folder_is_refused_before_the_read(lab: Lab) -> None:
    """A textfile whose folder is not there (a typo in the cron line) was said only once the
    whole log had been read, every minute again."""
    lab.run("run", "--", "true")
    for out in (lab.tmp / "missing" / "runner.prom", lab.log / "runner.prom"):
        result = lab.run("stats", "-q", "--prometheus", str(out))
        assert result.returncode == 125
        assert result.stderr == (
            f"runner: error: cannot write {out}: there is no folder {out.parent}\n".encode()
        )
    assert not list(lab.home.glob(".runs.jsonl.stats-*.json"))  # refused before the read


def test_a_textfile_beside_the_log_named_otherwise_is_written(lab: Lab) -> None:
    """Names that only begin as the log's are the user's to choose."""
    lab.run("run", "--", "true")
    log = lab.log.read_bytes()
    for name in ("runs.jsonl.prom", "runs.prom", "runner.prom"):
        assert lab.run("stats", "-q", "--prometheus", str(lab.home / name)).returncode == 0
        assert b"runner_runs_total" in (lab.home / name).read_bytes()
    assert lab.log.read_bytes() == log


def test_applied_lists_markers_and_forget_removes_one(lab: Lab) -> None:
    """applied shows name, time, run id, command, host; forget makes apply run again."""
    lab.run("apply", "db")
    listing = lab.run("applied").stdout.decode().splitlines()
    assert listing[0].split() == ["NAME", "APPLIED", "RUN", "ID", "HOST", "COMMAND"]
    assert listing[1].startswith("db ")
    entries = json.loads(lab.run("applied", "--json").stdout)
    assert entries[0]["name"] == "db"
    assert entries[0]["cmd"][-1] == "db"
    dry = lab.run("forget", "--dry-run", "db")
    assert b"would forget db" in dry.stdout
    assert (lab.state / "db.done").exists()
    assert lab.run("forget", "db").stdout == b"forgot db: its next apply runs again\n"
    assert lab.run("forget", "db").stdout == b"db is not applied; nothing to forget\n"
    assert lab.run("apply", "db").returncode == 0
    assert len(lab.applications()) == 2


def test_forget_waits_for_no_one_while_an_apply_runs(lab: Lab) -> None:
    """forget racing an apply: the apply holds the lock, forget exits 3 and removes nothing."""
    pidfile = lab.tmp / "pid"
    release = lab.tmp / "release"
    script = f"echo $$ > {pidfile}; {UNTIL.format(release=release)}"
    runner = lab.start("apply", "db", "--", "sh", "-c", script)
    read_pid(str(pidfile))
    busy = lab.run("forget", "db")
    assert busy.returncode == 3
    assert b"another run in progress" in busy.stderr
    release.touch()
    assert runner.wait(timeout=20) == 0
    assert (lab.state / "db.done").exists()
    assert lab.run("forget", "db").returncode == 0
    assert not (lab.state / "db.done").exists()


def test_forget_and_apply_race_and_one_wins_cleanly(lab: Lab) -> None:
    """Started together many times: state is always consistent with who won."""
    for round_ in range(6):
        name = f"step{round_}"
        lab.run("apply", name, "--", "true")
        apply = lab.start("apply", name, "--", "true")
        forget = lab.start("forget", name)
        codes = (apply.wait(timeout=20), forget.wait(timeout=20))
        assert set(codes) <= {0, 3}
        marked = (lab.state / f"{name}.done").exists()
        if codes[1] == 3:
            assert marked


def test_forget_validates_names_and_a_signal_while_waiting_ends_it(lab: Lab) -> None:
    """Names are checked like apply's; SIGTERM during --lock-wait gives 143."""
    assert lab.run("forget", "../etc").returncode == 125
    lab.state.mkdir()
    with lock_held_elsewhere(str(lab.state / "lock")):
        waiting = lab.start("forget", "--lock-wait", "60", "db")
        wait_for(lambda: catches(waiting.pid, signal.SIGTERM), what="the runner's handlers")
        waiting.send_signal(signal.SIGTERM)
        assert waiting.wait(timeout=20) == 143


def test_stats_help_says_what_a_busy_checkpoint_exits_with(lab: Lab) -> None:
    """Regression: the help said a checkpoint held by another stats exits 3; stats waits two
    minutes for it and exits 125, as the test of that wait shows."""
    said = " ".join(lab.run("stats", "--help").stdout.decode().split())
    assert "3 another stats" not in said
    assert "125 runner error (a log missing or unreadable, another stats updating" in said


def test_a_log_given_that_is_not_there_is_an_error(lab: Lab) -> None:
    """Regression: `stats --log /nonexistent` (a typo) exited 0 with "nothing to summarize",
    as a home with no log yet does. A log named on the command line must be there."""
    result = lab.run("stats", "--log", str(lab.tmp / "nonexistent"))
    assert result.returncode == 125
    assert result.stderr.decode() == f"runner: error: no attempt log at {lab.tmp / 'nonexistent'}\n"
