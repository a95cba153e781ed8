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
        marker, period = name, ""
        if policy.every:  # under the lock: the period the decision is made in
            marker, start = period_marker(name, policy.every, markers.now())
            period = f" for the period from {start}"
        match decide_apply(markers.exists(marker), dry_run):
            case Skip():
                (console.answer if dry_run else console.say)(f"already applied{period}")
                return ExitStatus.OK
            case DryRun():
                console.answer(f"would apply {name}{period}: would run {shell_words(cmd)}")
                return ExitStatus.OK
            case Run():
                rc = attempts.run(cmd, policy, name, token, lock, since)
                return _mark(name, (marker, period), rc, cmd, attempts, lock, markers, console)
    finally:
        if not dry_run:
            lock.release()


def period_marker(name: str, every: float, now: float) -> tuple[str, str]:
    """The marker of `name` for the period of `every` seconds (whole) that holds `now` (epoch
    seconds; periods aligned to the Unix epoch, in UTC), and the period's start, as
    `2026-12-04T00:00:00Z`. A NAME never holds `@`: no plain marker is one of these."""
    from datetime import datetime, timezone  # noqa: PLC0415 - only apply --every

    began = datetime.fromtimestamp(now // every * every, timezone.utc)
    start = began.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{name}@{start}", start


def _mark(
    name: str,
    marker: tuple[str, str],
    rc: int,
    cmd: list[str],
    attempts: Attempts,
    lock: Lock,
    markers: MarkerStore,
    console: Console,
) -> int:
    """Mark `name` applied after a run that ended with `rc` 0: as the marker named, and said
    with the period (`marker`: both)."""
    if rc != 0:
        if rc in (ExitStatus.NOT_EXECUTABLE, ExitStatus.NOT_FOUND):
            return rc
        console.warn(f"apply {name} failed (rc={rc}); not marked as applied")
        return ExitStatus.FAILED
    reason = lock.lost()
    if reason is not None:
        raise LockLost(reason, "not marked as applied")
    markers.write(marker[0], when=attempts.clock.wall(), run_id=attempts.run_id, cmd=cmd)
    console.info(f"applied {name}{marker[1]}")
    return ExitStatus.OK
