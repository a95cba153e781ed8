"""How long attempts may run, which failures are retried, and how long to wait between them."""

from __future__ import annotations

from domain.value import Value

MAX_DELAY = 365 * 24 * 3600.0
"""No single wait is longer than a year (seconds): huge attempt numbers stay finite."""


class Policy(Value):
    """Limits of one invocation. Durations are seconds; 0 means no limit.

    `retry_on` is the set of exit codes worth another attempt; None means every
    failure but 126 and 127. `lock_wait` is how long to wait for a busy lock; `splay`,
    the longest random wait before the first attempt (and before the lock); `hold`, how
    long run's lock stays taken after it was taken, even when the run ended sooner; `every`,
    apply's period (whole seconds): a marker counts for the period it was applied in.
    """

    __slots__ = (
        "backoff",
        "deadline",
        "every",
        "hold",
        "idle_timeout",
        "jitter",
        "kill_after",
        "lock_wait",
        "max_backoff",
        "retries",
        "retry_on",
        "splay",
        "timeout",
    )

    def __init__(
        self,
        timeout: float = 0.0,
        kill_after: float = 10.0,
        retries: int = 0,
        backoff: float = 1.0,
        *,
        max_backoff: float = 0.0,
        jitter: bool = False,
        retry_on: frozenset[int] | None = None,
        deadline: float = 0.0,
        lock_wait: float = 0.0,
        splay: float = 0.0,
        hold: float = 0.0,
        every: float = 0.0,
        idle_timeout: float = 0.0,
    ) -> None:
        self.timeout = timeout
        self.kill_after = kill_after
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.jitter = jitter
        self.retry_on = retry_on
        self.deadline = deadline
        self.lock_wait = lock_wait
        self.splay = splay
        self.hold = hold
        self.every = every
        self.idle_timeout = idle_timeout

    @property
    def max_attempts(self) -> int:
        return self.retries + 1


def backoff_delay(backoff: float, attempt: int) -> float:
    """Seconds to wait after failed attempt `attempt` (from 1): backoff * 2**(attempt-1)."""
    if backoff <= 0:
        return 0.0
    try:
        return min(backoff * 2.0 ** (attempt - 1), MAX_DELAY)
    except OverflowError:
        return MAX_DELAY


def wait_after(policy: Policy, attempt: int, fraction: float) -> float:
    """The wait after failed attempt `attempt`: exponential, capped, then jittered.

    With `policy.jitter` the wait is "full jitter": `fraction` (uniform in [0, 1),
    from the caller's random source) times the capped exponential wait.
    """
    delay = backoff_delay(policy.backoff, attempt)
    if policy.max_backoff > 0:
        delay = min(delay, policy.max_backoff)
    return delay * fraction if policy.jitter else delay


def attempt_timeout(policy: Policy, elapsed: float) -> float:
    """The time limit of an attempt that starts `elapsed` seconds into the run (0 = none).

    A deadline shortens the attempt to what remains of the budget.
    """
    if policy.deadline <= 0:
        return policy.timeout
    remaining = max(policy.deadline - elapsed, 1e-3)
    return remaining if policy.timeout <= 0 else min(policy.timeout, remaining)
