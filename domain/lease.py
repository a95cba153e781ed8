"""Keeping a lease: when to renew it, how to ride out an unreachable server, when it is lost.

The holder renews every lease/3. It counts the lease from the moment it *sent*
the last renewal the server confirmed (on its monotonic clock): if no renewal is
confirmed within `lease` of that, the lock is lost and the command must stop. The
server keeps the lease for lease + kill-after + a margin past each renewal, so no
other holder can take it while the old command may still run. An unreachable
server is tried again, sooner and sooner apart, until that deadline: a restart or
failover shorter than the lease is not a lost lock.
"""

from __future__ import annotations

from domain.errors import StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

    from domain.ports import LeaseStore

FIRST_RETRY = 0.1
"""Seconds before the first new try after a renewal that found no server."""


def renewal_pause(lease: float, failures: int) -> float:
    """Seconds until the next renewal: lease/3, or after `failures` failed tries in a row,
    0.1 s doubling up to lease/6 (so several tries fit before the lease runs out)."""
    if failures == 0:
        return lease / 3
    return min(FIRST_RETRY * 2.0 ** min(failures - 1, 30), lease / 6)


def keep(
    store: LeaseStore,
    lease: float,
    now: Callable[[], float],
    wait: Callable[[float], bool],
) -> str | None:
    """Renew `store`'s lease until `wait` says to stop; return why it was lost, or None.

    `now()` is a monotonic clock in seconds; `wait(seconds)` waits that long and
    returns True when the holder let go of the lock (stop renewing).
    """
    confirmed = now()
    failures = 0
    why = ""
    while True:
        due = (
            confirmed + renewal_pause(lease, 0)
            if failures == 0
            else now() + renewal_pause(lease, failures)
        )
        deadline = confirmed + lease
        if wait(max(0.0, min(due, deadline) - now())):
            return None
        sent = now()
        if sent >= deadline:
            return f"no renewal confirmed within the {lease:.3g}s lease (--lease){why}"
        try:
            held = store.renew(deadline - sent)
        except StateError as error:
            failures += 1
            why = f": {error}"
            continue
        if not held:
            return "the lease was no longer this run's (it expired or was taken)"
        confirmed, failures, why = sent, 0, ""
