"""Apply once: the decision (run, skip, or only say), and the use case."""

from __future__ import annotations

from domain.errors import ExitStatus, LockLost
from domain.words import shell_words

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.flows import Attempts
    from domain.policy import Policy
    from domain.ports import Console, Lock, MarkerStore


class Skip:
    """The marker exists: nothing to do."""

    __slots__ = ()


class DryRun:
    """Only say what would be done."""

    __slots__ = ()


class Run:
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
) -> int:
    """Apply `name` once: under the lock, skip if marked, else run and mark on success."""
    if dry_run:
        return _dry_run(name, cmd, markers, console)
    token = lock.acquire(policy.lock_wait)
    try:
        if isinstance(decide_apply(markers.exists(name), dry_run=False), Skip):
            console.say("already applied")
            return ExitStatus.OK
        rc = attempts.run(cmd, policy, name, token, lock)
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
    finally:
        lock.release()


def _dry_run(name: str, cmd: list[str], markers: MarkerStore, console: Console) -> int:
    decision = decide_apply(markers.exists(name), dry_run=True)
    if isinstance(decision, Skip):
        console.answer("already applied")
    elif isinstance(decision, DryRun):
        console.answer(f"would apply {name}: would run {shell_words(cmd)}")
    return ExitStatus.OK
