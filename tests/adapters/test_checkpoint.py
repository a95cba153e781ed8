"""The checkpoint under rotation: a rotation in the middle of a read, and several between two."""

from __future__ import annotations

import gzip
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters.checkpoint import Checkpoint
from adapters.jsonl import attempt_line
from adapters.log_read import read_range
from adapters.signals import SignalWatch
from domain.attempts import AttemptRecord
from domain.errors import StateError
from domain.stats import Summary

DAY = 86400.0


def runs(first: int, count: int, at: float = 1_800_000_000.0) -> bytes:
    """`count` one-attempt runs with distinct run ids, a second apart."""
    return b"".join(
        attempt_line(AttemptRecord(at + n, ["job"], 1, 0, 5, f"r{n}"))
        for n in range(first, first + count)
    )


def counted(found: Summary) -> int:
    return sum(aggregate.runs for aggregate in found.finished().values())


def update(log: Path, watch: SignalWatch, warnings: list[str] | None = None) -> Summary:
    said = [] if warnings is None else warnings
    path = str(log.parent / f".{log.name}.stats-cmd.json")
    keeper = Checkpoint(str(log), "cmd", path, False, said.append)
    found = keeper.update(lambda: None, said.append)
    found.forget_open(100_000, time.time())
    keeper.save(found)
    return found


def copytruncate(log: Path, to: Path) -> None:
    shutil.copy(log, to)
    with log.open("r+b") as handle:
        handle.truncate(0)


def rename_and_create(log: Path, to: Path) -> None:
    log.rename(to)
    log.touch()


@pytest.mark.parametrize("rotate", [rename_and_create, copytruncate])
def test_a_rotation_in_the_middle_of_a_read_loses_and_doubles_nothing(
    tmp_path: Path,
    watch: SignalWatch,
    monkeypatch: pytest.MonkeyPatch,
    rotate: Callable[[Path, Path], None],
) -> None:
    """Regression: rotating while stats read lost half the lines. The log is rotated just as
    the read of its new lines begins; a line lands in the new log at once."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(runs(0, 10))
    assert counted(update(log, watch)) == 10
    with log.open("ab") as handle:
        handle.write(runs(10, 500))
    real = read_range
    calls: list[int] = []

    def rotating(*args: object, **kwargs: object) -> bool:
        calls.append(1)
        if len(calls) == 1:
            rotate(log, tmp_path / "runs.jsonl.1")
            with log.open("ab") as handle:
                handle.write(runs(510, 1))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("adapters.checkpoint.read_range", rotating)
    monkeypatch.setattr("adapters.log_read.read_range", rotating)  # generations
    assert counted(update(log, watch)) in (510, 511)  # the new log's line now or next time
    monkeypatch.setattr("adapters.checkpoint.read_range", real)
    monkeypatch.setattr("adapters.log_read.read_range", real)  # generations
    assert counted(update(log, watch)) == 511


def test_a_first_read_cut_by_a_copytruncate_counts_the_copy(
    tmp_path: Path, watch: SignalWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No checkpoint yet, and the log is copied and truncated mid read: its lines are read
    from the copy."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(runs(0, 300))
    real = read_range
    calls: list[int] = []

    def rotating(*args: object, **kwargs: object) -> bool:
        calls.append(1)
        if len(calls) == 1:
            copytruncate(log, tmp_path / "runs.jsonl.1")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("adapters.checkpoint.read_range", rotating)
    monkeypatch.setattr("adapters.log_read.read_range", rotating)  # generations
    assert counted(update(log, watch)) == 300
    assert len(calls) == 3  # the log; then the copy and the emptied log


def test_a_log_rotated_at_every_read_is_an_error_not_a_wrong_count(
    tmp_path: Path, watch: SignalWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded: after a few rotations in a row stats says so, and keeps no checkpoint."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(runs(0, 3))
    real = read_range
    generation = iter(range(1, 100))

    def rotating(*args: object, **kwargs: object) -> bool:
        copytruncate(log, tmp_path / f"runs.jsonl-{next(generation):04d}")
        log.write_bytes(runs(1000 * next(generation), 3))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("adapters.checkpoint.read_range", rotating)
    monkeypatch.setattr("adapters.log_read.read_range", rotating)  # generations
    with pytest.raises(StateError, match="rotated again and again"):
        update(log, watch)
    assert not (tmp_path / ".runs.jsonl.stats-cmd.json").exists()


def test_every_generation_rotated_between_two_reads_is_read_once(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: two rotations between two stats counted 26 of 52 runs. Here: moved to .1,
    then copied and truncated with compress and delaycompress (.1 becomes .2.gz), then once
    more; the current log last. Each generation's late lines count too."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(runs(0, 10))
    assert counted(update(log, watch)) == 10
    with log.open("ab") as handle:
        handle.write(runs(10, 5))  # after the checkpoint, before the first rotation
    log.rename(tmp_path / "runs.jsonl.1")
    log.write_bytes(runs(15, 20))
    for older in (2, 1):  # logrotate's shift: .2 to .3.gz, .1 to .2.gz
        plain = tmp_path / f"runs.jsonl.{older}"
        if plain.exists():
            with plain.open("rb") as source, gzip.open(f"{plain}.{older + 1}.gz", "wb") as packed:
                packed.write(source.read())
            plain.unlink()
            os.rename(f"{plain}.{older + 1}.gz", tmp_path / f"runs.jsonl.{older + 1}.gz")
    copytruncate(log, tmp_path / "runs.jsonl.1")
    log.write_bytes(runs(35, 7))
    warnings: list[str] = []
    assert counted(update(log, watch, warnings)) == 42
    assert warnings == []
    assert counted(update(log, watch)) == 42


def test_a_generation_being_compressed_is_read_once(tmp_path: Path, watch: SignalWatch) -> None:
    """logrotate writes runs.jsonl.1.gz before it removes runs.jsonl.1: both are there, and
    the compressed one may be cut short. The plain one is read, once."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(runs(0, 10))
    update(log, watch)
    with log.open("ab") as handle:
        handle.write(runs(10, 5))
    log.rename(tmp_path / "runs.jsonl.1")
    data = (tmp_path / "runs.jsonl.1").read_bytes()
    (tmp_path / "runs.jsonl.1.gz").write_bytes(gzip.compress(data)[:-20])
    log.write_bytes(runs(15, 1))
    assert counted(update(log, watch)) == 16


def test_dated_generations_are_read_in_date_order(tmp_path: Path, watch: SignalWatch) -> None:
    """dateext: runs.jsonl-20261129.gz is older than runs.jsonl-20261130, whatever their mtimes."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(runs(0, 4))
    update(log, watch)
    with log.open("ab") as handle:
        handle.write(runs(4, 1))
    with (tmp_path / "runs.jsonl-20261129.gz").open("wb") as packed:
        packed.write(gzip.compress(log.read_bytes()))
    log.write_bytes(runs(5, 3))
    log.rename(tmp_path / "runs.jsonl-20261130")
    log.write_bytes(runs(8, 2))
    os.utime(tmp_path / "runs.jsonl-20261129.gz", (2e9, 2e9))
    assert counted(update(log, watch)) == 10


def test_a_retried_run_read_late_counts_as_in_a_whole_read(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: a retried run whose attempts are 30 days old counted 0 when a stats ran
    between its two attempts, and 1 in a whole read. Open runs age by the log's clock."""
    log = tmp_path / "runs.jsonl"
    at = 1_700_000_000.0  # long before today
    first = attempt_line(AttemptRecord(at, ["job"], 1, 1, 5, "slow", None, 60_000))
    second = attempt_line(AttemptRecord(at + 61, ["job"], 2, 0, 5, "slow"))
    log.write_bytes(first)
    update(log, watch)
    with log.open("ab") as handle:
        handle.write(second)
    assert counted(update(log, watch)) == 1
    whole = tmp_path / "whole" / "runs.jsonl"
    whole.parent.mkdir()
    whole.write_bytes(first + second)
    assert counted(update(whole, watch)) == 1


def test_a_run_open_a_week_of_the_log_s_time_is_forgotten(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Its runner was killed: once the log has gone on for a week past it, it is no longer
    in progress."""
    log = tmp_path / "runs.jsonl"
    at = 1_700_000_000.0
    log.write_bytes(attempt_line(AttemptRecord(at, ["job"], 1, 1, 5, "lost", None, 1000)))
    assert update(log, watch).in_progress() == {"job": 1}
    with log.open("ab") as handle:
        handle.write(attempt_line(AttemptRecord(at + 8 * DAY, ["job"], 1, 0, 5, "later")))
    assert update(log, watch).in_progress() == {}


def test_a_line_dated_years_ahead_does_not_age_the_runs_waiting_for_a_retry(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: one line from a host that booted with its clock years ahead moved the
    log's clock there for good, so every later stats forgot the runs waiting for a retry
    (counted 0; a whole read counted them). The log's clock goes no further than now."""
    log = tmp_path / "runs.jsonl"
    now = time.time()
    ahead = attempt_line(AttemptRecord(now + 10 * 365 * DAY, ["ntpdate"], 1, 0, 5, "ahead"))
    first = attempt_line(AttemptRecord(now - 120, ["job"], 1, 1, 5, "slow", None, 60_000))
    second = attempt_line(AttemptRecord(now - 60, ["job"], 2, 0, 5, "slow"))
    log.write_bytes(ahead + first)
    assert update(log, watch).in_progress() == {"job": 1}
    with log.open("ab") as handle:
        handle.write(second)
    assert counted(update(log, watch)) == 2


def test_a_checkpoint_lost_after_rotations_starts_over_from_every_generation(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: a checkpoint lost in a crash (an empty file: it is written without
    fsync) or set aside was read again from the current log alone, so every exported
    counter fell to what the current log holds. A new checkpoint counts every generation
    still beside the log, oldest first, each once (a copy of one is known by its first
    line), then the log."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(runs(0, 10))
    update(log, watch)
    log.rename(tmp_path / "runs.jsonl.1")
    log.write_bytes(runs(10, 5))
    update(log, watch)
    with (tmp_path / "runs.jsonl.2.gz").open("wb") as packed:
        packed.write(gzip.compress((tmp_path / "runs.jsonl.1").read_bytes()))
    (tmp_path / "runs.jsonl.1").unlink()
    log.rename(tmp_path / "runs.jsonl.1")
    log.write_bytes(runs(15, 3))
    shutil.copy(tmp_path / "runs.jsonl.1", tmp_path / "runs.jsonl-copy")
    assert counted(update(log, watch)) == 18
    (tmp_path / ".runs.jsonl.stats-cmd.json").write_bytes(b"")
    warnings: list[str] = []
    assert counted(update(log, watch, warnings)) == 18
    assert len(warnings) == 1
    assert "not using the stats checkpoint" in warnings[0]
    with log.open("ab") as handle:
        handle.write(runs(18, 2))
    assert counted(update(log, watch)) == 20


def test_a_generation_that_cannot_be_read_on_a_new_checkpoint_is_said_and_left_out(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """A damaged old generation does not stop a first stats: it is named, once."""
    log = tmp_path / "runs.jsonl"
    (tmp_path / "runs.jsonl.2.gz").write_bytes(gzip.compress(runs(200, 50, 1_700_000_000.0))[:-30])
    (tmp_path / "runs.jsonl.1").write_bytes(runs(100, 4, 1_750_000_000.0))
    log.write_bytes(runs(0, 3))
    warnings: list[str] = []
    assert counted(update(log, watch, warnings)) == 7
    assert len(warnings) == 1
    assert "runs.jsonl.2.gz" in warnings[0]
    assert "not counted" in warnings[0]


def test_a_home_copied_to_another_disk_reads_on_from_where_it_stopped(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: a home moved to another disk (cp -a, rsync, a restored backup) gives the
    log a new inode; stats took it for a rotated log whose old part was lost, said so, and
    counted every run in it twice. A log that begins with the same line is the same log."""
    home = tmp_path / "old"
    home.mkdir()
    (home / "runs.jsonl").write_bytes(runs(0, 3))
    update(home / "runs.jsonl", watch)
    moved = tmp_path / "new"
    shutil.copytree(home, moved)
    with (moved / "runs.jsonl").open("ab") as handle:
        handle.write(runs(3, 1))
    warnings: list[str] = []
    assert counted(update(moved / "runs.jsonl", watch, warnings)) == 4
    assert warnings == []


def test_a_log_whose_first_line_is_longer_than_its_head_is_known_after_a_rotation(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: a log is known by its first line, read up to 64 KB; one that began with a
    longer line (an inline script of 100 KB) was known by nothing, so the lines written to
    it between the last stats and a rotation were lost without a word."""
    log = tmp_path / "runs.jsonl"
    script = ["sh", "-c", "true " + "x" * 100_000]
    log.write_bytes(attempt_line(AttemptRecord(1_800_000_000.0, script, 1, 0, 5, "long")))
    assert counted(update(log, watch)) == 1
    with log.open("ab") as handle:
        handle.write(runs(0, 4))
    log.rename(tmp_path / "runs.jsonl.1")
    log.write_bytes(runs(4, 2))
    assert counted(update(log, watch)) == 7
    (tmp_path / ".runs.jsonl.stats-cmd.json").unlink()
    assert counted(update(log, watch)) == 7


def test_generations_of_a_naming_left_behind_are_older_than_the_new_one_s(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: once logrotate took `extension .jsonl`, its `runs.1.jsonl` and the
    `runs.jsonl.1` left behind shared a number, and the older was read again after the
    newer. Each naming's generations keep their order; the naming left behind is older."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(runs(0, 5))
    update(log, watch)
    log.rename(tmp_path / "runs.jsonl.1")
    log.write_bytes(runs(5, 5))
    assert counted(update(log, watch)) == 10
    log.rename(tmp_path / "runs.1.jsonl")
    log.write_bytes(runs(10, 5))
    assert counted(update(log, watch)) == 15


def test_lines_after_a_checkpoint_of_an_empty_log_survive_a_copytruncate(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Regression: a checkpoint taken on an empty log (just after a rotation), then lines,
    then a copytruncate before the next stats: those lines were never counted (39 of 52
    runs exported on a live node_exporter and logrotate). The checkpoint keeps the first
    lines of the generations it counted, so a copy it has not counted is read whole."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(b"")
    assert counted(update(log, watch)) == 0
    log.write_bytes(runs(0, 13))
    copytruncate(log, tmp_path / "runs.jsonl.1")
    assert counted(update(log, watch)) == 13
    with log.open("ab") as handle:
        handle.write(runs(13, 2))
    assert counted(update(log, watch)) == 15
