"""Reading runs.jsonl: malformed lines, batches, and the parallel split."""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import batches, logfile
from adapters.jsonl import attempt_line
from adapters.signals import SignalWatch
from domain.aggregate import Aggregate
from domain.attempts import AttemptRecord


def write_log(path: Path, runs: int) -> None:
    """`runs` runs of three commands, every third needing a retry."""
    with path.open("wb") as handle:
        for n in range(runs):
            cmd = [f"job{n % 3}", "--flag"]
            if n % 3 == 0:
                handle.write(attempt_line(AttemptRecord(n, cmd, 1, 1, 10, f"r{n}", None, 500)))
                handle.write(attempt_line(AttemptRecord(n + 0.6, cmd, 2, 0, 10, f"r{n}")))
            else:
                handle.write(attempt_line(AttemptRecord(n, cmd, 1, n % 2, 20, f"r{n}")))


def test_malformed_truncated_and_foreign_lines_are_counted_not_fatal(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Garbage, a foreign object, wrong types and a cut-off last line are skipped, counted."""
    log = tmp_path / "runs.jsonl"
    write_log(log, 3)
    with log.open("ab") as handle:
        handle.write(b"not json\n")
        handle.write(b'{"level": "info", "msg": "hello"}\n')
        handle.write(b'{"ts":"x","cmd":["a"],"attempt":1,"rc":0,"duration_ms":1,"run_id":"z"}\n')
        handle.write(b'{"ts":"2026-01-01T00:00:00.000+00:00","cmd":["a"],"attempt":"1",')
        handle.write(b'"rc":0,"duration_ms":1,"run_id":"z"}\n[1, 2]\n\n')
        handle.write(b'{"ts":"2026-01-01T00:00:00.000+00:00","cmd":"job0","attempt":1,')
        handle.write(b'"rc":0,"duration_ms":1,"run_id":"s"}\n')
        handle.write(b'{"ts":"2026-01-01T00:00:00.000+00:00","cmd":["a"],"att')
    found = logfile.summarize(str(log), "cmd", None, watch)
    assert found.malformed == 8
    assert found.lines == 4 + 8
    assert sum(group.runs for group in found.summary.finished().values()) == 3


def test_group_by_name_puts_plain_runs_under_a_dash(tmp_path: Path, watch: SignalWatch) -> None:
    """--by name: apply runs by their NAME, runs without one under '-'."""
    log = tmp_path / "runs.jsonl"
    log.write_bytes(
        attempt_line(AttemptRecord(0, ["a"], 1, 0, 1, "r1", "db"))
        + attempt_line(AttemptRecord(0, ["b"], 1, 0, 1, "r2"))
    )
    groups = logfile.summarize(str(log), "name", None, watch).summary.finished()
    assert sorted(groups) == ["-", "db"]


@pytest.mark.parametrize("workers", [2, 3, 5])
def test_the_parallel_split_gives_the_same_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, watch: SignalWatch
) -> None:
    """Split across processes (runs cut at the seams included), the sums are unchanged."""
    log = tmp_path / "runs.jsonl"
    write_log(log, 3000)
    serial = logfile.summarize(str(log), "cmd", None, watch, workers=1).summary.finished()
    monkeypatch.setattr(logfile, "PARALLEL_FROM", 0)
    monkeypatch.setattr(batches, "BATCH_BYTES", 4096)
    parallel = logfile.summarize(str(log), "cmd", None, watch, workers=workers).summary.finished()

    def figures(groups: dict[str, Aggregate]) -> dict[str, tuple[object, ...]]:
        return {
            key: (g.runs, g.attempts, g.retried, dict(g.outcomes), g.durations.count)
            for key, g in groups.items()
        }

    assert figures(parallel) == figures(serial)
    assert serial["job0 --flag"].retried == 1000


def test_split_points_fall_on_line_starts(tmp_path: Path) -> None:
    """Every piece begins at the start of a line."""
    log = tmp_path / "runs.jsonl"
    write_log(log, 100)
    data = log.read_bytes()
    fd = os.open(log, os.O_RDONLY)
    try:
        bounds = batches.pieces(fd, 0, len(data), 4)
    finally:
        os.close(fd)
    assert bounds[0] == 0
    assert bounds[-1] == len(data)
    assert all(data[b - 1 : b] == b"\n" for b in bounds[1:-1])
    assert all(json.loads(data[b : data.index(b"\n", b)]) for b in bounds[:-1])


HOSTILE = [
    b"[" * 1000 + b"]" * 1000,
    b"[" * 100000,
    b'{"ts":' * 5000,
    b'{"ts":"2026-01-01T00:00:00+00:00","cmd":["a"],"attempt":1,"rc":0,"duration_ms":1e400,'
    b'"run_id":"z"}',
    b'{"ts":"2026-01-01T00:00:00+00:00","cmd":["a"],"attempt":1,"rc":0,"duration_ms":'
    + b"1"
    + b"0" * 400
    + b',"run_id":"z"}',
    b'{"ts":"2026-01-01T00:00:00+00:00","cmd":["a"],"attempt":'
    + b"9" * 4000
    + b',"rc":0,"duration_ms":1,"run_id":"z"}',
    b'{"ts":"2026-01-01T00:00:00+00:00","cmd":["a"],"attempt":1,"rc":'
    + b"9" * 5000
    + b',"duration_ms":1,"run_id":"z"}',
    b'{"ts":"2026-01-01T00:00:00+00:00","cmd":["a"],"attempt":1,"rc":-1,"duration_ms":1,'
    b'"run_id":"z"}',
    b'{"ts":"0001-01-01T00:00:00+14:00","cmd":["a"],"attempt":1,"rc":0,"duration_ms":1,'
    b'"run_id":"z"}',
    b'{"ts":"9999-12-31T23:59:59-14:00","cmd":["a"],"attempt":1,"rc":0,"duration_ms":1,'
    b'"run_id":"z"}',
    b'{"ts":"2026-01-01T00:00:00+00:00","cmd":[["a"]],"attempt":1,"rc":0,"duration_ms":1,'
    b'"run_id":"z"}',
    b'{"ts":"2026-01-01T00:00:00+00:00","cmd":{"a":1},"attempt":1,"rc":0,"duration_ms":1,'
    b'"run_id":"z","name":["x"]}',
    b'{"ts":"2026-01-01T00:00:00+00:00","cmd":["\xff\\ud800"],"attempt":1,"rc":0,'
    b'"duration_ms":1,"run_id":"z","name":5}',
    b"\xff\xfe not utf-8 at all",
    b'{"ts":null,"cmd":null,"attempt":null,"rc":null,"duration_ms":null,"run_id":null}',
]


@pytest.mark.parametrize("line", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("by", ["cmd", "name"])
def test_no_line_can_make_stats_fail(
    tmp_path: Path, watch: SignalWatch, line: bytes, by: str
) -> None:
    """Each hostile line is counted as malformed (or as a run) and the rest is summarized."""
    log = tmp_path / "runs.jsonl"
    write_log(log, 3)
    with log.open("ab") as handle:
        handle.write(line + b"\n")
    write_log_append(log)
    found = logfile.summarize(str(log), by, None, watch)
    groups = found.summary.finished()
    assert found.lines == 4 + 1 + 1
    assert sum(group.runs for group in groups.values()) + found.malformed == 3 + 1 + 1


def write_log_append(path: Path) -> None:
    with path.open("ab") as handle:
        handle.write(attempt_line(AttemptRecord(99, ["last"], 1, 0, 5, "last")))


def test_hostile_lines_on_the_parallel_path_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: SignalWatch
) -> None:
    """Every hostile line, spread across workers: the same counts as in one process."""
    log = tmp_path / "runs.jsonl"
    write_log(log, 300)
    with log.open("ab") as handle:
        handle.write(b"\n".join(HOSTILE) + b"\n")
    write_log_append(log)
    serial = logfile.summarize(str(log), "cmd", None, watch, workers=1)
    monkeypatch.setattr(logfile, "PARALLEL_FROM", 0)
    monkeypatch.setattr(batches, "BATCH_BYTES", 4096)
    parallel = logfile.summarize(str(log), "cmd", None, watch, workers=3)
    assert (parallel.lines, parallel.malformed) == (serial.lines, serial.malformed)
    assert serial.malformed >= len(HOSTILE) - 3


def test_an_over_long_line_is_skipped_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: SignalWatch
) -> None:
    """Regression: a 300 MB line was held whole (1.09 GB); now it is malformed and skipped."""
    monkeypatch.setattr(batches, "MAX_LINE_BYTES", 1 << 16)
    monkeypatch.setattr(batches, "BATCH_BYTES", 1 << 12)
    log = tmp_path / "runs.jsonl"
    write_log(log, 3)
    with log.open("ab") as handle:
        handle.write(b'{"ts":"' + b"x" * (1 << 20) + b'"}\n')
    write_log_append(log)
    seen: list[int] = []
    real = batches.cut

    def watched(handle: BinaryIO, limit: int | None) -> Iterator[tuple[bytes, int, int]]:
        for chunk, count, overlong in real(handle, limit):
            seen.append(len(chunk))
            yield chunk, count, overlong

    monkeypatch.setattr(batches, "cut", watched)
    found = logfile.summarize(str(log), "cmd", None, watch)
    assert found.malformed == 1
    assert sum(group.runs for group in found.summary.finished().values()) == 4
    assert max(seen) < (1 << 16) + (1 << 12)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=40).map(lambda line: line.replace(b"\n", b"")), max_size=30),
    st.booleans(),
    st.integers(min_value=1, max_value=64),
)
def test_batches_hold_every_line_once_in_order(lines: list[bytes], ended: bool, size: int) -> None:
    """Whatever the batch size and where lines fall across it (empty lines, one longer than a
    batch, the last without its newline): read by position, or as a stream, the batches hold
    the lines, each once, in order, and count them."""
    data = b"\n".join(lines) + (b"\n" if ended and lines else b"")
    expected = data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")
    expected = expected if data else []
    with tempfile.TemporaryFile() as log, mock.patch.object(batches, "BATCH_BYTES", size):
        log.write(data)
        log.flush()
        for handle in (logfile.At(log.fileno(), 0), io.BytesIO(data)):
            found: list[bytes] = []
            for chunk, count, overlong in batches.cut(handle, len(data)):
                assert overlong == 0
                assert count == (chunk.count(b"\n") + 1 if count else 0)
                found += chunk.split(b"\n") if count else []
            assert found == expected


def test_a_fifo_in_the_log_s_place_is_refused_without_blocking(
    tmp_path: Path, watch: SignalWatch
) -> None:
    """Checked on the open descriptor, not before opening: one put in the log's place
    after a check of its path can never block the read."""
    fifo = tmp_path / "runs.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        logfile.summarize(str(fifo), "cmd", None, watch)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_command_line_that_differs_at_every_run_holds_bounded_keys(
    tmp_path: Path, watch: SignalWatch, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Regression: a date in an argument made a key, and an aggregate, per run: 200,000 such
    lines took 110 s and 3.4 GB. A read keeps KEYS_HELD keys apart, the ones to keep first
    (the exported ones, however quiet), and counts the others under (other), losing none."""
    monkeypatch.setattr(logfile, "KEYS_HELD", 20)
    monkeypatch.setattr(logfile, "PARALLEL_FROM", 1 << 12)
    monkeypatch.setattr(batches, "BATCH_BYTES", 1 << 12)
    log = tmp_path / "runs.jsonl"
    with log.open("wb") as handle:
        handle.write(attempt_line(AttemptRecord(0, ["quiet"], 1, 0, 5, "q")))
        for n in range(2000):
            cmd = ["backup", "--date", f"2026-01-01T{n:06d}"]
            handle.write(attempt_line(AttemptRecord(1 + n, cmd, 1, n % 2, 5, f"r{n}")))
            handle.write(attempt_line(AttemptRecord(1 + n, ["busy"], 1, 0, 5, f"b{n}")))
    found = logfile.summarize(str(log), "cmd", None, watch, workers, keep=["quiet"])
    groups = found.summary.finished()
    assert len(groups) <= 20 + 1
    assert groups["quiet"].runs == 1
    assert groups["busy"].runs == 2000
    assert sum(group.runs for group in groups.values()) == 4001
    assert sum(group.failures for group in groups.values()) == 1000
