"""JsonlSink, SystemClock and SignalWatch with the real OS."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from freezegun import freeze_time
from pytest_mock import MockerFixture

from adapters.clock import SystemClock
from adapters.jsonl import JsonlSink
from adapters.signals import SignalWatch
from domain.attempts import AttemptRecord
from tests.procs import ROOT

WRITER = """
import sys
sys.path.insert(0, sys.argv[1])
from adapters.jsonl import JsonlSink
from domain.attempts import AttemptRecord
sink = JsonlSink(sys.argv[2], print)
for n in range(200):
    sink.record(AttemptRecord(0.0, ["x" * 3000, sys.argv[3]], n + 1, 1, 5, sys.argv[3]))
"""


def record(attempt: int = 1) -> AttemptRecord:
    return AttemptRecord(time.time(), ["true"], attempt, 0, 3, "run")


def test_lines_are_appended(tmp_path: Path) -> None:
    """Each record is one JSON line, appended after what was there."""
    log = tmp_path / "runs.jsonl"
    log.write_text('{"old": 1}\n')
    sink = JsonlSink(str(log), print)
    sink.record(record(1))
    sink.record(record(2))
    sink.close()
    lines = log.read_text().splitlines()
    assert [json.loads(line).get("attempt") for line in lines] == [None, 1, 2]


@pytest.mark.parametrize("recreated", [True, False])
def test_a_log_rotated_between_two_attempts_gets_the_second_at_its_path(
    tmp_path: Path, recreated: bool
) -> None:
    """Regression: the log stayed open for the runner's life, so an attempt after a
    rotation (logrotate's `create`, at midnight, between two retries) went into the
    rotated file, and was lost with it once compressed and removed. Each attempt is
    appended to the file the path names then, as logging's WatchedFileHandler does."""
    log = tmp_path / "runs.jsonl"
    sink = JsonlSink(str(log), print)
    sink.record(record(1))
    log.rename(tmp_path / "runs.jsonl.1")
    if recreated:
        log.write_bytes(b"")
    sink.record(record(2))
    sink.close()
    rotated = (tmp_path / "runs.jsonl.1").read_text().splitlines()
    assert [json.loads(line)["attempt"] for line in rotated] == [1]
    assert [json.loads(line)["attempt"] for line in log.read_text().splitlines()] == [2]
    assert log.stat().st_mode & 0o777 == (0o644 if recreated else 0o600)


@freeze_time("2026-01-02T03:04:05+00:00")
def test_ts_comes_from_the_wall_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: SignalWatch
) -> None:
    """The system clock's wall time is what the line's ts says."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    log = tmp_path / "runs.jsonl"
    sink = JsonlSink(str(log), print)
    sink.record(AttemptRecord(SystemClock(watch).wall(), ["x"], 1, 0, 0, "r"))
    sink.close()
    assert json.loads(log.read_text())["ts"] == "2026-01-02T03:04:05.000+00:00"


def test_an_unwritable_log_warns_once_and_goes_on(tmp_path: Path) -> None:
    """No folder can be made for the log: one warning, no exception, however many records."""
    warnings: list[str] = []
    (tmp_path / "file").write_text("")
    sink = JsonlSink(str(tmp_path / "file" / "runs.jsonl"), warnings.append)
    sink.record(record(1))
    sink.record(record(2))
    assert len(warnings) == 1
    assert "cannot write the attempt log" in warnings[0]


def test_twenty_concurrent_writers_give_only_whole_lines(tmp_path: Path) -> None:
    """O_APPEND and one write per line: 20 processes x 200 long lines, none torn."""
    log = tmp_path / "runs.jsonl"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, ROOT, str(log), f"w{n}"]) for n in range(20)
    ]
    assert [w.wait(timeout=60) for w in writers] == [0] * 20
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b""
    parsed = [json.loads(line) for line in lines[:-1]]
    assert len(parsed) == 4000
    for n in range(20):
        mine = [p["attempt"] for p in parsed if p["run_id"] == f"w{n}"]
        assert mine == list(range(1, 201))


def test_a_short_write_is_followed_by_a_fresh_line(tmp_path: Path, mocker: MockerFixture) -> None:
    """ENOSPC part-way through a line: the next record starts on a line of its own."""
    log = tmp_path / "runs.jsonl"
    warnings: list[str] = []
    sink = JsonlSink(str(log), warnings.append)
    real_write = os.write
    mocker.patch("adapters.jsonl.os.write", side_effect=lambda fd, data: real_write(fd, data[:9]))
    sink.record(record(1))
    mocker.stopall()
    sink.record(record(2))
    sink.close()
    first, second, end = log.read_bytes().split(b"\n")
    assert (len(first), json.loads(second)["attempt"], end) == (9, 2, b"")
    assert "short write" in warnings[0]


def test_watch_records_forwarded_signals_only(watch: SignalWatch) -> None:
    """SIGHUP and SIGTERM are reported in order; SIGCHLD only wakes."""
    os.kill(os.getpid(), signal.SIGCHLD)
    os.kill(os.getpid(), signal.SIGHUP)
    os.kill(os.getpid(), signal.SIGTERM)
    assert watch.wait(1) == [signal.SIGHUP, signal.SIGTERM]
    assert watch.pending() == []


def test_watch_close_puts_the_old_handlers_back() -> None:
    """Embedding the runner leaves the host's signal handling as it was."""
    before = signal.getsignal(signal.SIGINT)
    SignalWatch().close()
    assert signal.getsignal(signal.SIGINT) is before


def test_sleep_runs_its_full_length(watch: SignalWatch) -> None:
    """With no signal, sleep returns None after at least the time asked."""
    clock = SystemClock(watch)
    start = clock.monotonic()
    assert clock.sleep(0.05) is None
    assert clock.monotonic() - start >= 0.05


def test_sleep_is_cut_short_by_a_signal(watch: SignalWatch) -> None:
    """A signal during a backoff wait ends it at once and names the signal."""
    clock = SystemClock(watch)
    sender = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
    sender.start()
    start = clock.monotonic()
    assert clock.sleep(30) == signal.SIGINT
    assert clock.monotonic() - start < 20
    sender.join()


FINAL = """
import resource, select, sys
sys.path.insert(0, sys.argv[1])
from adapters.signals import SignalWatch
soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))  # a core would be written, if it can be
watch = SignalWatch()
del sys.modules["resource"]
print(watch.final(), "resource" in sys.modules, flush=True)
select.select([sys.stdin], [], [], 60)
"""


@pytest.mark.parametrize("signum", [signal.SIGQUIT, signal.SIGTERM, signal.SIGINT])
def test_once_the_work_is_done_an_ending_signal_ends_the_process_by_itself_with_no_core(
    tmp_path: Path, signum: int
) -> None:
    """After `final`, a signal that ends the run ends the process by that signal: none is
    recorded and then lost on the way out, and SIGQUIT leaves no core file. `final` itself
    imports nothing (resource only once a SIGQUIT comes)."""
    child = subprocess.Popen(
        [sys.executable, "-c", FINAL, ROOT],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stdin is not None
    assert child.stdout.readline() == b"[] False\n"
    child.send_signal(signum)
    _, status = os.waitpid(child.pid, 0)
    child.returncode = -signum  # reaped here, with its core flag
    child.stdout.close()
    child.stdin.close()
    assert os.WIFSIGNALED(status)
    assert os.WTERMSIG(status) == signum
    assert not os.WCOREDUMP(status)
    assert not list(tmp_path.glob("core*"))
