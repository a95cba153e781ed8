"""Managing applied state: forget a name so that its next apply runs again."""

from __future__ import annotations

from domain.errors import ExitStatus

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.ports import Console, Lock, MarkerStore


def forget(
    name: str,
    *,
    dry_run: bool,
    lock_wait: float,
    lock: Lock,
    markers: MarkerStore,
    console: Console,
    every: float = 0.0,
) -> int:
    """Remove `name`'s marker under apply's lock (LockBusy while an apply runs): with `every`,
    the marker of the current period (apply --every); without it, the plain marker, or, when
    `name` has none but was applied with --every, the marker of its newest period."""
    marker = name
    if every:
        from domain.apply import period_marker  # noqa: PLC0415 - only forget --every

        marker, start = period_marker(name, every, markers.now())
        name = f"{name} for the period from {start}"
    elif not markers.exists(name):
        periods = [
            str(e["name"]) for e in markers.entries() if str(e["name"]).startswith(f"{name}@")
        ]
        if periods:
            marker = max(periods)  # ISO starts: the newest sorts last
            name = f"{name} for the period from {marker[len(name) + 1 :]}"
    if dry_run:
        if markers.exists(marker):
            console.answer(f"would forget {name}: its next apply would run again")
        else:
            console.answer(f"{name} is not applied; nothing to forget")
        return ExitStatus.OK
    lock.acquire(lock_wait)
    try:
        if markers.remove(marker):
            console.say(f"forgot {name}: its next apply runs again")
        else:
            console.say(f"{name} is not applied; nothing to forget")
        return ExitStatus.OK
    finally:
        lock.release()
