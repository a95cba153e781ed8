"""A Summary as the checkpoint keeps it: plain JSON values, checked whole when read back.

Whatever a checkpoint holds, reading it either gives a Summary that counts on as one
read from the log would, or raises ValueError: nothing that could fail later, when it
is counted into or shown.
"""

from __future__ import annotations

from domain.aggregate import OUTCOMES, Aggregate, Run
from domain.histogram import FINE_MAX, LE_MS, Histogram
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_COUNTS = ("runs", "attempts", "attempts_max", "retried", "busy", "ping_failures")
_TIMES = ("last_run", "last_duration", "last_success", "last_failure")
_CODES = ("last_rc", "last_failure_rc")


def dump(summary: Summary) -> dict[str, object]:
    summary.settle()
    return {
        "newest": summary.newest,
        "lines": summary.lines,
        "malformed": summary.malformed,
        "keys": {key: _aggregate(found) for key, found in summary.by_key.items()},
        "open": {
            run_id: [run.key, run.first, run.first_attempt, run.attempts, run.last_end,
                     run.rc, run.outcome, run.waits]
            for run_id, run in summary.open.items()
        },
    }  # fmt: skip


def _aggregate(found: Aggregate) -> dict[str, object]:
    plain: dict[str, object] = {name: getattr(found, name) for name in _COUNTS + _TIMES + _CODES}
    plain["outcomes"] = [found.outcomes[o] for o in OUTCOMES]
    plain["attempt_outcomes"] = [found.attempt_outcomes[o] for o in OUTCOMES]
    plain["codes"] = sorted(found.codes.items())
    recent = sorted(found.recent)[-20:]  # times in whole milliseconds: fewer digits to write
    plain["recent"] = [[round(at * 1000), OUTCOMES.index(o)] for at, o in recent]
    plain["durations"] = _histogram(found.durations)
    plain["attempt_durations"] = _histogram(found.attempt_durations)
    return plain


def _histogram(found: Histogram) -> list[object]:
    low, fine = found.fine
    return [found.le, low, fine, found.count, found.total, found.maximum]


def load(plain: Any) -> Summary:
    """The Summary `plain` describes; ValueError when it does not hold together."""
    try:
        made = Summary()
        made.newest = _time(plain["newest"])
        made.lines, made.malformed = _count(plain["lines"]), _count(plain["malformed"])
        made.by_key = {_text(key): _read_aggregate(value) for key, value in _dict(plain["keys"])}
        for run_id, value in _dict(plain["open"]):
            key, first, first_attempt, attempts, last_end, rc, outcome, waits = value
            run = made.open[_text(run_id)] = Run(_text(key), _time(first), _count(first_attempt))
            run.attempts, run.last_end, run.rc = _count(attempts), _time(last_end), _rc(rc)
            run.outcome, run.waits = _outcome(outcome), _flag(waits)
            if not run.first_attempt:
                raise ValueError("an attempt numbered 0")
        return made
    except KeyError:
        raise ValueError("a missing field") from None
    except (TypeError, IndexError, AttributeError, OverflowError):
        raise ValueError("a value of the wrong kind") from None


def _read_aggregate(plain: Any) -> Aggregate:
    made = Aggregate()
    counts = _counts([plain[name] for name in _COUNTS], len(_COUNTS))
    for name, value in zip(_COUNTS, counts, strict=True):
        setattr(made, name, value)
    for name in _TIMES:
        setattr(made, name, None if plain[name] is None else _time(plain[name]))
    for name in _CODES:
        setattr(made, name, None if plain[name] is None else _rc(plain[name]))
    made.outcomes = dict(zip(OUTCOMES, _counts(plain["outcomes"], 4), strict=True))
    made.attempt_outcomes = dict(zip(OUTCOMES, _counts(plain["attempt_outcomes"], 4), strict=True))
    codes = plain["codes"]
    made.codes = dict(
        zip(map(_rc, (rc for rc, _ in codes)), _counts([n for _, n in codes], None), strict=True)
    )
    recent = plain["recent"]
    made.recent = [(_time(at / 1000), OUTCOMES[o]) for at, o in recent]
    _counts([o for _, o in recent], None)  # a place among OUTCOMES, not a negative index
    made.durations = _read_histogram(plain["durations"])
    made.attempt_durations = _read_histogram(plain["attempt_durations"])
    return made


def _read_histogram(plain: Any) -> Histogram:
    le, low, fine, count, total, most = plain
    made = Histogram()
    counts = _counts(fine, None)
    if _count(low) + len(counts) > FINE_MAX:
        raise ValueError("a fine bucket past any duration")
    made.restore(
        _counts(le, len(LE_MS) + 1), (low, counts), _count(count), _count(total), _count(most)
    )
    return made


def _counts(value: object, size: int | None) -> list[int]:
    """A list of counts (of `size` of them), checked in C-level passes."""
    if type(value) is not list or (size is not None and len(value) != size):
        raise ValueError("a list of counts")
    if value and (set(map(type, value)) != {int} or min(value) < 0):
        raise ValueError("a count")
    return value


def _count(value: object) -> int:
    if type(value) is not int or value < 0:
        raise ValueError("a count")
    return value


def _rc(value: object) -> int:
    if type(value) is not int or not 0 <= value <= 255:
        raise ValueError("an exit code")
    return value


def _time(value: object) -> float:
    if type(value) not in (int, float) or not -1e15 < value < 1e15:  # type: ignore[operator]
        raise ValueError("a time")  # NaN too
    return float(value)  # type: ignore[arg-type]


def _text(value: object) -> str:
    if type(value) is not str:
        raise ValueError("a text")
    return value


def _flag(value: object) -> bool:
    if type(value) is not bool:
        raise ValueError("a flag")
    return value


def _outcome(value: object) -> str:
    if value not in OUTCOMES:
        raise ValueError("an outcome")
    return str(value)


def _dict(value: object) -> list[tuple[Any, Any]]:
    if type(value) is not dict:
        raise ValueError("a table")
    return list(value.items())
