"""The capture of --output-on-failure, with real processes and files."""

from __future__ import annotations

import errno
import os

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
    assert capture.codes == [0, 0]
    capture.close()
