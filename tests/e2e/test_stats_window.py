"""--since windows read from the checkpoint's marks: exactly what a whole read counts."""

from __future__ import annotations

import json
import os
import random
import time

import pytest

from adapters import saved
from adapters.packing import packed, unpacked
from tests.e2e.conftest import Lab

STEP = 600
"""Seconds: every start time lies half of it off the test's start, and every window is a
multiple of it, so a window's edge stays half of it from every run for five minutes."""


def attempt(
    run_id: str, cmd: str, started: float, number: int, rc: int, waits: bool, took: int = 12
) -> bytes:
    """One attempt line as the runner writes it (a retried attempt says its delay)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(started)) + ".000+00:00"
    delay = ',"delay_ms":1000' if waits else ""
    return (
        f'{{"ts":"{stamp}","cmd":["{cmd}"],"attempt":{number},"rc":{rc},'
        f'"duration_ms":{took}{delay},"run_id":"{run_id}"}}\n'
    ).encode()


def history(seed: int, now: float) -> list[list[bytes]]:
    """Twenty hours of runs as pieces of the log, each written before one `stats`: runs of
    one attempt, retried runs whose attempts fall in different pieces, attempts that took
    hours and so are written long after they started, runs never seen to end."""
    rng = random.Random(seed)
    pieces: list[list[bytes]] = [[] for _ in range(40)]
    for number in range(400):
        piece = rng.randrange(40)
        slot = max(0, min(119, 120 - (40 - piece) * 3 + rng.randrange(-2, 3)))
        started = now - (120 - slot) * STEP + STEP / 2  # the oldest 20 hours ago
        cmd = rng.choice(["backup", "sync", "report"])
        run_id = f"{seed}-{number}"
        kind = rng.random()
        if kind < 0.6:
            pieces[piece].append(attempt(run_id, cmd, started, 1, rng.choice([0, 0, 1]), False))
        elif kind < 0.75:  # started hours before it was written
            took = rng.randrange(1, 6) * STEP * 1000
            pieces[piece].append(attempt(run_id, cmd, started - took / 1000, 1, 0, False, took))
        elif kind < 0.95:  # retried, its attempts in up to three pieces
            tries = rng.randrange(2, 4)
            for tried in range(1, tries + 1):
                at = min(39, piece + (tried - 1) * rng.randrange(0, 3))
                last = tried == tries
                at_time = started + (tried - 1) * STEP
                pieces[at].append(attempt(run_id, cmd, at_time, tried, 0 if last else 1, not last))
        else:  # waits for a retry that never comes
            pieces[piece].append(attempt(run_id, cmd, started, 1, 1, True))
    return pieces


def groups(lab: Lab, *args: str, stdin: bytes = b"") -> list[dict[str, object]]:
    result = lab.run("stats", "--json", *args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["groups"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_window_from_the_marks_counts_what_a_whole_read_counts(lab: Lab, seed: int) -> None:
    """After forty `stats` that each read a piece of the log (and each left a mark), every
    window counts what reading the whole log counts: runs that began before it, whose later
    attempts are in it, and attempts written hours after they began included."""
    now = time.time()
    with lab.log.open("ab") as log:
        for piece in history(seed, now):
            log.write(b"".join(piece))
            log.flush()
            assert lab.run("stats", "-q").returncode == 0
    assert len(marks(lab)) > 2 * 10
    whole = lab.log.read_bytes()
    for hours in (0.5, 1, 2, 3, 5, 8, 13, 19, 30):
        window = f"{int(hours * 3600)}s"
        read_whole = groups(lab, "--since", window, "--log", "-", stdin=whole)
        assert groups(lab, "--since", window) == read_whole


def checkpoint_header(lab: Lab) -> bytes:
    return (lab.home / ".runs.jsonl.stats-cmd.json").read_bytes().split(b"\n")[1]


def marks(lab: Lab) -> list[float]:
    """The marks the checkpoint keeps: time, offset, time, offset, … (domain.marks)."""
    return unpacked("d", json.loads(checkpoint_header(lab))["position"]["marks"].encode())


def test_a_window_is_read_from_the_latest_mark_before_it(lab: Lab) -> None:
    """The lines before the mark are not read again: a line there rewritten to start within
    the window (which no runner does) is not counted, where a whole read counts it."""
    now = time.time()
    old = [attempt(f"old{n}", "job", now - 50 * STEP + n, 1, 0, False) for n in range(20)]
    lab.log.write_bytes(b"".join(old))
    assert lab.run("stats", "-q").returncode == 0
    with lab.log.open("ab") as log:
        log.write(attempt("new", "job", now - STEP / 2, 1, 0, False))
    assert lab.run("stats", "-q").returncode == 0
    forged = attempt("old5", "job", now - STEP / 2 - 1, 1, 0, False)
    assert len(forged) == len(old[5])
    with lab.log.open("r+b") as log:
        log.seek(sum(map(len, old[:5])))
        log.write(forged)
    window = groups(lab, "--since", "1h")
    assert [(group["cmd"], group["runs"]) for group in window] == [("job", 1)]
    whole = groups(lab, "--since", "1h", "--log", "-", stdin=lab.log.read_bytes())
    assert [(group["cmd"], group["runs"]) for group in whole] == [("job", 2)]


def test_a_window_after_a_rotation_is_read_from_the_new_log(lab: Lab) -> None:
    """The marks are of one file: once the log is rotated they start again, and a window is
    the new log's. A run whose first attempt is in the rotated log began before the window
    (which is the new log's) and is not in it: before, its second attempt counted it."""
    now = time.time()
    lab.log.write_bytes(
        b"".join(attempt(f"r{n}", "job", now - 30 * STEP + n, 1, 0, False) for n in range(5))
        + attempt("straddles", "job", now - 7 * STEP, 1, 1, True)
    )
    assert lab.run("stats", "-q").returncode == 0
    os.rename(lab.log, lab.home / "runs.jsonl.1")
    lab.log.write_bytes(
        attempt("straddles", "job", now - STEP / 2, 2, 0, False)
        + attempt("fresh", "job", now - STEP / 2, 1, 0, False)
    )
    assert lab.run("stats", "-q").returncode == 0
    assert json.loads(checkpoint_header(lab))["position"]["ino"] == lab.log.stat().st_ino
    assert marks(lab)[1::2] == [lab.log.stat().st_size]
    window = groups(lab, "--since", "1h")
    assert [(group["cmd"], group["runs"], group["retried_runs"]) for group in window] == [
        ("job", 1, 0)
    ]
    assert groups(lab)[0]["runs"] == 7  # the history: both logs, the retried run whole


def test_a_mark_that_is_not_where_a_line_begins_is_not_read_from(lab: Lab) -> None:
    """A checkpoint is believed once it is the user's own and whole (its CRC), but a mark
    in it that does not follow a newline cannot be one stats left: the window is read from
    the log's start rather than from the middle of a line."""
    now = time.time()
    lab.log.write_bytes(
        b"".join(attempt(f"r{n}", "job", now - STEP / 2 - n, 1, 0, False) for n in range(3))
    )
    assert lab.run("stats", "-q").returncode == 0
    path = lab.home / ".runs.jsonl.stats-cmd.json"
    _, header, *states = path.read_bytes().split(b"\n")
    fields = json.loads(header)
    end = float(fields["position"]["offset"])
    fields["position"]["marks"] = packed("d", [1.0, 5.0, fields["newest"], end]).decode()
    path.write_bytes(b"".join(saved.sealed(fields, states[:-1])))
    window = groups(lab, "--since", "1h")
    assert [(group["cmd"], group["runs"]) for group in window] == [("job", 3)]
