"""How a run or an attempt ended, as `stats` counts it."""

from __future__ import annotations

OUTCOMES = ("success", "failure", "timeout", "signal")


def outcome_of(rc: int) -> str:
    """success, timeout (124), signal (128+N) or failure: how a run ended, read from its rc
    alone (lines written before `timed_out` and `signal` were logged)."""
    known = BY_RC.get(rc)
    return known if known is not None else _read(rc)


def _read(rc: int) -> str:
    if rc == 0:
        return "success"
    if rc == 124:
        return "timeout"
    if 128 < rc <= 192:
        return "signal"
    return "failure"


BY_RC = {rc: _read(rc) for rc in range(256)}
"""`outcome_of` every rc a log line may hold, to look up (once a line when reading a log)."""
