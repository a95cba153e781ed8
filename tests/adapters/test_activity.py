"""Writes seen where the output goes (--idle-timeout in place), with real files and pipes."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from adapters import activity
from adapters.activity import watch


def _later_than(moment: float) -> None:
    """Wait until the monotonic clock has moved past `moment` (a look then tells)."""
    while time.monotonic() <= moment:
        time.sleep(0.001)


@pytest.mark.parametrize("kind", ["file", "pipe"])
def test_each_write_is_seen_at_the_next_look_and_the_watch_set_again(
    tmp_path: Path, kind: str
) -> None:
    if kind == "file":
        read, write = -1, os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o600)
    else:
        read, write = os.pipe()
    seen = watch((write, write), 10)
    assert seen is not None
    begun = seen.seen_at()
    _later_than(begun)
    assert seen.seen_at() == begun  # nothing written: nothing seen
    for _ in range(3):
        os.write(write, b"x")
        before = seen.last
        _later_than(before)
        assert seen.seen_at() > before
    seen.close()
    for fd in (read, write):
        if fd >= 0:
            os.close(fd)


def test_a_destination_that_shows_no_writes_is_left_to_the_relay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """/dev/null (which every process writes to), a socket, and a pipe on a kernel that
    does not report writes on pipes: None, so the output is relayed."""
    null = os.open(os.devnull, os.O_WRONLY)
    ours, theirs = socket.socketpair()
    read, write = os.pipe()
    try:
        assert watch((null, null), 10) is None
        assert watch((theirs.fileno(), write), 10) is None
        monkeypatch.setattr(activity, "_pipes_report", False)
        assert watch((write, write), 10) is None
    finally:
        for fd in (null, read, write):
            os.close(fd)
        ours.close()
        theirs.close()


def test_looks_are_a_tenth_of_the_idle_timeout_a_second_at_most(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for idle, every in ((3600, 1.0), (2, 0.2), (0.1, 0.05)):
            seen = watch((fd, fd), idle)
            assert seen is not None
            assert seen.look_every == pytest.approx(every)
            seen.close()
    finally:
        os.close(fd)


def test_a_watch_that_cannot_be_set_again_never_reads_as_silence(tmp_path: Path) -> None:
    """Were the kernel to refuse the watch after a write (no watch left for this user),
    the writes could no longer be seen: the attempt is taken as writing, never ended."""
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o600)
    seen = watch((fd, fd), 10)
    assert seen is not None
    seen.add = lambda *args: -1
    os.write(fd, b"x")
    for _ in range(3):
        before = seen.last
        _later_than(before)
        assert seen.seen_at() > before
    seen.close()
    os.close(fd)
