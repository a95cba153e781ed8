"""Metrics an operator can alert on: silent cron, trustworthy counters, incremental reads."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import RUNNER, Lab


def line(run_id: str, cmd: str, rc: int, *, ago: float = 0, attempt: int = 1) -> bytes:
    """One attempt line, as the runner writes it, `ago` seconds in the past."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - ago))
    record = {
        "ts": stamp,
        "cmd": [cmd],
        "attempt": attempt,
        "rc": rc,
        "duration_ms": 12,
        "run_id": run_id,
    }
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def counters(path: Path) -> dict[tuple[str, ...], float]:
    """Every sample of the textfile, keyed by name and labels."""
    found = {}
    for family in text_string_to_metric_families(path.read_text()):
        for sample in family.samples:
            key = (sample.name, *sorted(f"{k}={v}" for k, v in sample.labels.items()))
            found[key] = sample.value
    return found


def runs_of(prom: Path, cmd: str, outcome: str = "success") -> float:
    return counters(prom)[("runner_runs_total", f"cmd={cmd}", f"outcome={outcome}")]


def test_the_cron_recipe_is_silent_when_all_is_well(lab: Lab) -> None:
    """Regression: `stats -q --prometheus FILE` printed the table, so cron mailed every minute."""
    lab.run("run", "--", "true")
    lab.log.open("ab").write(b"garbage\n")
    prom = lab.tmp / "runner.prom"
    result = lab.run("stats", "-q", "--since", "1d", "--prometheus", str(prom))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert prom.exists()


def test_counters_count_the_whole_history_whatever_the_window(lab: Lab) -> None:
    """Regression: with --since, *_total were window counts that went down (7, then 2)."""
    lab.log.write_bytes(b"".join(line(f"old{n}", "job", 0, ago=3 * 86400) for n in range(7)))
    prom = lab.tmp / "runner.prom"
    lab.run("stats", "--since", "1d", "--prometheus", str(prom))
    first = counters(prom)
    assert runs_of(prom, "job") == 7
    assert first[("runner_window_runs", "cmd=job", "outcome=success")] == 0
    with lab.log.open("ab") as log:
        log.write(line("new", "job", 1))
    lab.run("stats", "--since", "1d", "--prometheus", str(prom))
    second = counters(prom)
    assert runs_of(prom, "job", "failure") == 1
    assert second[("runner_window_runs", "cmd=job", "outcome=failure")] == 1
    assert set(first) <= set(second)
    for key, value in first.items():
        if key[0].endswith(("_total", "_bucket", "_count", "_sum")):
            assert second[key] >= value, key


def test_a_repeat_reads_only_the_new_lines(lab: Lab) -> None:
    """The checkpoint: an old line changed in place is not read again; new lines are."""
    lab.log.write_bytes(line("a", "job", 0) + line("b", "job", 0))
    prom = lab.tmp / "runner.prom"
    lab.run("stats", "--prometheus", str(prom))
    assert runs_of(prom, "job") == 2
    checkpoint = lab.home / ".runs.jsonl.stats-cmd.json"
    assert checkpoint.stat().st_mode & 0o777 == 0o600
    first, second = lab.log.read_bytes().splitlines(keepends=True)
    with lab.log.open("r+b") as log:
        log.seek(len(first))
        log.write(second.replace(b'"rc":0', b'"rc":7'))
    with lab.log.open("ab") as log:
        log.write(line("c", "job", 0))
    lab.run("stats", "--prometheus", str(prom))
    assert runs_of(prom, "job") == 3
    assert runs_of(prom, "job", "failure") == 0


def test_a_half_written_last_line_waits_for_its_end(lab: Lab) -> None:
    """A line still being written is not read (nor counted malformed) until it is whole."""
    whole = line("a", "job", 0)
    lab.log.write_bytes(line("z", "job", 0) + whole[:20])
    prom = lab.tmp / "runner.prom"
    lab.run("stats", "--prometheus", str(prom))
    assert counters(prom)[("runner_log_malformed_lines_total",)] == 0
    with lab.log.open("ab") as log:
        log.write(whole[20:])
    lab.run("stats", "--prometheus", str(prom))
    assert runs_of(prom, "job") == 2
    assert counters(prom)[("runner_log_malformed_lines_total",)] == 0


def rotate_and_go_on(lab: Lab, how: str) -> None:
    """Rotate runs.jsonl as logrotate would; a line lands in the old file after the last stats."""
    old = lab.home / ("runs.jsonl-20261130" if how == "dated" else "runs.jsonl.1")
    if how == "copytruncate":
        shutil.copy(lab.log, old)
        with lab.log.open("r+b") as log:
            log.truncate(0)
    else:
        lab.log.rename(old)
    with old.open("ab") as log:
        log.write(line("late", "job", 0))
    if how == "compress":
        with old.open("rb") as plain, gzip.open(str(old) + ".gz", "wb") as packed:
            packed.write(plain.read())
        old.unlink()
    with lab.log.open("ab") as log:
        log.write(line("after", "job", 0))


@pytest.mark.parametrize("how", ["create", "compress", "copytruncate", "dated"])
def test_rotation_counts_no_line_twice_and_misses_none(lab: Lab, how: str) -> None:
    """Moved (numbered or dated), compressed, or copied and truncated: every line once."""
    prom = lab.tmp / "runner.prom"
    lab.log.write_bytes(line("before", "job", 0))
    lab.run("stats", "--prometheus", str(prom))
    assert runs_of(prom, "job") == 1
    rotate_and_go_on(lab, how)
    result = lab.run("stats", "--prometheus", str(prom))
    assert result.returncode == 0, result.stderr
    assert runs_of(prom, "job") == 3
    lab.run("stats", "--prometheus", str(prom))
    assert runs_of(prom, "job") == 3


def test_a_rotation_whose_old_part_is_gone_is_said_once(lab: Lab) -> None:
    """The old file was deleted: the runner says what it could not count, and goes on."""
    lab.log.write_bytes(line("a", "job", 0))
    prom = lab.tmp / "runner.prom"
    lab.run("stats", "--prometheus", str(prom))
    lab.log.unlink()
    lab.log.write_bytes(line("b", "job", 0))
    result = lab.run("stats", "--prometheus", str(prom))
    assert b"was rotated and its old part was not found" in result.stderr
    assert runs_of(prom, "job") == 2


def test_several_logs_compressed_ones_and_stdin(lab: Lab) -> None:
    """--log more than once, gzip-compressed rotated logs, and - for stdin."""
    older = lab.tmp / "runs.jsonl.2.gz"
    with gzip.open(older, "wb") as packed:
        packed.write(
            line("r1", "job", 1, attempt=1).replace(b'"run_id"', b'"delay_ms":10,"run_id"')
        )
    newer = lab.tmp / "runs.jsonl.1"
    newer.write_bytes(line("r1", "job", 0, attempt=2) + line("r2", "other", 0))
    report = json.loads(lab.run("stats", "--json", "--log", str(older), "--log", str(newer)).stdout)
    job = next(row for row in report["groups"] if row["cmd"] == "job")
    assert (job["runs"], job["succeeded"], job["retried_runs"]) == (1, 1, 1)
    piped = subprocess.run(
        [sys.executable, RUNNER, "stats", "--json", "--log", "-"],
        input=newer.read_bytes(),
        capture_output=True,
        env=lab.env,
        check=True,
    )
    assert json.loads(piped.stdout)["lines"] == 2


def test_a_log_given_twice_or_through_a_hard_link_is_read_once(lab: Lab) -> None:
    """Regression: `--log runs.jsonl --log runs.jsonl`, or a glob that finds a log and a hard
    link to it, counted every run twice. A file is read once, whatever names it."""
    lab.log.write_bytes(line("r1", "job", 0) + line("r2", "job", 1))
    os.link(lab.log, lab.tmp / "again.jsonl")
    for names in ([lab.log, lab.log], [lab.log, lab.tmp / "again.jsonl", lab.log]):
        args = [arg for name in names for arg in ("--log", str(name))]
        report = json.loads(lab.run("stats", "--json", *args).stdout)
        assert report["lines"] == 2
        assert [(row["cmd"], row["runs"]) for row in report["groups"]] == [("job", 2)]


def test_the_table_has_quantiles_codes_and_a_history_strip(lab: Lab) -> None:
    """p50/p95/p99, the last failure, exit codes, and a strip of the latest runs."""
    outcomes = [0, 0, 1, 124, 0]
    lab.log.write_bytes(
        b"".join(line(f"r{n}", "job", rc, ago=100 - n) for n, rc in enumerate(outcomes))
    )
    table = lab.run("stats", env={"COLUMNS": "400"}).stdout.decode()
    header, row = table.splitlines()
    for title in ("P50", "P95", "P99", "ATT P95", "LAST FAIL", "CODES", "HISTORY"):
        assert title in header
    assert row.endswith("..xT.")
    assert "0:3 1:1 124:1" in row
    doc = json.loads(lab.run("stats", "--json").stdout)["groups"][0]
    assert doc["history"] == ["success", "success", "failure", "timeout", "success"]
    assert doc["exit_codes"] == {"0": 3, "1": 1, "124": 1}
    assert doc["attempts_timed_out"] == 1


def test_the_strip_is_coloured_on_a_terminal_unless_no_color(lab: Lab) -> None:
    """On a terminal the strip is coloured; NO_COLOR keeps it plain, and so does a terminal
    that says it knows no escapes (TERM=dumb: an editor's shell, a CI log)."""
    script = shutil.which("script")
    if script is None:
        pytest.skip("util-linux script is not installed")
    lab.log.write_bytes(line("a", "job", 0, ago=10) + line("b", "job", 1, ago=5))
    command = f"COLUMNS=300 {sys.executable} {RUNNER} stats"
    coloured = subprocess.run(
        [script, "-qec", command, "/dev/null"], capture_output=True, env=lab.env, check=True
    )
    assert b"\x1b[31m" in coloured.stdout
    for plainly in ({"NO_COLOR": "1"}, {"TERM": "dumb"}):
        plain = subprocess.run(
            [script, "-qec", command, "/dev/null"],
            capture_output=True,
            env={**lab.env, **plainly},
            check=True,
        )
        assert b"\x1b[" not in plain.stdout
        assert b".x" in plain.stdout


def test_the_checkpoint_is_not_in_the_way_of_rotation_globs(lab: Lab) -> None:
    """It is a hidden file beside the log: `runs.jsonl*` patterns do not take it."""
    lab.run("run", "--", "true")
    lab.run("stats", "--prometheus", str(lab.tmp / "runner.prom"))
    assert sorted(p.name for p in lab.home.glob("runs.jsonl*")) == ["runs.jsonl"]
    assert (lab.home / ".runs.jsonl.stats-cmd.json").exists()
    assert os.path.getsize(lab.home / ".runs.jsonl.stats-cmd.json") < 10_000


def test_since_narrows_a_log_read_from_stdin(lab: Lab) -> None:
    """--log - with --since: stdin is read once, through the window (regression: ignored)."""
    piped = subprocess.run(
        [sys.executable, RUNNER, "stats", "--json", "--since", "1h", "--log", "-"],
        input=line("old", "job", 1, ago=3 * 3600) + line("new", "job", 0),
        capture_output=True,
        env=lab.env,
        check=True,
    )
    (job,) = json.loads(piped.stdout)["groups"]
    assert (job["runs"], job["succeeded"]) == (1, 1)
