"""stats under real rotation: logrotate between two stats, and a rotation while workers read."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from adapters.jsonl import attempt_line
from domain.attempts import AttemptRecord
from tests.e2e.conftest import Lab
from tests.e2e.test_metrics import runs_of
from tests.procs import children_of, wait_for


def runs(first: int, count: int) -> bytes:
    """`count` one-attempt runs of `job` with distinct run ids and times."""
    return b"".join(
        attempt_line(AttemptRecord(1_800_000_000.0 + n, ["job"], 1, 0, 5 + n % 997, f"r{n:08d}"))
        for n in range(first, first + count)
    )


def logrotate(lab: Lab, *options: str) -> None:
    """Rotate runs.jsonl with Debian's logrotate, forced, with its own state file."""
    subprocess.run(logrotate_command(lab, *options), check=True, capture_output=True)


def logrotate_command(lab: Lab, *options: str) -> list[str]:
    """The command line of `logrotate` (see that function)."""
    program = shutil.which("logrotate") or "/usr/sbin/logrotate"
    if not os.path.exists(program):
        if os.environ.get("CI"):
            pytest.fail("logrotate is required in CI (Debian: apt-get install logrotate)")
        pytest.skip("logrotate is not installed")
    config = lab.tmp / "logrotate.conf"
    body = "\n".join(["rotate 10", "missingok", *options])
    config.write_text(f"{lab.log} {{\n{body}\n}}\n")
    return [program, "-f", "-s", str(lab.tmp / "logrotate.state"), str(config)]


def test_an_attempt_after_a_rotation_goes_to_the_new_log(lab: Lab) -> None:
    """Regression: the runner kept the log open for its life, so the attempt after a
    rotation between two retries (logrotate's `create` with `compress`) was written to
    the rotated file, and lost when logrotate removed it once compressed: the run
    stayed in progress for ever. The later attempt goes to the new log."""
    rotate = " ".join(logrotate_command(lab, "create 0600", "compress"))
    marker = lab.tmp / "failed-once"
    script = f"if [ -e {marker} ]; then {rotate}; exit 0; fi; touch {marker}; exit 1"
    result = lab.run("run", "--retries", "1", "--backoff", "0", "--", "sh", "-c", script)
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in lab.home.glob("runs.jsonl*")) == [
        "runs.jsonl",
        "runs.jsonl.1.gz",
    ]
    assert [json.loads(line)["attempt"] for line in lab.log.read_text().splitlines()] == [2]
    both = ["--log", str(lab.home / "runs.jsonl.1.gz"), "--log", str(lab.log)]
    report = json.loads(lab.run("stats", "--json", *both).stdout)
    assert [(row["runs"], row["succeeded"], row["retried_runs"]) for row in report["groups"]] == [
        (1, 1, 1)
    ]


def append(lab: Lab, data: bytes) -> None:
    with lab.log.open("ab") as log:
        log.write(data)


def test_two_logrotate_runs_between_two_stats_count_every_run(lab: Lab) -> None:
    """Regression: `create`, then `copytruncate` with `compress` and `delaycompress`, between
    two stats counted 26 of 52 runs. Every generation not yet read is read once."""
    prom = lab.tmp / "runner.prom"
    lab.log.write_bytes(runs(0, 13))
    lab.run("stats", "-q", "--prometheus", str(prom))
    append(lab, runs(13, 13))
    logrotate(lab, "create 0600")
    append(lab, runs(26, 13))
    logrotate(lab, "copytruncate", "compress", "delaycompress")
    append(lab, runs(39, 13))
    assert sorted(path.name for path in lab.home.glob("runs.jsonl*")) == [
        "runs.jsonl",
        "runs.jsonl.1",
        "runs.jsonl.2.gz",
    ]
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert (result.returncode, result.stderr) == (0, b"")
    assert runs_of(prom, "job") == 52
    lab.run("stats", "-q", "--prometheus", str(prom))
    assert runs_of(prom, "job") == 52


def test_dated_compressed_generations_are_all_read(lab: Lab) -> None:
    """dateext with compress, three rotations between two stats (each a different hour)."""
    prom = lab.tmp / "runner.prom"
    lab.log.write_bytes(runs(0, 5))
    lab.run("stats", "-q", "--prometheus", str(prom))
    for hour in range(3):
        append(lab, runs(5 + 5 * hour, 5))
        logrotate(lab, "compress", "dateext", f"dateformat -2026113{hour}")
    append(lab, runs(20, 5))
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert (result.returncode, result.stderr) == (0, b"")
    assert runs_of(prom, "job") == 25


@pytest.mark.parametrize("dated", [False, True])
def test_generations_that_keep_the_log_s_extension_are_all_read(lab: Lab, dated: bool) -> None:
    """Regression: logrotate's `extension .jsonl` names generations `runs.1.jsonl`,
    `runs.2.jsonl.gz` (or `runs-20261130.jsonl`): none was found, so every line written
    between the last stats and a rotation was lost, with a warning at each rotation."""
    prom = lab.tmp / "runner.prom"
    lab.log.write_bytes(runs(0, 5))
    lab.run("stats", "-q", "--prometheus", str(prom))
    naming = ("dateext", "dateformat -2026113{hour}") if dated else ()
    for hour in range(3):
        append(lab, runs(5 + 5 * hour, 5))
        options = [option.format(hour=hour) for option in naming]
        logrotate(lab, "extension .jsonl", "compress", "delaycompress", *options)
    append(lab, runs(20, 5))
    kept = sorted(path.name for path in lab.home.glob("runs*.jsonl*"))
    assert ("runs-20261131.jsonl" if dated else "runs.2.jsonl.gz") in kept
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert (result.returncode, result.stderr) == (0, b"")
    assert runs_of(prom, "job") == 25
    (lab.home / ".runs.jsonl.stats-cmd.json").unlink()
    lab.run("stats", "-q", "--prometheus", str(prom))
    assert runs_of(prom, "job") == 25


def test_turning_dateext_on_leaves_the_numbered_generations_behind(lab: Lab) -> None:
    """Regression: once logrotate's config took `dateext`, the numbered generations it left
    stayed beside the log, and were taken for newer than the dated ones: each rotation
    read them all again (15 more runs here). Which kind is older is told by their times."""
    prom = lab.tmp / "runner.prom"
    for first in (0, 5):
        append(lab, runs(first, 5))
        logrotate(lab, "rotate 5")
    append(lab, runs(10, 5))
    lab.run("stats", "-q", "--prometheus", str(prom))
    assert runs_of(prom, "job") == 15
    for day in (0, 1):
        logrotate(lab, "rotate 5", "dateext", f"dateformat -2026113{day}")
        append(lab, runs(15 + 5 * day, 5))
        result = lab.run("stats", "-q", "--prometheus", str(prom))
        assert (result.returncode, result.stderr) == (0, b"")
        assert runs_of(prom, "job") == 20 + 5 * day


@pytest.mark.parametrize(("tool", "suffix"), [("xz", ".xz"), ("bzip2", ".bz2")])
def test_generations_compressed_by_another_program_are_all_read(
    lab: Lab, tool: str, suffix: str
) -> None:
    """Regression: logrotate's `compresscmd` (xz, bzip2) left `runs.jsonl.2.xz`, which stats
    did not take for a generation (its runs were lost), and a dated `runs.jsonl-….xz`,
    whose bytes it counted as malformed lines. Every compression the standard library
    reads is read, known by its first bytes."""
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    prom = lab.tmp / "runner.prom"
    packed = [f"compresscmd {shutil.which(tool)}", f"compressext {suffix}", "compress"]
    lab.log.write_bytes(runs(0, 7))
    lab.run("stats", "-q", "--prometheus", str(prom))
    append(lab, runs(7, 7))
    logrotate(lab, "create 0600", *packed)
    append(lab, runs(14, 7))
    logrotate(lab, "create 0600", *packed)
    append(lab, runs(21, 7))
    assert sorted(path.name for path in lab.home.glob("runs.jsonl*")) == [
        "runs.jsonl",
        f"runs.jsonl.1{suffix}",
        f"runs.jsonl.2{suffix}",
    ]
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert (result.returncode, result.stderr) == (0, b"")
    assert runs_of(prom, "job") == 28
    given = lab.run("stats", "--json", "--log", str(lab.home / f"runs.jsonl.2{suffix}"))
    assert (given.returncode, given.stderr) == (0, b"")
    assert json.loads(given.stdout)["groups"][0]["runs"] == 14  # the first 14, rotated twice
    for numbered in lab.home.glob(f"runs.jsonl.*{suffix}"):
        numbered.unlink()  # from here on, dated generations alone
    for hour in range(2):
        append(lab, runs(28 + 7 * hour, 7))
        logrotate(lab, *packed, "dateext", f"dateformat -2026113{hour}")
    append(lab, runs(42, 7))
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert (result.returncode, result.stderr) == (0, b"")
    assert runs_of(prom, "job") == 49


@pytest.mark.parametrize("how", ["create", "copytruncate"])
def test_a_rotation_while_the_workers_read_loses_and_doubles_nothing(lab: Lab, how: str) -> None:
    """Regression: rotating (`mv` and a new file, or copytruncate) while stats' workers read
    lost half the lines. The rotation comes once the workers are reading."""
    prom = lab.tmp / "runner.prom"
    lab.log.write_bytes(runs(0, 10))
    lab.run("stats", "-q", "--prometheus", str(prom))
    append(lab, runs(10, 240_000))  # about 30 MiB: read by workers
    stats = lab.start("stats", "-q", "--prometheus", str(prom))
    wait_for(lambda: bool(children_of(stats.pid)) or stats.poll() is not None, what="workers")
    old = lab.home / "runs.jsonl.1"
    if how == "create":
        lab.log.rename(old)
    else:
        shutil.copy(lab.log, old)
        with lab.log.open("r+b") as log:
            log.truncate(0)
    append(lab, runs(240_010, 3))
    _, err = stats.communicate(timeout=120)
    assert stats.returncode == 0, err
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert (result.returncode, result.stderr) == (0, b"")
    assert runs_of(prom, "job") == 240_013


def test_a_compressed_generation_cut_short_is_an_error_and_nothing_is_lost(lab: Lab) -> None:
    """A .gz cut short (no plain copy beside it) is said in one line; the checkpoint stays
    where it was, so the next stats, once the file is whole, counts everything."""
    import gzip

    prom = lab.tmp / "runner.prom"
    lab.log.write_bytes(runs(0, 3))
    lab.run("stats", "-q", "--prometheus", str(prom))
    append(lab, runs(3, 3))
    packed = gzip.compress(lab.log.read_bytes())
    rotated = lab.home / "runs.jsonl.1.gz"
    rotated.write_bytes(packed[:-12])
    lab.log.write_bytes(runs(6, 1))
    result = lab.run("stats", "-q", "--prometheus", str(prom))
    assert result.returncode == 125
    assert result.stderr == (
        f"runner: error: cannot read {rotated}: a compressed log cut short\n".encode()
    )
    rotated.write_bytes(packed)
    assert lab.run("stats", "-q", "--prometheus", str(prom)).returncode == 0
    assert runs_of(prom, "job") == 7


@pytest.mark.parametrize("module", ["gzip", "bz2", "lzma"])
def test_damaged_compressed_data_is_an_error_of_one_line(lab: Lab, module: str) -> None:
    """Regression: a compressed log damaged in the middle ended in `internal error: error:
    Error -3 …` (zlib) or `LZMAError`: said in one line, as a log cut short is."""
    packer = importlib.import_module(module)
    packed = bytearray(packer.compress(runs(0, 2000)))
    middle = len(packed) // 2
    packed[middle : middle + 64] = bytes(64)
    damaged = lab.tmp / f"old.{module}"
    damaged.write_bytes(bytes(packed))
    result = lab.run("stats", "--log", str(damaged))
    assert result.returncode == 125
    assert result.stderr.startswith(f"runner: error: cannot read {damaged}: ".encode())
    assert result.stderr.count(b"\n") == 1
    assert b"internal error" not in result.stderr


def test_a_zstd_log_says_what_python_it_needs(lab: Lab) -> None:
    """zstd (logrotate's `compresscmd zstd`) is in the standard library from Python 3.14."""
    packed = lab.tmp / "old.zst"
    packed.write_bytes(b"(\xb5/\xfd" + bytes(32))
    result = lab.run("stats", "--log", str(packed))
    if sys.version_info >= (3, 14):
        assert result.returncode == 125  # not a whole zstd frame
        return
    assert result.returncode == 125
    assert (
        result.stderr
        == (
            f"runner: error: cannot read {packed}: it is zstd-compressed, which Python reads "
            "from 3.14 on (zstd -d it)\n"
        ).encode()
    )
