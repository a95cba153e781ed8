"""A lock held in PostgreSQL as a lease: a row with an owner and an expiry by the server's clock.

Waiting holds no connection: a waiter claims with one short transaction, closes
its connection, and tries again after a capped, jittered pause. The holder renews
its lease every lease/3 from a thread of its own (`keeper.py`); the server keeps
each renewal for lease + kill-after + MARGIN, the holder gives up after `lease`
without a confirmed renewal, so the old command has ended before anyone else can
claim the lock. A clean exit deletes the row at once.
"""

from __future__ import annotations

import os
import time

from adapters.postgres import sql
from domain.errors import Interrupted, LockBusy, StateError
from domain.words import holder_line, visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

    from adapters.postgres.keeper import LeaseKeeper
    from adapters.postgres.session import Session
    from adapters.postgres.tables import Tables
    from adapters.watcher import Watcher

MARGIN = 5.0
"""Seconds the server keeps a lease beyond the holder's own deadline and its kill grace."""

RELEASE_LIMIT = 1.0
"""Seconds the release may take, tries again included (a locked table, a server gone): past
it the row is left to the watcher, or to expire, so that a SIGTERM still ends the runner
within 2 s."""

ELSEWHERE_WAIT = 25.0
"""Seconds the watcher keeps trying to delete a dead runner's lease row (its server session
may hold the row until the server notices the runner is gone)."""

FIRST_PAUSE = 0.05
PAUSE_CAP = 1.0
CHECKS_PER_SECOND = 15.0
"""A waiter's pause between claims: FIRST_PAUSE doubling to PAUSE_CAP, or, when more
waiters wait on the lock, waiters / CHECKS_PER_SECOND, each drawn uniformly from the
upper half of it. A lone waiter notices a release within a second; however many wait,
the lock sees about 20 claims a second in all, and one of them within tens of
milliseconds of a release."""


class PgLock:
    """A lock named `lock` in `namespace`, with `slots` holders at most.

    `what` says what the holder runs, for the message a busy lock gives. `keeper`
    starts the thread that renews a lease once it is held.
    """

    def __init__(
        self,
        tables: Tables,
        namespace: str,
        lock: str,
        *,
        slots: int = 1,
        what: str,
        lease: float,
        kill_after: float,
        keeper: Callable[[PgLock], LeaseKeeper],
        random: Callable[[], float],
        hold: float = 0.0,
    ) -> None:
        self.tables = tables
        self.session = tables.session
        self.namespace = namespace
        self.lock = lock
        self.slots = slots
        self.what = what
        self.lease = lease
        self.server_lease = lease + kill_after + MARGIN
        self.owner = os.urandom(12).hex()
        self.make_keeper = keeper
        self.hold = hold
        """Seconds the lock stays taken after it was taken, by the server's clock (--hold)."""
        self.random = random
        self.keeper: LeaseKeeper | None = None
        self.until = 0.0
        """The monotonic time the lease holds for the command to (the last confirmation's)."""
        self.watcher: Watcher | None = None
        self.on_held: Callable[[], None] | None = None
        """Called once the lock is held (the runner starts its watcher)."""

    def acquire(self, wait: float = 0.0) -> int:
        """Claim a slot, trying again for up to `wait` seconds; return the fencing token.

        A waiter holds no connection between claims, and says that it waits, so that
        every waiter can pace itself by how many there are.
        """
        start = time.monotonic()
        reachable = start + max(wait, self.session.connect_timeout)
        backoff = FIRST_PAUSE
        while True:
            sent = time.monotonic()
            row, waiters = self._claim(reachable, note=wait > 0)
            if row is not None:
                break
            if time.monotonic() - start >= wait:
                raise LockBusy(self._holders())
            self.session.close()
            pause = max(backoff, waiters / CHECKS_PER_SECOND)
            self._sleep(min(start + wait - time.monotonic(), pause * (0.5 + self.random() / 2)))
            backoff = min(backoff * 2, PAUSE_CAP)
        self.until = sent + self.lease
        if wait > 0:
            self._stop_waiting(reachable)
        self.keeper = self.make_keeper(self)
        if self.on_held is not None:
            self.on_held()
        return int(row[1] or 0)

    def _claim(self, until: float, *, note: bool) -> tuple[tuple[str | None, ...] | None, int]:
        """One claim (with slots, again at once while a free slot went to another
        claimant): the slot and token taken, or None; and how many wait, when `note`."""
        schema = self.tables.schema
        claim: tuple[str, tuple[object, ...]] = (
            sql.claim(schema),
            (
                self.namespace,
                self.lock,
                self.slots,
                self.owner,
                self.what,
                os.uname().nodename,
                self.server_lease,
                os.getpid(),
            ),
        )
        statements: list[tuple[str, tuple[object, ...]]] = [claim]
        if note:
            statements.append((sql.wait_note(schema), (self.namespace, self.lock, self.owner)))
        for _ in range(self.slots):
            results = self.tables.run(statements, until=until)
            if results[0]:
                return results[0][0], 0
            if self.slots == 1:
                break
        waiters = int(results[1][0][0] or 1) if note else 1
        return None, waiters

    def _stop_waiting(self, until: float) -> None:
        try:
            self.tables.call(
                sql.stop_waiting(self.tables.schema),
                (self.namespace, self.lock, self.owner),
                until=until,
            )
        except StateError:
            pass  # a waiter's note ages out by itself

    def _sleep(self, seconds: float) -> None:
        from adapters.signals import ending

        watch = self.session.watch
        assert watch is not None
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            signum = ending(watch.wait(left))
            if signum is not None:
                raise Interrupted(signum)

    def _holders(self) -> str | None:
        try:
            rows = self.tables.call(
                sql.holders(self.tables.schema),
                (self.namespace, self.lock, self.slots),
                create=False,
            )
        except StateError:
            return None
        return "; ".join(_holder(*row) for row in rows) or None

    def _release(self, session: Session, until: float | None) -> None:
        """Delete the lease row, or with --hold keep it taken (unowned) until the hold ends."""
        key: tuple[object, ...] = (self.namespace, self.lock, self.owner)
        statements: list[tuple[str, tuple[object, ...]]] = [(sql.release(self.tables.schema), key)]
        if self.hold > 0:
            statements.insert(0, (sql.hold(self.tables.schema), (*key, self.hold)))
        session.run(statements, until=until, limit=RELEASE_LIMIT)

    def renew(self, session: Session, within: float) -> bool:
        """Extend the lease (from the keeper's own session); False once it is not ours."""
        sent = time.monotonic()
        rows = session.query(
            sql.renew(self.tables.schema),
            (self.namespace, self.lock, self.owner, self.server_lease),
            limit=within,
        )
        if rows:
            self.until = sent + self.lease
            if self.watcher is not None:
                self.watcher.lease_until(self.until)
        return bool(rows)

    def watch_with(self, watcher: Watcher) -> None:
        """Tell `watcher` of every confirmed renewal from now on (and of the last one)."""
        self.watcher = watcher
        watcher.lease_until(self.until)

    def release_elsewhere(self) -> None:
        """Delete the lease row from another process (the watcher), on a connection of its own."""
        from adapters.postgres.session import Session

        own = Session(self.session.url, None, connect_timeout=self.session.connect_timeout, limit=5)
        try:  # tried again for a while: the dead runner's own session may still hold the row
            self._release(own, time.monotonic() + ELSEWHERE_WAIT)
        finally:
            own.close()

    def fds(self) -> tuple[int, ...]:
        """A lease is nothing a command can inherit."""
        return ()

    def release(self) -> None:
        """Stop renewing and delete the lease, so the next holder need not wait for it to expire."""
        keeper, self.keeper = self.keeper, None
        if keeper is None:
            return
        keeper.stop()
        if keeper.lost is not None:  # not this run's any more: nothing for the watcher either
            if self.watcher is not None:
                self.watcher.released()
            return
        try:
            self._release(self.session, time.monotonic() + RELEASE_LIMIT)
        except StateError:
            return  # it expires on the server by itself, or the watcher deletes it
        if self.watcher is not None:
            self.watcher.released()

    def lost(self) -> str | None:
        """Why the lease is no longer held, or None: the keeper's word, or, when the runner
        was stopped past the last confirmation's lease, that."""
        if self.keeper is None:
            return None
        if self.keeper.lost is None and time.monotonic() >= self.until:
            return f"no renewal confirmed within the {self.lease:.3g}s lease (--lease)"
        return self.keeper.lost

    def alert_fd(self) -> int | None:
        """A descriptor that turns readable when the lease has been lost."""
        return None if self.keeper is None else self.keeper.alert_fd()

    def next_due(self) -> float | None:
        """The keeper renews on its own: nothing is due from the waiting loop."""
        return None

    def poll(self) -> str | None:
        return self.lost()


def _holder(what: object, host: object, pid: object, age: object, expires: object) -> str:
    """One holder, for LockBusy: a run, or the --hold a run left behind it."""
    if str(pid) == "0":
        from adapters.hold import moment

        return f"{visible(str(what))} on {visible(str(host))} ended; the lock is held until " \
            f"{moment(float(str(expires)))} (--hold)"  # fmt: skip
    return holder_line(str(what), str(host), int(str(pid or 0)), float(str(age or 0)))
