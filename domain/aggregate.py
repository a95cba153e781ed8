"""What `stats` says of one command or name (an Aggregate), and one run as read so far."""

from __future__ import annotations

from collections import Counter
from itertools import compress, count, repeat
from operator import add, not_, truediv

from domain.histogram import Histogram

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

RECENT = 20
"""How many of the latest runs each aggregate remembers, for the history strip."""
OUTCOMES = ("success", "failure", "timeout", "signal")
"""How a run or an attempt ended."""


def outcome_of(rc: int) -> str:
    """How a run ended, read from its rc alone (lines written before `timed_out` and `signal`
    were logged): success, timeout (124), signal (129 to 192) or failure."""
    if rc == 0:
        return "success"
    if rc == 124:
        return "timeout"
    return "signal" if 128 < rc <= 192 else "failure"


BY_RC = [outcome_of(rc) for rc in range(256)]
"""`outcome_of` every rc a log line may hold."""


class Aggregate:
    """What `stats` says of one command or name. Times are epoch seconds, durations
    milliseconds; `last_*` describe the run that started last. `busy` counts runs refused
    by a busy lock, which are not among `runs`; `ping_failures`, runs whose --ping failed."""

    __slots__ = (
        "attempt_durations", "attempt_outcomes", "attempts", "attempts_max", "busy", "codes",
        "durations", "last_duration", "last_failure", "last_failure_rc", "last_rc", "last_run",
        "last_success", "outcomes", "ping_failures", "recent", "retried", "runs",
    )  # fmt: skip

    def __init__(self) -> None:
        self.runs = self.attempts = self.attempts_max = self.retried = self.busy = 0
        self.ping_failures = 0
        self.outcomes = dict.fromkeys(OUTCOMES, 0)
        self.attempt_outcomes = dict.fromkeys(OUTCOMES, 0)
        self.codes: dict[int, int] = {}
        self.durations = Histogram()
        self.attempt_durations = Histogram()
        self.last_run: float | None = None
        self.last_rc: int | None = None
        self.last_duration: float | None = None
        self.last_success: float | None = None
        self.last_failure: float | None = None
        self.last_failure_rc: int | None = None
        self.recent: list[tuple[float, str]] = []

    @property
    def failures(self) -> int:
        """Runs that did not succeed: failures, timeouts and signals."""
        return self.runs - self.outcomes["success"]

    def run(self, rc: int, outcome: str, attempts: int, first: float, end: float) -> None:
        """Count one run that ended: its last rc and outcome, attempts, start and end."""
        self.runs += 1
        self.outcomes[outcome] += 1
        codes = self.codes
        codes[rc] = codes[rc] + 1 if rc in codes else 1
        self.attempts += attempts
        if attempts > 1:
            self.retried += 1
            self.attempts_max = max(self.attempts_max, attempts)
        elif not self.attempts_max:
            self.attempts_max = 1
        ms = round((end - first) * 1000) if end > first else 0
        self.durations.pending.append(ms)
        last = self.last_run
        if last is None or first >= last:
            self.last_run, self.last_rc, self.last_duration = first, rc, ms / 1000
        if outcome == "success":
            if self.last_success is None or end > self.last_success:
                self.last_success = end
        elif self.last_failure is None or end >= self.last_failure:
            self.last_failure, self.last_failure_rc = end, rc
        recent = self.recent
        recent.append((first, outcome))
        if len(recent) >= 2 * RECENT:  # cut once in RECENT runs, not at every one
            self.recent = sorted(recent)[-RECENT:]

    def singles(self, rows: list[Any]) -> None:
        """Count runs of one attempt together, as `run` counts each: `rows` holds the start,
        milliseconds and rc of each in turn, its outcome its rc's. Counted in C-level passes
        (a Counter, slices, max), which make a first read of a million lines a second
        shorter than a call for each run."""
        firsts, mss, rcs = rows[0::3], rows[1::3], rows[2::3]
        self.runs += len(firsts)
        self.attempts += len(firsts)
        self.attempts_max = self.attempts_max or 1
        for rc, n in Counter(rcs).items():
            self.codes[rc] = self.codes.get(rc, 0) + n
            self.outcomes[BY_RC[rc]] += n
            self.attempt_outcomes[BY_RC[rc]] += n
        self.durations.pending += mss
        self.attempt_durations.pending += mss
        first, at = max(zip(firsts, count()))
        if self.last_run is None or first >= self.last_run:
            self.last_run, self.last_rc, self.last_duration = first, rcs[at], mss[at] / 1000
        ends = list(map(add, firsts, map(truediv, mss, repeat(1000))))
        ok = max(compress(ends, map(not_, rcs)), default=None)
        if ok is not None and (self.last_success is None or ok > self.last_success):
            self.last_success = ok
        failed = max(compress(zip(ends, count(), rcs), rcs), default=None)  # the last if tied
        if failed is not None and (self.last_failure is None or failed[0] >= self.last_failure):
            self.last_failure, _, self.last_failure_rc = failed
        latest = sorted(zip(firsts, map(BY_RC.__getitem__, rcs), strict=True))[-RECENT:]
        self.recent = sorted(self.recent + latest)[-RECENT:]

    def merge(self, other: Aggregate) -> None:
        for name in ("runs", "attempts", "retried", "busy", "ping_failures"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.attempts_max = max(self.attempts_max, other.attempts_max)
        for outcome in OUTCOMES:
            self.outcomes[outcome] += other.outcomes[outcome]
            self.attempt_outcomes[outcome] += other.attempt_outcomes[outcome]
        for rc, n in other.codes.items():
            self.codes[rc] = self.codes.get(rc, 0) + n
        self.durations.merge(other.durations)
        self.attempt_durations.merge(other.attempt_durations)
        if other.last_run is not None and (
            self.last_run is None or other.last_run >= self.last_run
        ):
            self.last_run, self.last_rc = other.last_run, other.last_rc
            self.last_duration = other.last_duration
        if other.last_success is not None and (self.last_success or -1e300) < other.last_success:
            self.last_success = other.last_success
        if other.last_failure is not None and (self.last_failure or -1e300) < other.last_failure:
            self.last_failure, self.last_failure_rc = other.last_failure, other.last_failure_rc
        self.recent = sorted(self.recent + other.recent)[-RECENT:]

    def history(self) -> list[str]:
        """The outcomes of the latest runs, oldest first."""
        return [outcome for _, outcome in sorted(self.recent)[-RECENT:]]


class Run:
    """The attempts of one run seen so far: `whole` once its first attempt and one not
    followed by a wait are seen."""

    __slots__ = ("attempts", "first", "first_attempt", "key", "last_end", "outcome", "rc", "waits")

    def __init__(self, key: str, first: float, first_attempt: int) -> None:
        self.key, self.first, self.first_attempt = key, first, first_attempt
        self.attempts = 0
        self.last_end = first
        self.rc, self.outcome, self.waits = 0, "success", True

    def add(
        self, first: float, attempt: int, end: float, rc: int, outcome: str, waits: bool
    ) -> None:
        if first < self.first:
            self.first, self.first_attempt = first, attempt
        if end >= self.last_end:
            self.last_end, self.rc, self.outcome, self.waits = end, rc, outcome, waits

    def absorb(self, other: Run) -> None:
        """Join the part of the same run read elsewhere (a later piece of the log)."""
        self.add(
            other.first, other.first_attempt, other.last_end, other.rc, other.outcome, other.waits
        )
        self.attempts += other.attempts

    @property
    def whole(self) -> bool:
        return self.first_attempt == 1 and not self.waits
