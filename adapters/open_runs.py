"""The open runs a checkpoint keeps (waiting for a retry, or never seen to end), by column.

A runner killed while it waits for a retry leaves its run open, and a checkpoint keeps it
for a week of the log's time (adapters.checkpoint.OPEN_MAX_AGE): a host whose runners
are killed so every minute keeps some 10,000, read and written again by every `stats`.
As one JSON array a run (most of the cost the floats' text both ways), a repeat over
10,000 took 86 ms, and over 100,000 (OPEN_MAX) 872 ms; as columns — the run ids and
their commands as JSON strings, the times as packed doubles, the small numbers as packed
counts — 58 ms and 453 ms (`run -- true`: about 40 ms).

    {"ids": [run id, …], "keys": [each key once, …], "key": COUNTS (an index in keys),
     "first": DOUBLES, "last_end": DOUBLES,
     "small": COUNTS (first attempt, attempts, last rc, open, outcome: five a run)}
"""

from __future__ import annotations

from adapters.packing import log_times, packed, packed_counts, unpacked, unpacked_counts
from domain.outcomes import OUTCOMES
from domain.runs import Run

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

OUTCOME_CODES = (None, *OUTCOMES)
"""A run's last outcome as a small number: its place here."""
SMALL = 5
"""Small numbers a run: its first attempt, attempts, last rc, whether open, its outcome."""


def packed_runs(runs: dict[str, Run]) -> dict[str, object]:
    """The runs by column, as the checkpoint's header holds them."""
    values = list(runs.values())
    keys = list(dict.fromkeys([run.key for run in values]))
    place = {key: at for at, key in enumerate(keys)}
    small = [
        number
        for run in values
        for number in (
            run.first_attempt,
            run.attempts,
            run.last_rc,
            int(run.open),
            OUTCOME_CODES.index(run.last_outcome),
        )
    ]
    return {
        "ids": list(runs),
        "keys": keys,
        "key": packed_counts([place[run.key] for run in values]).decode(),
        "first": packed("d", [run.first for run in values]).decode(),
        "last_end": packed("d", [run.last_end for run in values]).decode(),
        "small": packed_counts(small).decode(),
    }


def unpacked_runs(state: Any) -> dict[str, Run]:
    """The runs `packed_runs` wrote; ValueError, TypeError, KeyError or AttributeError for
    anything it could not have written."""
    ids, keys = state["ids"], state["keys"]
    if type(ids) is not list or type(keys) is not list or not set(map(type, ids + keys)) <= {str}:
        raise TypeError("open runs")
    key = unpacked_counts(state["key"].encode())
    first = unpacked("d", state["first"].encode())
    last_end = unpacked("d", state["last_end"].encode())
    small = unpacked_counts(state["small"].encode())
    count = len(ids)
    if not len(key) == len(first) == len(last_end) == count == len(small) // SMALL:
        raise ValueError("open runs: columns")
    if len(small) % SMALL or len(set(ids)) != count or max(key, default=-1) >= len(keys):
        raise ValueError("open runs: ids or keys")
    if not log_times(first + last_end):
        raise ValueError("open runs: times")
    if min(small[0::SMALL], default=1) < 1 or max(small[3::SMALL], default=0) > 1:
        raise ValueError("open runs: attempts")
    if max(small[4::SMALL], default=0) >= len(OUTCOME_CODES):
        raise ValueError("open runs: outcome")
    runs: dict[str, Run] = {}
    made = Run.__new__
    for at, run_id in enumerate(ids):
        run = runs[run_id] = made(Run)
        run.key, run.first, run.last_end = keys[key[at]], first[at], last_end[at]
        numbers = small[SMALL * at : SMALL * at + SMALL]
        run.first_attempt, run.attempts, run.last_rc = numbers[0], numbers[1], numbers[2]
        run.open, run.last_outcome = numbers[3] == 1, OUTCOME_CODES[numbers[4]]
    return runs


def runs_of(state: Any, by_column: bool) -> dict[str, Run]:
    """The open runs of a checkpoint's header: by column (since version 14: see
    `unpacked_runs`; an empty object too), else an array each (Run.state)."""
    if by_column and state != {}:
        return unpacked_runs(state)
    return writable({run_id: Run.from_state(value) for run_id, value in state.items()})


def writable(runs: dict[str, Run]) -> dict[str, Run]:
    """`runs`, read from arrays, if `packed_runs` can write them again; else ValueError."""
    for run in runs.values():
        if not (run.first_attempt >= 1 and 0 <= run.attempts < 1 << 32):
            raise ValueError("open runs")
        if not (0 <= run.last_rc < 1 << 32 and abs(run.first) + abs(run.last_end) < 1e15):
            raise ValueError("open runs")
    return runs
