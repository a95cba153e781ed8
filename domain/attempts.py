"""The attempt state machine: from one attempt's outcome to the next step."""

from __future__ import annotations

from domain.errors import ExitStatus
from domain.policy import wait_after
from domain.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    from domain.policy import Policy

    FinishWhy: TypeAlias = Literal["done", "not retried", "attempts", "deadline"]

NEVER_RETRIED = frozenset({ExitStatus.NOT_EXECUTABLE, ExitStatus.NOT_FOUND})
"""A command that cannot be found or executed fails the same way every time."""


class Outcome(Value):
    """How one attempt ended.

    `rc` is the shell's number: the exit code, 124 for a timeout, 128+N when the
    command died of signal N. `signal` is set when the runner itself received a
    signal during the attempt (and passed it on); `died_of` is the signal the
    command died of, if it did; `lost` says why the lock was lost when that
    stopped the command. `timed_out` is True for the runner's timeout, "idle" for
    --idle-timeout.
    """

    __slots__ = ("died_of", "error", "lost", "rc", "signal", "timed_out")

    def __init__(
        self,
        rc: int,
        *,
        timed_out: bool | str = False,
        signal: int | None = None,
        error: str | None = None,
        lost: str | None = None,
        died_of: int | None = None,
    ) -> None:
        self.rc = rc
        self.timed_out = timed_out
        self.signal = signal
        self.error = error
        self.lost = lost
        self.died_of = died_of

    @property
    def ended_by(self) -> int | None:
        """The signal that ended the attempt: the one the command died of, else the one the
        runner received and passed on; None when neither."""
        return self.died_of if self.died_of is not None else self.signal


class Retry(Value):
    """Wait `delay` seconds, then start the next attempt."""

    __slots__ = ("delay",)

    def __init__(self, delay: float) -> None:
        self.delay = delay


class Finish(Value):
    """No further attempt: the invocation ends with `rc`.

    `why` says what ended it: "done" (success, or no retries asked for),
    "not retried" (126/127, or a code outside --retry-on), "attempts" (the last
    attempt failed) or "deadline" (the next wait would end past the deadline).
    """

    __slots__ = ("rc", "why")

    def __init__(self, rc: int, why: FinishWhy = "done") -> None:
        self.rc = rc
        self.why = why


class Stop(Value):
    """The runner was signalled: end at once with 128 + `signum`."""

    __slots__ = ("signum",)

    def __init__(self, signum: int) -> None:
        self.signum = signum


class Abandon(Value):
    """The lock was lost: no further attempt, no marker; the runner's own error."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


Step = Retry | Finish | Stop | Abandon


def next_step(
    outcome: Outcome, attempt: int, policy: Policy, elapsed: float = 0.0, fraction: float = 1.0
) -> Step:
    """Decide what follows attempt number `attempt` (from 1), `elapsed` seconds into the run.

    `fraction` is a uniform random number in [0, 1), used only for jitter.
    """
    rc = outcome.rc
    if outcome.signal is not None:
        return Stop(outcome.signal)
    if outcome.lost is not None:
        return Abandon(outcome.lost)
    if rc == 0 or policy.retries == 0:
        return Finish(rc)
    if rc in NEVER_RETRIED or (policy.retry_on is not None and rc not in policy.retry_on):
        return Finish(rc, "not retried")
    if attempt >= policy.max_attempts:
        return Finish(rc, "attempts")
    delay = wait_after(policy, attempt, fraction)
    if policy.deadline > 0 and elapsed + delay >= policy.deadline:
        return Finish(rc, "deadline")
    return Retry(delay)


class AttemptRecord(Value):
    """One line of the attempt log. `started` is seconds since the epoch.

    `delay_ms` is the wait that followed this attempt; None on the last one.
    `token` is the fencing token of the lock the attempt ran under, if any.
    `timed_out` says whether the runner's own timeout (or deadline) ended it, "idle"
    when --idle-timeout did;
    `signal` is the number of the signal that ended it, if one did. `ping_failed`
    says that a --ping of this run failed by the time the line was written. Two lines
    end a run without an attempt: `busy` (a busy lock refused the run: `rc` is what the
    runner exits with) and not `attempted` (a signal came during the wait after attempt
    `attempt`: `duration_ms` is how long it waited).
    """

    __slots__ = (
        "attempt",
        "attempted",
        "busy",
        "cmd",
        "delay_ms",
        "duration_ms",
        "name",
        "ping_failed",
        "rc",
        "run_id",
        "signal",
        "started",
        "timed_out",
        "token",
    )

    def __init__(
        self,
        started: float,
        cmd: list[str],
        attempt: int,
        rc: int,
        duration_ms: int,
        run_id: str,
        name: str | None = None,
        delay_ms: int | None = None,
        token: int | None = None,
        timed_out: bool | str = False,
        signal: int | None = None,
    ) -> None:
        self.started = started
        self.cmd = cmd
        self.attempt = attempt
        self.rc = rc
        self.duration_ms = duration_ms
        self.run_id = run_id
        self.name = name
        self.delay_ms = delay_ms
        self.token = token
        self.timed_out = timed_out
        self.signal = signal
        self.ping_failed = False
        self.busy = False
        self.attempted = True
