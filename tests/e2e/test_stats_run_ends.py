"""Every run's end is in the log, so the table, the JSON and the textfile agree on it."""

from __future__ import annotations

import json
import signal

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import Lab
from tests.procs import lock_held_elsewhere, wait_for


def exported(lab: Lab) -> dict[tuple[str, ...], float]:
    prom = lab.tmp / "runner.prom"
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert (result.returncode, result.stderr) == (0, b"")
    return {
        (sample.name, *sorted(f"{k}={v}" for k, v in sample.labels.items())): sample.value
        for family in text_string_to_metric_families(prom.read_text())
        for sample in family.samples
    }


def group(lab: Lab) -> dict[str, object]:
    result = lab.run("stats", "--json")
    assert result.returncode == 0, result.stderr
    (found,) = json.loads(result.stdout)["groups"]
    return found  # type: ignore[no-any-return]


def test_a_run_refused_by_a_busy_lock_is_one_line_counted_as_busy(lab: Lab) -> None:
    """Regression: a run that found the lock busy (exit 3) wrote nothing, so overlaps never
    showed in stats or the metrics. Now it is one line, `"busy": true` with the lab's
    keys, counted as busy, never as a failure."""
    lock = str(lab.tmp / "job.lock")
    with lock_held_elsewhere(lock):
        assert lab.run("run", "--lock", lock, "--name", "job", "--", "true").returncode == 3
    (line,) = [json.loads(text) for text in lab.log.read_text().splitlines()]
    assert line["busy"] is True
    assert {"ts", "cmd", "attempt", "rc", "duration_ms", "run_id"} <= set(line)
    assert (line["rc"], line["cmd"]) == (3, ["true"])
    found = group(lab)
    assert (found["busy"], found["runs"], found["failed"]) == (1, 0, 0)
    samples = exported(lab)
    assert samples[("runner_runs_total", "cmd=true", "outcome=busy")] == 1
    assert samples[("runner_runs_total", "cmd=true", "outcome=failure")] == 0


def test_a_signal_during_the_backoff_wait_ends_the_run_in_the_log(lab: Lab) -> None:
    """Regression: SIGTERM during the wait before a retry (exit 143) logged nothing more, so
    the table said FAIL rc=1 and the textfile said in progress for a week. The run's end
    is a line of its own (no attempt): a signal in every view, and nothing in progress."""
    runner = lab.start("run", "--retries", "3", "--backoff", "30", "--", "false")
    wait_for(lambda: lab.log.exists() and lab.log.read_text().count("\n") == 1, what="attempt 1")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=10) == 143
    first, end = [json.loads(text) for text in lab.log.read_text().splitlines()]
    assert (end["attempted"], end["rc"], end["signal"], end["run_id"]) == (
        False, 143, "TERM", first["run_id"],
    )  # fmt: skip
    found = group(lab)
    assert (found["runs"], found["signalled"], found["failed"], found["attempts"]) == (1, 1, 1, 1)
    assert found["last_failure_rc"] == 143
    samples = exported(lab)
    assert samples[("runner_runs_total", "cmd=false", "outcome=signal")] == 1
    assert samples[("runner_runs_in_progress", "cmd=false")] == 0
    table = lab.run("stats").stdout.decode().splitlines()
    assert "rc=143" in table[1]
    assert table[1].rstrip().endswith("!")


def test_a_command_that_traps_term_and_exits_0_counts_as_the_runner_exited(lab: Lab) -> None:
    """Regression: a command that trapped the forwarded SIGTERM and exited 0 was logged with
    `"signal": "TERM"`, the runner exited 143, and stats counted the run OK. The log keeps
    the command's own rc; every view counts what the runner exited with."""
    started = lab.tmp / "started"
    script = f"trap 'exit 0' TERM; touch {started}; while :; do sleep 0.02; done"
    runner = lab.start("run", "--", "sh", "-c", script)
    wait_for(started.exists, what="the command")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=10) == 143
    (line,) = [json.loads(text) for text in lab.log.read_text().splitlines()]
    assert (line["rc"], line["signal"]) == (0, "TERM")
    found = group(lab)
    assert (found["runs"], found["succeeded"], found["signalled"], found["failed"]) == (1, 0, 1, 1)
    assert found["exit_codes"] == {"143": 1}
    samples = exported(lab)
    signalled = [
        value for key, value in samples.items()
        if key[0] == "runner_runs_total" and key[-1] == "outcome=signal"
    ]  # fmt: skip
    assert signalled == [1]
    codes = {
        key[-1]: value for key, value in samples.items() if key[0] == "runner_run_exit_codes_total"
    }
    assert codes == {"code=143": 1}
