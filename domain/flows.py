"""The two use cases, run and apply, driving the ports through the pure decisions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.apply import DryRun, Skip, decide_apply
from domain.attempts import AttemptRecord, Finish, Retry, Stop, next_step
from domain.errors import ExitStatus, Interrupted

if TYPE_CHECKING:
    from domain.policy import Policy
    from domain.ports import AttemptSink, Clock, Console, Lock, MarkerStore, ProcessRunner


def _seconds(value: float) -> str:
    return f"{value:.3g}s" if value < 100 else f"{value:.0f}s"


class Attempts:
    """Runs a command until it succeeds, fails for good, or the runner is signalled."""

    def __init__(
        self,
        processes: ProcessRunner,
        clock: Clock,
        sink: AttemptSink,
        console: Console,
        run_id: str,
    ) -> None:
        self.processes = processes
        self.clock = clock
        self.sink = sink
        self.console = console
        self.run_id = run_id

    def run(self, cmd: list[str], policy: Policy, name: str | None = None) -> int:
        """Return the last attempt's rc; raise Interrupted when a signal ends the run."""
        attempt = 0
        while True:
            attempt += 1
            started, begun = self.clock.wall(), self.clock.monotonic()
            outcome = self.processes.run(cmd, policy.timeout, policy.kill_after)
            duration_ms = max(0, round((self.clock.monotonic() - begun) * 1000))
            self.sink.record(
                AttemptRecord(started, cmd, attempt, outcome.rc, duration_ms, self.run_id, name)
            )
            step = next_step(outcome, attempt, policy)
            self._report(outcome.rc, outcome.timed_out, outcome.error, attempt, policy, step)
            if isinstance(step, Stop):
                raise Interrupted(step.signum)
            if isinstance(step, Finish):
                return step.rc
            signum = self.clock.sleep(step.delay)
            if signum is not None:
                raise Interrupted(signum)

    def _report(
        self,
        rc: int,
        timed_out: bool,
        error: str | None,
        attempt: int,
        policy: Policy,
        step: Retry | Finish | Stop,
    ) -> None:
        if error is not None:
            self.console.warn(error)
        if timed_out:
            self.console.warn(
                f"timeout: command ran past {_seconds(policy.timeout)} and was killed"
            )
        if isinstance(step, Retry):
            self.console.info(
                f"attempt {attempt}/{policy.max_attempts} failed (rc={rc}); "
                f"retrying in {_seconds(step.delay)}"
            )
        elif isinstance(step, Finish) and rc != 0 and policy.retries and error is None:
            self.console.info(
                f"attempt {attempt}/{policy.max_attempts} failed (rc={rc}); giving up"
            )


def apply(
    name: str,
    cmd: list[str],
    policy: Policy,
    *,
    dry_run: bool,
    attempts: Attempts,
    lock: Lock,
    markers: MarkerStore,
    console: Console,
) -> int:
    """Apply `name` once: under the lock, skip if marked, else run and mark on success."""
    if dry_run:
        return _dry_run(name, cmd, markers, console)
    lock.acquire()
    try:
        if isinstance(decide_apply(markers.exists(name), dry_run=False), Skip):
            console.say("already applied")
            return ExitStatus.OK
        rc = attempts.run(cmd, policy, name)
        if rc != 0:
            if rc in (ExitStatus.NOT_EXECUTABLE, ExitStatus.NOT_FOUND):
                return rc
            console.warn(f"apply {name} failed (rc={rc}); not marked as applied")
            return ExitStatus.FAILED
        markers.write(name, when=attempts.clock.wall(), run_id=attempts.run_id, cmd=cmd)
        console.info(f"applied {name}")
        return ExitStatus.OK
    finally:
        lock.release()


def _dry_run(name: str, cmd: list[str], markers: MarkerStore, console: Console) -> int:
    decision = decide_apply(markers.exists(name), dry_run=True)
    if isinstance(decision, Skip):
        console.say("already applied", always=True)
    elif isinstance(decision, DryRun):
        console.say(f"would apply {name}: would run {_quote(cmd)}", always=True)
    return ExitStatus.OK


def _quote(cmd: list[str]) -> str:
    """The command as a shell user would type it (for messages only; never executed)."""
    safe = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")
    return " ".join(
        arg if arg and safe.issuperset(arg) else "'" + arg.replace("'", "'\"'\"'") + "'"
        for arg in cmd
    )
