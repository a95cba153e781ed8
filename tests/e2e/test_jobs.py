"""Cron-grade jobs: a stable job name, and a log that says what really ended an attempt."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Lab


def lines(lab: Lab) -> list[dict[str, object]]:
    return [json.loads(line) for line in lab.log.read_text().splitlines()]


def groups(lab: Lab, *options: str) -> dict[str, dict[str, object]]:
    result = lab.run("stats", "--json", *options)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    return {str(row[document["by"]]): row for row in document["groups"]}


def test_run_name_is_logged_and_groups_stats_with_apply_steps(lab: Lab) -> None:
    """--name (or RUNNER_JOB_NAME) names a run's attempts: `name` in the log, a row of
    `stats --by name` beside apply's steps, whatever the command line says."""
    assert lab.run("run", "--name", "backup", "--", "sh", "-c", "echo 2026-11-30").returncode == 0
    named = lab.run("run", "--", "sh", "-c", "echo 2026-12-01", env={"RUNNER_JOB_NAME": "backup"})
    assert named.returncode == 0
    assert lab.run("apply", "db", "--", "true").returncode == 0
    assert [line.get("name") for line in lines(lab)] == ["backup", "backup", "db"]
    assert list(lines(lab)[0])[:5] == ["ts", "cmd", "attempt", "rc", "duration_ms"]
    rows = groups(lab, "--by", "name")
    assert (rows["backup"]["runs"], rows["db"]["runs"]) == (2, 1)


@pytest.mark.parametrize("name", ["../x", "", "a b", "-x"])
def test_a_bad_job_name_is_a_usage_error(lab: Lab, name: str) -> None:
    result = lab.run("run", f"--name={name}", "--", "true")
    assert result.returncode == 125
    assert not lab.log.exists()


def test_a_command_that_exits_124_is_a_failure_not_a_timeout(lab: Lab) -> None:
    """Regression: `timeout 0.1 sleep 1` inside the command was counted as the runner's
    timeout (and fired RunnerJobTimingOut). Only the runner's own timeout is one."""
    lab.run("run", "--", "sh", "-c", "timeout 0.1 sleep 1")
    lab.run("run", "--timeout", "0.2", "--", "sleep", "5")
    own, ours = lines(lab)
    assert (own["rc"], own["timed_out"]) == (124, False)
    assert (ours["rc"], ours["timed_out"]) == (124, True)
    assert "signal" not in ours
    rows = groups(lab)
    assert (rows["sh -c 'timeout 0.1 sleep 1'"]["failed"], rows["sleep 5"]["timed_out"]) == (1, 1)
    assert rows["sh -c 'timeout 0.1 sleep 1'"]["timed_out"] == 0


def test_an_exit_of_130_is_a_failure_and_a_real_signal_is_named(lab: Lab) -> None:
    """Regression: `exit 130` counted as a signal. A command that died of one says which."""
    lab.run("run", "--", "sh", "-c", "exit 130")
    lab.run("run", "--", "sh", "-c", "kill -KILL $$")
    exited, killed = lines(lab)
    assert (exited["rc"], exited["signal"]) == (130, None)
    assert (killed["rc"], killed["signal"]) == (137, "KILL")
    rows = groups(lab)
    assert (rows["sh -c 'exit 130'"]["failed"], rows["sh -c 'exit 130'"]["signalled"]) == (1, 0)
    assert rows["sh -c 'kill -KILL $$'"]["signalled"] == 1


def test_lines_written_before_the_fields_keep_their_reading(lab: Lab) -> None:
    """A line without `timed_out` or `signal`: 124 is a timeout, 128+N a signal, as before."""
    old = (
        '{"ts":"2026-11-01T00:00:00+00:00","cmd":["%s"],"attempt":1,"rc":%d,'
        '"duration_ms":1,"run_id":"%s"}\n'
    )
    lab.log.write_text(old % ("slow", 124, "r1") + old % ("killed", 143, "r2"))
    rows = groups(lab)
    assert (rows["slow"]["timed_out"], rows["killed"]["signalled"]) == (1, 1)


def test_preserve_status_keeps_the_commands_own_status_on_timeout(lab: Lab) -> None:
    """As `timeout --preserve-status`: 143 (TERM) rather than 124; the log still says
    timed_out, and stats counts a timeout."""
    result = lab.run("run", "--preserve-status", "--timeout", "0.2", "--", "sleep", "5")
    assert result.returncode == 143
    (line,) = lines(lab)
    assert (line["rc"], line["timed_out"]) == (143, True)
    assert groups(lab)["sleep 5"]["timed_out"] == 1


def test_signal_0_sends_nothing_and_kill_after_ends_the_command(lab: Lab) -> None:
    """As `timeout -s 0 -k 0.3`: nothing at the timeout, SIGKILL after the grace; without a
    grace it could never end, so that is a usage error."""
    ended = lab.run(
        "run", "--signal", "0", "--kill-after", "0.3", "--timeout", "0.2", "--", "sleep", "5"
    )
    assert ended.returncode == 124
    refused = lab.run("run", "--signal", "0", "--kill-after", "0", "--", "true")
    assert refused.returncode == 125


def test_quiet_with_conflict_exit_code_0_says_nothing_of_a_busy_lock(lab: Lab) -> None:
    """As `flock -n -E 0`: a busy lock is a quiet success under -q."""
    from tests.procs import lock_held_elsewhere

    lock = str(lab.tmp / "job.lock")
    with lock_held_elsewhere(lock):
        quiet = lab.run("run", "-q", "--conflict-exit-code", "0", "--lock", lock, "--", "true")
        loud = lab.run("run", "--conflict-exit-code", "0", "--lock", lock, "--", "true")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, b"", b"")
    assert (loud.returncode, loud.stderr.startswith(b"runner: another run in progress")) == (
        0,
        True,
    )


def test_a_lock_file_on_a_read_only_file_system_still_locks(lab: Lab) -> None:
    """Regression: `run --lock FILE` with FILE on a read-only mount was 125 ('Read-only file
    system'); flock needs no write access, so it takes the lock as `flock -n` does."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.e2e.conftest import RUNNER

    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a read-only mount of the test's own needs root and unshare")
    folder = lab.tmp / "ro"
    folder.mkdir()
    (folder / "job.lock").write_text("")
    script = (
        f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} && "
        f'"$0" {RUNNER} run --lock {folder}/job.lock -- '
        f'sh -c "touch {folder}/x 2>/dev/null; echo ran"'
    )
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, sys.executable],
        env=lab.env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, b"ran\n"), result.stderr
    assert not (folder / "x").exists()
