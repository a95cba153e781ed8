"""The capture of --output-on-failure, with real processes and files."""

from __future__ import annotations

import errno
import os
import tempfile
from types import SimpleNamespace

import pytest
from pytest_mock import MockerFixture

from adapters.capture import RECENT, Capture
from adapters.process import PosixProcessRunner
from adapters.signals import SignalWatch
from tests.procs import FIXTURES

WRITES_IN_TURN = os.path.join(FIXTURES, "writes-in-turn")


def test_no_room_for_the_output_passes_it_through_and_keeps_the_code(
    watch: SignalWatch, mocker: MockerFixture
) -> None:
    """A full disk when the files are made: one warning, that attempt's output passes
    through, and its exit code stands (never a lost exit code)."""
    warnings: list[str] = []
    capture = Capture(warnings.append)
    mocker.patch(
        "adapters.capture.tempfile.TemporaryFile",
        side_effect=OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
    )
    outcome = PosixProcessRunner(watch, capture=capture).run(["sh", "-c", "exit 4"], 0, 10)
    assert outcome.rc == 4
    assert len(warnings) == 1
    assert "No space left on device" in warnings[0]
    assert capture.kept == []


@pytest.mark.parametrize("together", [True, False])
def test_the_tail_is_the_end_of_the_last_attempts_output_in_the_order_written(
    watch: SignalWatch, mocker: MockerFixture, together: bool
) -> None:
    """At most `limit` bytes of the last attempt only, stdout and stderr as written: from
    its one file when the runner's stdout and stderr are one destination, else as the
    runner moved them from the command's two pipes."""
    mocker.patch("adapters.process._same_file", return_value=together)
    capture = Capture(lambda text: None, ordered=True)
    runner = PosixProcessRunner(watch, capture=capture)
    runner.run(["sh", "-c", "echo first"], 0, 10)
    runner.run([WRITES_IN_TURN, "0123456789", "ab", "cd"], 0, 10)
    assert capture.tail(limit=6) == b"89abcd"
    assert capture.tail(limit=100) == b"0123456789abcd"
    runner.run(["sh", "-c", "head -c 200 /dev/zero | tr '\\0' x; printf ab >&2"], 0, 10)
    notice = b"[runner: the first 148 bytes of 202 were cut]\n"
    assert capture.tail(limit=100) == notice + b"x" * 52 + b"ab"
    assert capture.codes == [0, 0, 0]
    assert all((err is None) == together for _, err in capture.kept)
    capture.close()


def test_what_is_seen_is_bounded(watch: SignalWatch) -> None:
    """The output kept in the order read stays within twice RECENT, the newest kept, while
    the count of bytes moved goes on."""
    capture = Capture(lambda text: None, ordered=True)
    assert capture.open() is not None
    for _ in range(5):
        capture.seen(b"x" * RECENT)
    capture.seen(b"end")
    assert len(capture.recent[-1]) <= 2 * RECENT
    assert capture.moved[-1] == 5 * RECENT + 3
    assert capture.tail(limit=10).endswith(b"xxend")
    capture.close()


def test_an_attempt_that_filled_the_disk_is_replayed_saying_so(
    watch: SignalWatch, mocker: MockerFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """Regression: with TMPDIR full, the command's writes to its kept output failed, and the
    output was replayed cut short without a word. An attempt that ended with no room left
    where its output is kept is announced as maybe cut; the others as before."""
    capture = Capture(lambda text: None)
    runner = PosixProcessRunner(watch, capture=capture)
    runner.run(["sh", "-c", "echo whole; exit 1"], 0, 10)
    mocker.patch(
        "adapters.capture.os.fstatvfs", return_value=SimpleNamespace(f_bavail=0, f_bfree=0)
    )
    runner.run(["sh", "-c", "echo cut; exit 2"], 0, 10)
    capture.replay(print)
    capture.close()
    out, err = capfd.readouterr()
    assert out == "whole\ncut\n"
    where = tempfile.gettempdir()
    assert err == (
        "runner: output of attempt 1 (rc=1):\n"
        f"runner: output of attempt 2 (rc=2; {where} was full: it may be cut short):\n"
    )
