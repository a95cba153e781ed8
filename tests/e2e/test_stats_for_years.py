"""stats left in cron for years: hostile text, odd logs, and files in its way."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from binascii import crc32
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from adapters.checkpoint import VERSION
from tests.e2e.conftest import RUNNER, Lab
from tests.procs import ROOT, lock_held_elsewhere

ESCAPES = "\x1b]0;owned\x07\x1b[2J"


def test_a_command_line_that_is_not_utf8_exports_valid_text(lab: Lab) -> None:
    """Regression: one such line broke every later --prometheus with a UnicodeEncodeError."""
    lab.run("run", "--", "printf", "%s", os.fsdecode(b"\xff"))
    prom = lab.tmp / "runner.prom"
    for _ in range(2):
        result = lab.run("stats", "-q", "--prometheus", str(prom))
        assert result.returncode == 0, result.stderr
    text = prom.read_bytes().decode("utf-8")
    assert "printf %s $'\\\\xff'" in text


def test_terminal_escapes_in_commands_and_names_never_reach_the_terminal(lab: Lab) -> None:
    """Regression: `\\e]0;…\\a\\e[2J` in a command line reached the operator's terminal raw
    through `stats` and `applied`; a name in a hostile log line too."""
    lab.run("run", "--", "true", ESCAPES)
    lab.run("apply", "step", "--", "true", ESCAPES)
    with lab.log.open("a") as log:
        log.write(
            '{"ts":"2026-11-30T00:00:00+00:00","cmd":["x"],"attempt":1,"rc":0,'
            '"duration_ms":1,"run_id":"r","name":"\\u001b[31mred"}\n'
        )
    outputs = [
        lab.run("stats").stdout,
        lab.run("stats", "--by", "name").stdout,
        lab.run("applied").stdout,
        lab.run("stats", "-q", "--prometheus", "-").stdout,
    ]
    for shown in outputs:
        assert b"\x1b" not in shown
        assert b"\x07" not in shown
    assert b"$'\\E]0;owned\\a\\E[2J'" in outputs[0]
    assert b"\\E[31mred" in outputs[1]


def test_prometheus_dash_writes_the_text_to_stdout(lab: Lab) -> None:
    """--prometheus - (as --log - reads stdin): the textfile's text on stdout, even with -q,
    and no file named '-'."""
    lab.run("run", "--name", "job", "--", "true")
    result = lab.run("stats", "-q", "--by", "name", "--prometheus", "-")
    assert result.returncode == 0
    assert b'runner_runs_total{name="job",outcome="success"} 1\n' in result.stdout
    assert not os.path.exists("-")  # the runner ran in this process's folder


def test_prometheus_dash_has_stdout_to_itself(lab: Lab) -> None:
    """Regression: without -q the table followed the text on stdout, which no parser of the
    exposition format reads; --json with it mixed two formats. The text alone goes to
    stdout, and --json with --prometheus - is a usage error."""
    lab.run("run", "--", "true")
    result = lab.run("stats", "--prometheus", "-")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(b"# HELP runner_runs_total ")
    assert b"CMD " not in result.stdout
    quiet = lab.run("stats", "-q", "--prometheus", "-").stdout

    def steady(text: bytes) -> list[bytes]:
        return [line for line in text.splitlines() if b"_generated_timestamp_" not in line]

    assert steady(result.stdout) == steady(quiet)
    both = lab.run("stats", "--json", "--prometheus", "-")
    assert (both.returncode, both.stdout) == (125, b"")
    assert b"--json" in both.stderr
    assert b"stdout" in both.stderr


def test_a_label_value_that_is_not_utf8_is_a_usage_error(lab: Lab) -> None:
    """Regression: `--label env=$'\\xff'` ended in `internal error: UnicodeEncodeError`."""
    lab.run("run", "--", "true")
    result = lab.run("stats", "-q", "--label", os.fsdecode(b"env=pr\xffod"), "--prometheus", "-")
    assert (result.returncode, result.stdout) == (125, b"")
    assert result.stderr.startswith(b"runner: error: --label: ")
    assert b"internal error" not in result.stderr


def test_a_lone_surrogate_in_a_command_line_is_shown_escaped_and_exports(lab: Lab) -> None:
    """A line another writer added with a lone surrogate (`"\\ud800"`) in its command: shown
    escaped in the table and in the textfile, export after export (the issue reported
    every later export failing; every surrogate is now escaped, whatever its kind)."""
    lab.log.write_text(
        '{"ts":"2026-11-30T00:00:00+00:00","cmd":["echo","\\ud800"],"attempt":1,"rc":0,'
        '"duration_ms":1,"run_id":"r1"}\n'
    )
    prom = lab.tmp / "runner.prom"
    for _ in range(2):
        result = lab.run("stats", "-q", "--prometheus", str(prom))
        assert (result.returncode, result.stderr) == (0, b"")
    assert "cmd=\"echo $'\\\\ud800'\"" in prom.read_text(encoding="utf-8")
    assert "echo $'\\ud800'" in lab.run("stats").stdout.decode()


def checkpoint(lab: Lab) -> Path:
    return lab.home / ".runs.jsonl.stats-cmd.json"


def body(lab: Lab) -> dict[str, Any]:
    """The body of the checkpoint the last stats wrote."""
    return json.loads(checkpoint(lab).read_bytes())["body"]  # type: ignore[no-any-return]


def plant(lab: Lab, planted: dict[str, Any], version: int = VERSION) -> None:
    """A checkpoint of this body, whole: its CRC matches, as one stats wrote would."""
    data = json.dumps(planted, separators=(",", ":")).encode()
    doc = b'{"version":%d,"crc32":"%08x","body":%s}\n' % (version, crc32(data), data)
    checkpoint(lab).write_bytes(doc)


def summary_of(planted: dict[str, Any]) -> dict[str, Any]:
    return planted["summary"]  # type: ignore[no-any-return]


WRONG = [
    ("at", "offset", "abc"),
    ("at", "offset", -5),
    ("at", None, None),
    ("summary", "lines", "many"),
    ("summary", "newest", float("inf")),
    ("summary", "open", {"r": ["k", "t", 1, 1, 0, 0, "success", False]}),
    ("summary", "keys", "x"),
    ("aggregate", "runs", "x"),
    ("aggregate", "outcomes", [1, 2]),
    ("aggregate", "codes", [[999, 1]]),
    ("aggregate", "durations", [[0] * 3, [], 1, 1, 1]),
    ("aggregate", "recent", [[1.7e9, 9]]),
    (None, "exported", "x"),
    (None, "counted", {}),
]


@pytest.mark.parametrize(("part", "field", "value"), WRONG)
def test_a_checkpoint_with_wrong_values_is_not_used_and_said_once(
    lab: Lab, part: str | None, field: str | None, value: object
) -> None:
    """Regression: valid JSON with a wrong type was an internal error on every later run. A
    checkpoint whose CRC matches but whose values no stats writes is not used, said once,
    in the operator's words, and the log is read afresh."""
    lab.run("run", "--", "true")
    assert lab.run("stats", "-q").returncode == 0
    planted = body(lab)
    if part == "aggregate":
        planted["summary"]["keys"]["true"][field] = value
    elif part is None:
        planted[str(field)] = value
    elif field is None:
        planted[part] = value
    else:
        planted[part][field] = value
    plant(lab, planted)
    first = lab.run("stats", "-q", "--json")
    assert first.returncode == 0, first.stderr
    assert first.stderr.startswith(b"runner: not using the stats checkpoint ")
    assert b"damaged" in first.stderr
    assert b"Error" not in first.stderr  # no exception's name
    assert first.stderr.count(b"\n") == 1
    assert json.loads(first.stdout)["groups"][0]["runs"] == 1  # -q: the JSON asked for
    again = lab.run("stats", "--json")
    assert (again.returncode, again.stderr) == (0, b"")
    assert json.loads(again.stdout)["groups"][0]["runs"] == 1


def test_a_checkpoint_damaged_in_any_byte_or_of_another_version_is_not_used(lab: Lab) -> None:
    """The body is under its CRC: a count changed is not believed; a checkpoint of another
    version (an older runner's) is not read either. Either way the log is read afresh, so
    an export's counters stay what the log says."""
    for _ in range(2):
        lab.run("run", "--", "true")
    prom = lab.home / "runner.prom"
    assert lab.run("stats", "-q", "--prometheus", str(prom)).returncode == 0
    data = checkpoint(lab).read_bytes()
    assert data.count(b'"runs":2,') == 1
    checkpoint(lab).write_bytes(data.replace(b'"runs":2,', b'"runs":7,'))
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert b"checksum does not match" in result.stderr
    assert b'runner_runs_total{cmd="true",outcome="success"} 2\n' in prom.read_bytes()
    plant(lab, body(lab), version=14)
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert b"written by another version of runner" in result.stderr
    assert b'runner_runs_total{cmd="true",outcome="success"} 2\n' in prom.read_bytes()


def test_a_checkpoint_that_is_a_fifo_or_a_device_is_never_read(lab: Lab) -> None:
    """Regression: a FIFO in its place hung stats for ever; a link to /dev/zero grew to
    1.4 GB then MemoryError."""
    lab.run("run", "--", "true")
    os.mkfifo(checkpoint(lab))
    assert lab.run("stats", "-q", timeout=20).returncode == 0
    checkpoint(lab).unlink(missing_ok=True)
    checkpoint(lab).symlink_to("/dev/zero")
    result = lab.run("stats", "-q", timeout=20)
    assert result.returncode == 0
    assert b"not using the stats checkpoint" in result.stderr


def test_a_checkpoint_of_another_user_is_not_believed(lab: Lab) -> None:
    """Regression: one planted by another user in a shared folder was trusted (a one-run
    log reported as 1,000,000 runs)."""
    if os.geteuid() != 0:
        pytest.skip("making a file of another user needs root")
    lab.run("run", "--", "true")
    lab.run("stats", "-q")
    planted = body(lab)
    planted["summary"]["keys"]["true"]["runs"] = 1_000_000
    plant(lab, planted)
    os.chown(checkpoint(lab), 65534, 65534)
    result = lab.run("stats", "--json")
    assert b"not by this user" in result.stderr
    assert json.loads(result.stdout)["groups"][0]["runs"] == 1


def test_the_checkpoint_keeps_200_commands_apart_at_most(lab: Lab) -> None:
    """Regression: 100k distinct commands (a date in an argument) made a 224 MB checkpoint.
    Beyond 200 keys the rest is kept together as (other); every run is still counted, and
    no exported series loses its counts to (other) in a later export (the bound kept one
    key fewer than the export's 200 labels, so the 200th fell to 0)."""
    line = (
        '{"ts":"2026-11-30T00:00:00+00:00","cmd":["job","%d"],"attempt":1,"rc":0,'
        '"duration_ms":1,"run_id":"r%d"}\n'
    )
    lab.log.write_text("".join(line % (n, n) for n in range(1000)))
    prom = lab.tmp / "runner.prom"

    def exported() -> dict[tuple[str, ...], float]:
        result = lab.run("stats", "-q", "--prometheus", str(prom))
        assert (result.returncode, result.stderr) == (0, b"")
        return {
            (sample.name, *sorted(sample.labels.values())): sample.value
            for family in text_string_to_metric_families(prom.read_text())
            if family.type == "counter"
            for sample in family.samples
        }

    first = exported()
    kept = body(lab)["summary"]["keys"]
    assert len(kept) == 201
    assert sum(group["runs"] for group in kept.values()) == 1000
    assert "(other)" in kept
    with lab.log.open("a") as log:
        log.write(line % (5000, 5000))
    second = exported()
    assert all(second[key] >= value for key, value in first.items())


def test_long_command_lines_keep_the_checkpoint_small(lab: Lab) -> None:
    """Regression: 250 command lines of 150 KB (an inline script: `sh -c "$(cat job.sh)"`)
    made a 60 MB checkpoint, larger than the log, which every later stats set aside as
    too large, with a warning, to read the whole log again. A key is at most KEY_MAX
    characters (a CRC keeps long lines that differ apart), so the checkpoint's size
    is bounded whatever the lines' length, and a repeat is silent."""
    line = (
        '{"ts":"2026-11-30T00:00:00+00:00","cmd":["sh","-c","echo %d; %s"],"attempt":1,'
        '"rc":0,"duration_ms":1,"run_id":"r%d"}\n'
    )
    filler = "x" * 40_000
    lab.log.write_text("".join(line % (n, filler, n) for n in range(250)))
    for _ in range(2):
        result = lab.run("stats", "-q", "--prometheus", str(lab.tmp / "runner.prom"))
        assert (result.returncode, result.stderr) == (0, b"")
    assert checkpoint(lab).stat().st_size < 1 << 20
    kept = body(lab)["summary"]["keys"]
    assert len(kept) <= 201
    assert sum(group["runs"] for group in kept.values()) == 250
    assert max(map(len, kept)) < 1100


def test_a_series_exported_again_carries_the_labels_of_this_export(lab: Lab) -> None:
    """The lines of a command with no new run are exported again as they were, unless the
    constant labels changed: then every series is written anew."""
    lab.run("run", "--", "true")
    lab.run("run", "--name", "nightly", "--", "false")
    prom = lab.home / "runner.prom"
    series = [b"runner_runs_total", b"runner_run_duration_seconds_bucket", b"runner_last_exit_code"]
    for env in ("a", "a", "b", "b"):
        result = lab.run("stats", "-q", "--prometheus", str(prom), "--label", f"env={env}")
        assert (result.returncode, result.stderr) == (0, b"")
        lines = [line for line in prom.read_bytes().splitlines() if line.startswith(tuple(series))]
        assert len(lines) > 20
        assert all(line.startswith(tuple(series)) and b'env="%s"' % env.encode() in line
                   for line in lines)  # fmt: skip
    fresh = lab.home / "fresh.prom"
    checkpoint(lab).unlink()
    lab.run("stats", "-q", "--prometheus", str(fresh), "--label", "env=b")
    stamp = b"runner_stats_generated_timestamp_seconds"
    assert [line for line in prom.read_bytes().splitlines() if not line.startswith(stamp)] == [
        line for line in fresh.read_bytes().splitlines() if not line.startswith(stamp)
    ]


def test_a_new_log_is_private_and_an_existing_one_keeps_its_mode(lab: Lab) -> None:
    """Regression: runs.jsonl was 0644 (whole command lines, which can carry secrets)."""
    lab.run("run", "--", "true")
    assert lab.log.stat().st_mode & 0o777 == 0o600
    lab.log.chmod(0o640)
    lab.run("run", "--", "true")
    assert lab.log.stat().st_mode & 0o777 == 0o640


def test_a_fifo_for_a_log_is_an_error_not_a_hang(lab: Lab) -> None:
    """Regression: a FIFO runs.jsonl blocked stats in open() past SIGTERM and SIGINT."""
    os.mkfifo(lab.log)
    result = lab.run("stats", timeout=20)
    assert result.returncode == 125
    assert b"not a regular file (read a stream with --log -)" in result.stderr


def _holds_a_flock(pid: int) -> bool:
    with open("/proc/locks") as locks:
        return any(line.split()[1:2] == ["FLOCK"] and line.split()[4] == str(pid) for line in locks)


def test_two_stats_at_once_never_export_a_lower_counter(lab: Lab) -> None:
    """Regression: two stats at once (one paused) lowered an exported counter, which
    Prometheus reads as a reset. One stats at a time updates a checkpoint and exports."""
    import signal

    from tests.procs import wait_for

    line = (
        '{"ts":"2026-11-30T00:00:00+00:00","cmd":["job"],"attempt":1,"rc":0,'
        '"duration_ms":1,"run_id":"r%d"}\n'
    )
    lab.log.write_text("".join(line % n for n in range(200_000)))  # a read that takes a while
    prom = lab.tmp / "runner.prom"
    first = lab.start("stats", "-q", "--prometheus", str(prom))
    wait_for(lambda: _holds_a_flock(first.pid), what="the first stats to hold its lock")
    first.send_signal(signal.SIGSTOP)
    try:
        with lab.log.open("a") as log:
            log.write("".join(line % n for n in range(200_000, 200_050)))
        second = lab.start("stats", "-q", "--prometheus", str(prom))
        wait_for(lambda: _waits_for_a_lock(second.pid), what="the second stats to wait")
    finally:
        first.send_signal(signal.SIGCONT)
    assert first.wait(timeout=30) == 0
    assert second.wait(timeout=30) == 0
    assert 'runner_runs_total{cmd="job",outcome="success"} 200050\n' in prom.read_text()


def _waits_for_a_lock(pid: int) -> bool:
    """Whether the forked helper of `pid` is blocked in flock: queued behind the holder."""
    from tests.procs import children_of

    for child in children_of(pid):
        try:
            with open(f"/proc/{child}/wchan") as wchan:
                if "lock" in wchan.read():
                    return True
        except OSError:
            continue
    return False


def test_labels_keep_the_textfiles_of_several_homes_apart(lab: Lab) -> None:
    """--label KEY=VALUE on every sample (node_exporter drops a duplicate series silently:
    40 were lost with a second home); a home with no log says so."""
    from prometheus_client.parser import text_string_to_metric_families

    lab.run("run", "--name", "job", "--", "true")
    shown = lab.run("stats", "-q", "--by", "name", "--label", "home=a", "--prometheus", "-")
    samples = [s for f in text_string_to_metric_families(shown.stdout.decode()) for s in f.samples]
    assert samples
    assert all(sample.labels.get("home") == "a" for sample in samples)
    empty = lab.tmp / "empty"
    empty.mkdir()
    missing = lab.run("stats", "-q", "--home", str(empty), "--label", "home=b", "--prometheus", "-")
    assert b'runner_log_present{home="b"} 0\n' in missing.stdout
    for bad in ("nokey", "cmd=x", "__x=1", "9x=1"):
        assert lab.run("stats", "--label", bad).returncode == 125


def test_a_gzip_of_newlines_costs_what_its_size_says(lab: Lab) -> None:
    """Regression: a 1.3 MB gzip of newlines cost over 120 s of CPU, one empty line at a
    time. Empty lines are counted as malformed in bulk; a line between them still counts."""
    import gzip

    packed = lab.tmp / "newlines.gz"
    record = (
        b'{"ts":"2026-11-30T00:00:00+00:00","cmd":["x"],"attempt":1,"rc":0,'
        b'"duration_ms":1,"run_id":"r"}'
    )
    with gzip.open(packed, "wb") as handle:
        handle.write(b"\n" * (20 << 20) + record + b"\n" + b"\n" * (20 << 20))
    result = lab.run("stats", "--json", "--log", str(packed), timeout=120)
    document = json.loads(result.stdout)
    assert document["groups"][0]["runs"] == 1
    assert document["malformed"] == 2 * (20 << 20)
    assert document["lines"] == 2 * (20 << 20) + 1


def test_which_commands_stay_apart_does_not_depend_on_the_hash_seed(lab: Lab) -> None:
    """Regression: past 1,000 commands a read keeps the busiest apart, and among commands
    equally busy the first seen; the runs waiting to be counted were counted in the order
    of a set of their keys, so which ones stayed apart (and what the table showed) changed
    from one process to the next with Python's string hashing."""
    lines = [
        b'{"ts":"2026-11-30T00:%02d:%02d.000+00:00","cmd":["backup","--date","%d"],'
        b'"attempt":1,"rc":0,"duration_ms":%d,"run_id":"r%d"}\n'
        % (n // 60 % 60, n % 60, n, n % 7, n)
        for n in range(1500)
    ]
    log = lab.tmp / "dated.jsonl"
    log.write_bytes(b"".join(lines))
    shown = []
    for seed in ("1", "2", "3"):
        lab.tmp.joinpath(".dated.jsonl.stats-cmd.json").unlink(missing_ok=True)
        result = lab.run("stats", "--json", "--log", str(log), env={"PYTHONHASHSEED": seed})
        assert result.returncode == 0, result.stderr
        shown.append([group["cmd"] for group in json.loads(result.stdout)["groups"]])
    assert shown[0] == shown[1] == shown[2]
    assert "backup --date 0" in shown[0]


def _first_read(lab: Lab, log: Path) -> tuple[dict[str, Any], float]:
    """What a first `stats --json --log LOG` says, and the CPU seconds it took."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = lab.run("stats", "--json", "--log", str(log), timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.returncode == 0, result.stderr
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return json.loads(result.stdout), cpu


def test_short_lines_that_are_not_json_objects_cost_what_their_size_says(lab: Lab) -> None:
    """Regression: a line that cannot be an attempt (`x`, a number, a word: not a JSON
    object) was handed to the json module one at a time, an exception each: 2.6 s of CPU a
    megabyte of `x` lines, so a 1 MB gzip of them (a gigabyte) cost about an hour. Such
    lines are now told apart in one pass: reading them costs no more than reading as many
    bytes of the runner's own lines."""
    record = (
        b'{"ts":"2026-11-30T00:00:00.000+00:00","cmd":["x"],"attempt":1,"rc":0,'
        b'"duration_ms":1,"run_id":"r"}\n'
    )
    size = 4 << 20
    junk, runs = lab.tmp / "junk.jsonl", lab.tmp / "runs-only.jsonl"
    junk.write_bytes(record + b"x\n" * (size // 2) + b"7\n" * 100 + b'"a"\n' * 100 + record)
    runs.write_bytes(record * (size // len(record)))
    document, junk_cpu = _first_read(lab, junk)
    assert document["malformed"] == size // 2 + 200
    assert document["groups"][0]["runs"] == 2
    _, runs_cpu = _first_read(lab, runs)
    assert junk_cpu < 2 * runs_cpu + 0.5


def test_retire_after_drops_the_series_of_a_job_gone_quiet(lab: Lab) -> None:
    """--retire-after 30d: a job not run for 30 days leaves the export (its counters vanish,
    the documented contract); a recent one stays; without the option, nothing retires."""
    old = (
        '{"ts":"2026-01-01T00:00:00+00:00","cmd":["gone"],"attempt":1,"rc":0,'
        '"duration_ms":1,"run_id":"r1","name":"gone"}\n'
    )
    lab.log.write_text(old)
    lab.run("run", "--name", "recent", "--", "true")
    kept = lab.run("stats", "-q", "--by", "name", "--prometheus", "-").stdout
    assert b'name="gone"' in kept
    retired = lab.run(
        "stats", "-q", "--by", "name", "--retire-after", "30d", "--prometheus", "-"
    ).stdout
    assert b'name="gone"' not in retired
    assert b'runner_runs_total{name="recent",outcome="success"} 1\n' in retired


SHORT_WAIT = """
import sys
sys.path.insert(0, sys.argv.pop(1))
import adapters.stats_files
adapters.stats_files.UPDATE_WAIT = 0.3
from entrypoints.cli import launch
launch(None)
"""
"""The runner's CLI, with stats' wait for another stats cut from two minutes."""


def test_a_stats_that_never_lets_go_is_named_once_the_wait_ends(lab: Lab) -> None:
    """Regression: a stats that found another one updating the checkpoint for longer than
    the wait (one stopped, or stuck on a dead disk) said `another run in progress` and
    exited 3, as a busy `run --lock` does, though no run was in its way. It says what
    holds it, and exits 125."""
    lab.run("run", "--", "true")
    with lock_held_elsewhere(str(lab.home / ".runs.jsonl.stats.lock")):
        result = subprocess.run(
            [sys.executable, "-c", SHORT_WAIT, ROOT, "stats", "-q"],
            capture_output=True,
            env=lab.env,
            timeout=60,
            check=False,
        )
    assert result.returncode == 125
    assert result.stderr.startswith(b"runner: error: another stats has been updating ")
    assert b"run in progress" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


def _within(lab: Lab, mib: int, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The runner under an address-space limit of `mib` MiB (`ulimit -v`, LimitAS=)."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))

    return subprocess.run(
        [sys.executable, RUNNER, *args],
        preexec_fn=limited,
        capture_output=True,
        env=lab.env,
        timeout=60,
        check=False,
    )


def test_a_repeat_needs_about_the_address_space_run_needs(lab: Lab) -> None:
    """Regression: a repeat read its checkpoint into a buffer of the largest it takes (32 MB),
    and its modules' file into one of 16 MB, so under an address-space limit `run` started
    within, the cron line's stats failed: `internal error: MemoryError`. Each is read into
    a buffer of its own size."""
    lab.run("run", "--", "true")
    prom = str(lab.tmp / "runner.prom")
    assert lab.run("stats", "-q", "--prometheus", prom).returncode == 0  # its checkpoint
    low, high = 4, 256  # the least MiB `run -- true` starts within
    while low < high:
        middle = (low + high) // 2
        if _within(lab, middle, "run", "--", "true").returncode == 0:
            high = middle
        else:
            low = middle + 1
    lab.run("run", "--", "true")
    result = _within(lab, low + 8, "stats", "-q", "--prometheus", prom)
    assert (result.returncode, result.stderr) == (0, b"")


def test_exported_counters_never_fall_when_many_names_share_a_label(lab: Lab) -> None:
    """Regression: with --by name, past 200 names sharing the label `nightly-N-N-N` (a date
    in the name, as the docs advise against and people do), the checkpoint sent names one by
    one to (other): runner_runs_total went 250 to 200 after one more run. Names are joined
    by label first, so the exported sum only grows."""
    line = (
        '{"ts":"2026-11-30T00:00:%02d.%03d+00:00","cmd":["job"],"attempt":1,"rc":0,'
        '"duration_ms":1,"run_id":"r%d","name":"nightly-2026-%04d"}\n'
    )
    prom = lab.tmp / "runner.prom"
    lab.log.write_text("".join(line % (n // 1000, n % 1000, n, n) for n in range(250)))

    def nightly() -> float:
        result = lab.run("stats", "-q", "--by", "name", "--prometheus", str(prom))
        assert (result.returncode, result.stderr) == (0, b"")
        found = {
            (sample.labels["name"], sample.labels["outcome"]): sample.value
            for family in text_string_to_metric_families(prom.read_text())
            if family.name == "runner_runs"
            for sample in family.samples
        }
        return found[("nightly-N-N", "success")]

    assert nightly() == 250
    with lab.log.open("a") as log:
        log.write(line % (59, 0, 999, 999))
    assert nightly() == 251
