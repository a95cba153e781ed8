"""Apply once: the decision (run, skip, or only say), and the use case."""

from __future__ import annotations

from domain.errors import ExitStatus, LockLost
from domain.flows import lock_wait
from domain.value import Value
from domain.words import shell_words

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.flows import Attempts
    from domain.policy import Policy
    from domain.ports import Console, Lock, MarkerStore


class Skip(Value):
    """The marker exists: nothing to do."""

    __slots__ = ()


class DryRun(Value):
    """Only say what would be done."""

    __slots__ = ()


class Run(Value):
    """Run the command, then write the marker if it succeeded."""

    __slots__ = ()


ApplyDecision = Skip | DryRun | Run


def decide_apply(applied: bool, dry_run: bool) -> ApplyDecision:
    """Choose what apply does, given whether the marker exists."""
    if applied:
        return Skip()
    if dry_run:
        return DryRun()
    return Run()


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
    since: float | None = None,
) -> int:
    """Apply `name` once: under the lock, skip if marked, else run and mark on success.

    A dry run takes no lock: it says what the decision would be, and does nothing.
    `since` (monotonic) is when the run began (before --splay): the --deadline's start.
    """
    since = attempts.clock.monotonic() if since is None else since
    waited = attempts.clock.monotonic() - since
    token = None if dry_run else lock.acquire(lock_wait(policy, waited))
    try:
        match decide_apply(markers.exists(name), dry_run):
            case Skip():
                (console.answer if dry_run else console.say)("already applied")
                return ExitStatus.OK
            case DryRun():
                console.answer(f"would apply {name}: would run {shell_words(cmd)}")
                return ExitStatus.OK
            case Run():
                return _run_and_mark(
                    name, cmd, policy, token, since, attempts, lock, markers, console
                )
    finally:
        if not dry_run:
            lock.release()


def _run_and_mark(
    name: str,
    cmd: list[str],
    policy: Policy,
    token: int | None,
    since: float,
    attempts: Attempts,
    lock: Lock,
    markers: MarkerStore,
    console: Console,
) -> int:
    rc = attempts.run(cmd, policy, name, token, lock, since)
    if rc != 0:
        if rc in (ExitStatus.NOT_EXECUTABLE, ExitStatus.NOT_FOUND):
            return rc
        console.warn(f"apply {name} failed (rc={rc}); not marked as applied")
        return ExitStatus.FAILED
    reason = lock.lost()
    if reason is not None:
        raise LockLost(reason, "not marked as applied")
    markers.write(name, when=attempts.clock.wall(), run_id=attempts.run_id, cmd=cmd)
    console.info(f"applied {name}")
    return ExitStatus.OK
