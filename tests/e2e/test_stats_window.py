"""--since windows: the runs of the current log that started within them, read whole."""

from __future__ import annotations

import json
import os
import random
import time

import pytest

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
def test_a_window_after_many_reads_counts_what_a_whole_read_counts(lab: Lab, seed: int) -> None:
    """After forty `stats` that each read a piece of the log, every window counts what
    reading the whole log through stdin counts: runs that began before it, whose later
    attempts are in it, and attempts written hours after they began included."""
    now = time.time()
    with lab.log.open("ab") as log:
        for piece in history(seed, now):
            log.write(b"".join(piece))
            log.flush()
            assert lab.run("stats", "-q").returncode == 0
    whole = lab.log.read_bytes()
    for hours in (0.5, 1, 2, 3, 5, 8, 13, 19, 30):
        window = f"{int(hours * 3600)}s"
        read_whole = groups(lab, "--since", window, "--log", "-", stdin=whole)
        assert groups(lab, "--since", window) == read_whole


def test_a_window_after_a_rotation_is_read_from_the_new_log(lab: Lab) -> None:
    """A window is the current log file's. A run whose first attempt is in the rotated log
    began before the window (which is the new log's) and is not in it."""
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
    window = groups(lab, "--since", "1h")
    assert [(group["cmd"], group["runs"], group["retried_runs"]) for group in window] == [
        ("job", 1, 0)
    ]
    assert groups(lab)[0]["runs"] == 7  # the history: both logs, the retried run whole
