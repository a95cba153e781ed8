"""The capture of --output-on-failure, with real processes and files."""

from __future__ import annotations

import errno
import os
import tempfile
from types import SimpleNamespace

import pytest
from pytest_mock import MockerFixture

from adapters.capture import Capture
from adapters.process import PosixProcessRunner
from adapters.signals import SignalWatch


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


def test_the_tail_is_the_end_of_the_last_attempts_output(watch: SignalWatch) -> None:
    """At most `limit` bytes: the end of stdout, then of stderr, of the last attempt only."""
    capture = Capture(lambda text: None)
    runner = PosixProcessRunner(watch, capture=capture)
    runner.run(["sh", "-c", "echo first"], 0, 10)
    runner.run(["sh", "-c", "printf 0123456789; printf ab >&2"], 0, 10)
    assert capture.tail(limit=6) == b"6789ab"
    assert capture.tail(limit=100) == b"0123456789ab"
    runner.run(["sh", "-c", "head -c 200 /dev/zero | tr '\\0' x; printf ab >&2"], 0, 10)
    notice = b"[runner: the first 148 bytes of 202 were cut]\n"
    assert capture.tail(limit=100) == notice + b"x" * 52 + b"ab"
    assert capture.codes == [0, 0, 0]
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
