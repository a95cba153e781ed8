"""Running a command: attempts, retries and waits, and the lock that makes it single."""

from __future__ import annotations

from domain.attempts import Abandon, AttemptRecord, Finish, Retry, Stop, next_step
from domain.durations import human
from domain.errors import Interrupted, LockLost
from domain.policy import attempt_timeout

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

    from domain.attempts import Outcome
    from domain.policy import Policy
    from domain.ports import AttemptSink, Clock, Console, Lock, ProcessRunner


class Attempts:
    """Runs a command until it succeeds, fails for good, or the runner is signalled.

    `random` returns a uniform number in [0, 1); it is asked only for jitter.
    """

    def __init__(
        self,
        processes: ProcessRunner,
        clock: Clock,
        sink: AttemptSink,
        console: Console,
        run_id: str,
        random: Callable[[], float] = lambda: 1.0,
    ) -> None:
        self.processes = processes
        self.clock = clock
        self.sink = sink
        self.console = console
        self.run_id = run_id
        self.random = random

    def run(
        self,
        cmd: list[str],
        policy: Policy,
        name: str | None = None,
        token: int | None = None,
        lock: Lock | None = None,
        since: float | None = None,
    ) -> int:
        """Return the last attempt's rc; raise Interrupted when a signal ends the run.

        `token` is the fencing token of `lock`, held, handed to the command as
        RUNNER_FENCING_TOKEN. Raises LockLost when the lock was lost meanwhile:
        while a command ran (it was stopped), or during a wait (no attempt follows).
        `since` (monotonic) is when the run began, the deadline's start: before the
        wait for the lock (see lock_wait); now, by default.
        """
        first = self.clock.monotonic() if since is None else since
        attempt = 0
        while True:
            attempt += 1
            started, begun = self.clock.wall(), self.clock.monotonic()
            limit = attempt_timeout(policy, begun - first)
            env = {
                "RUNNER_ATTEMPT": str(attempt),
                "RUNNER_MAX_ATTEMPTS": str(policy.max_attempts),
                "RUNNER_RUN_ID": self.run_id,
            }
            if token is not None:
                env["RUNNER_FENCING_TOKEN"] = str(token)
            outcome = self.processes.run(cmd, limit, policy.kill_after, env)
            ended = self.clock.monotonic()
            fraction = self.random() if policy.jitter else 1.0
            step = next_step(outcome, attempt, policy, ended - first, fraction)
            delay_ms = round(step.delay * 1000) if isinstance(step, Retry) else None
            duration_ms = max(0, round((ended - begun) * 1000))
            self.sink.record(
                AttemptRecord(
                    started,
                    cmd,
                    attempt,
                    outcome.rc,
                    duration_ms,
                    self.run_id,
                    name,
                    delay_ms,
                    token,
                    outcome.timed_out,
                    None if outcome.timed_out else outcome.ended_by,
                )
            )
            self._report(outcome, attempt, policy, limit, step)
            if isinstance(step, Stop):
                raise Interrupted(step.signum)
            if isinstance(step, Abandon):
                raise LockLost(step.reason, "command stopped")
            if isinstance(step, Finish):
                return step.rc
            waited = self.clock.wall(), self.clock.monotonic()
            signum = self.clock.sleep(step.delay)
            if signum is not None:  # the run's end, logged: no attempt, no retry
                stopped = AttemptRecord(
                    waited[0], cmd, attempt, 128 + signum,
                    max(0, round((self.clock.monotonic() - waited[1]) * 1000)),
                    self.run_id, name, None, token, False, signum,
                )  # fmt: skip
                stopped.attempted = False
                self.sink.record(stopped)
                raise Interrupted(signum)
            lost = None if lock is None else lock.lost()
            if lost is not None:
                raise LockLost(lost, "no further attempt")

    def _report(
        self,
        outcome: Outcome,
        attempt: int,
        policy: Policy,
        limit: float,
        step: Retry | Finish | Stop | Abandon,
    ) -> None:
        if outcome.error is not None:
            self.console.warn(outcome.error)
        if outcome.timed_out == "idle":
            self.console.warn(
                f"timeout: command wrote nothing for {human(policy.idle_timeout)} "
                f"(--idle-timeout) and {_ending(outcome)}"
            )
        elif outcome.timed_out:
            cause = "the --deadline" if limit != policy.timeout else human(limit)
            self.console.warn(f"timeout: command ran past {cause} and {_ending(outcome)}")
        failed = f"attempt {attempt}/{policy.max_attempts} failed (rc={outcome.rc})"
        if isinstance(step, Retry):
            self.console.info(f"{failed}; retrying in {human(step.delay)}")
        elif isinstance(step, Finish):
            if step.why == "attempts":
                self.console.info(f"{failed}; giving up")
            elif step.why == "deadline":
                self.console.warn(
                    f"{failed}; the --deadline of {human(policy.deadline)} leaves no time "
                    f"for another attempt; exit {outcome.rc}"
                )
            elif step.why == "not retried" and outcome.error is None:
                self.console.info(f"{failed}; rc {outcome.rc} is not retried")


def run(
    cmd: list[str],
    policy: Policy,
    *,
    attempts: Attempts,
    lock: Lock | None,
    name: str | None = None,
    since: float | None = None,
) -> int:
    """Run `cmd` with retries (as the job `name`, when given); with a lock, as the single
    instance that holds it. `since` (monotonic) is when the run began (before --splay)."""
    since = attempts.clock.monotonic() if since is None else since
    if lock is None:
        return attempts.run(cmd, policy, name, since=since)
    token = lock.acquire(lock_wait(policy, attempts.clock.monotonic() - since))
    try:
        return attempts.run(cmd, policy, name, token, lock, since)
    finally:
        lock.release()


def splay(
    policy: Policy, clock: Clock, random: Callable[[], float], sink: AttemptSink,
    record: AttemptRecord,
) -> None:  # fmt: skip
    """Wait a random time in [0, --splay) before anything else of the run (as systemd's
    RandomizedDelaySec=), so that a fleet's cron does not start every host at once. A
    signal ends it as it ends a backoff wait: `record` (the run's first attempt, as it
    would have begun) is logged with no attempt made, and Interrupted is raised."""
    began = clock.monotonic()
    signum = clock.sleep(policy.splay * random())
    if signum is not None:
        record.rc, record.signal = 128 + signum, signum
        record.duration_ms = max(0, round((clock.monotonic() - began) * 1000))
        record.attempted = False
        sink.record(record)
        raise Interrupted(signum)


def lock_wait(policy: Policy, elapsed: float = 0.0) -> float:
    """How long to wait for a busy lock: --lock-wait, within what is left of the --deadline
    `elapsed` seconds into the run (a budget that something waits on, such as a Kubernetes
    deadline)."""
    if policy.deadline <= 0:
        return policy.lock_wait
    return max(0.0, min(policy.lock_wait, policy.deadline - elapsed))


SIGKILL = 9
"""The one signal number POSIX fixes for every system (the domain imports no `signal`)."""


def _ending(outcome: Outcome) -> str:
    """How a timed-out command ended, in words: "was killed" only when SIGKILL ended it."""
    if outcome.died_of == SIGKILL:
        return "was killed (SIGKILL)"
    if outcome.died_of is not None:
        return f"was ended by signal {outcome.died_of}"
    return "exited by itself once told to stop"
