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
    """The Summary `plain` describes; ValueError when it does not hold together.

    Each value is checked by kind while the Summary is built, and the counts, times and
    exit codes of every aggregate are then checked together, in a few C-level passes."""
    try:
        made, seen = Summary(), _Seen()
        made.newest = _time(plain["newest"])
        made.lines, made.malformed = _count(plain["lines"]), _count(plain["malformed"])
        made.by_key = {_text(key): seen.aggregate(value) for key, value in _dict(plain["keys"])}
        seen.check()
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


class _Seen:
    """The counts, times and exit codes of the aggregates read, to be checked together."""

    def __init__(self) -> None:
        self.counts: list[Any] = []
        self.times: list[Any] = []
        self.rcs: list[Any] = []

    def aggregate(self, plain: Any) -> Aggregate:
        made = Aggregate()
        counts = self.counts
        for name in _COUNTS:
            value = plain[name]
            setattr(made, name, value)
            counts.append(value)
        for name in _TIMES:
            value = plain[name]
            if value is not None:
                self.times.append(value)
                value = float(value)
            setattr(made, name, value)
        for name in _CODES:
            value = plain[name]
            if value is not None:
                self.rcs.append(value)
            setattr(made, name, value)
        made.outcomes = dict(zip(OUTCOMES, self.sized(plain["outcomes"], 4), strict=True))
        made.attempt_outcomes = dict(
            zip(OUTCOMES, self.sized(plain["attempt_outcomes"], 4), strict=True)
        )
        codes = _list(plain["codes"])
        rcs, ns = [rc for rc, _ in codes], [n for _, n in codes]
        self.rcs += rcs
        counts += ns
        made.codes = dict(zip(rcs, ns, strict=True))
        recent = _list(plain["recent"])
        ats = [at / 1000 for at, _ in recent]  # kept in whole milliseconds
        places = [o for _, o in recent]
        self.times += ats
        if places and (set(map(type, places)) != {int} or min(places) < 0):
            raise ValueError("an outcome")  # a place among OUTCOMES, not a negative index
        made.recent = list(zip(ats, map(OUTCOMES.__getitem__, places), strict=True))
        made.durations = self.histogram(plain["durations"])
        made.attempt_durations = self.histogram(plain["attempt_durations"])
        if not made.runs == sum(made.outcomes.values()) == sum(ns) == made.durations.count:
            raise ValueError("a count of runs that its outcomes, codes or durations belie")
        if sum(made.attempt_outcomes.values()) != made.attempt_durations.count:
            raise ValueError("a count of attempts that their durations belie")
        return made

    def histogram(self, plain: Any) -> Histogram:
        le, low, fine, count, total, most = plain
        made = Histogram()
        self.counts += (low, count, total, most)
        if type(low) is not int or low + len(_list(fine)) > FINE_MAX:
            raise ValueError("a fine bucket past any duration")
        self.counts += fine
        if not count == sum(le) == sum(fine) or not most <= total <= most * count:
            raise ValueError("a histogram whose buckets belie its count")
        le = self.sized(le, len(LE_MS) + 1)
        made.restore(list(le), (low, list(fine)), count, total, most)  # copies: it counts on
        return made

    def sized(self, value: object, size: int) -> list[int]:
        if type(value) is not list or len(value) != size:
            raise ValueError("a list of counts")
        self.counts += value
        return value

    def check(self) -> None:
        """ValueError unless every count is a whole number of 0 or more, every time a
        number within ±10**15, every exit code
        one of 0 to 255."""
        _counts(self.counts, None)
        times = self.times
        if not set(map(type, times)) <= {int, float} or not all(-1e15 < at < 1e15 for at in times):
            raise ValueError("a time")  # NaN too
        rcs = self.rcs
        if rcs and (set(map(type, rcs)) != {int} or min(rcs) < 0 or max(rcs) > 255):
            raise ValueError("an exit code")


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


def _list(value: object) -> list[Any]:
    if type(value) is not list:
        raise ValueError("a list")
    return value


def _dict(value: object) -> list[tuple[Any, Any]]:
    if type(value) is not dict:
        raise ValueError("a table")
    return list(value.items())
