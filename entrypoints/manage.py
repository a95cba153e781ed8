"""The subcommands that manage rather than run: stats, applied, forget, locks and setup
(loaded only for them, off run's path)."""

from __future__ import annotations

import gc

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.signals import SignalWatch
    from entrypoints.console import StreamConsole
    from entrypoints.invocation import Invocation
    from entrypoints.wiring import Wiring


def manage(
    invocation: Invocation, watch: SignalWatch, console: StreamConsole, wiring: Wiring
) -> int:
    """stats, applied, forget, locks and setup."""
    home = invocation.home or ""
    if invocation.action == "stats":
        # The cyclic collector is off from stats' first import to the process's end (main()
        # puts it back for a caller in the same process): stats makes no cycles worth
        # finding (a read makes millions of tuples and none; a checkpoint and an export are
        # bounded), so each collection would only walk its modules, history and checkpoint
        # again. Turned back on, it would first walk all that is left as young.
        gc.disable()
        return _stats(invocation, home, console, watch)
    if invocation.action in ("locks", "setup"):
        from entrypoints import fleet

        if invocation.action == "locks":
            return fleet.locks(invocation, home, watch, console)
        return fleet.setup(invocation, watch, console)

    backend = wiring.backend(invocation, home, watch)
    assert backend is not None
    assert backend.markers is not None
    try:
        if invocation.action == "applied":
            from entrypoints.applied import applied

            return applied(backend.markers.entries(), invocation.json, console)

        from domain.manage import forget

        return forget(
            invocation.name,
            dry_run=invocation.dry_run,
            lock_wait=invocation.policy.lock_wait,
            lock=backend.lock,
            markers=backend.markers,
            console=console,
            every=invocation.policy.every,
        )
    finally:
        backend.close()


def _stats(invocation: Invocation, home: str, console: StreamConsole, watch: SignalWatch) -> int:
    from entrypoints.stats import stats

    return stats(invocation, home, console, watch)
