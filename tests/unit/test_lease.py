"""The lease keeper's decisions, on a fake store and a fake clock: no server needed."""

from __future__ import annotations

import itertools

import pytest

from domain.errors import StateError
from domain.lease import keep, renewal_pause
from tests.fakes import FakeClock, FakeLeaseStore, waiting


def test_a_healthy_lease_is_renewed_every_third_of_it_with_one_call_each() -> None:
    """Regression: the check answered each reply with the next query (16,000 a second)."""
    clock = FakeClock(0.0)
    store = FakeLeaseStore(clock)
    assert keep(store, 30.0, clock.monotonic, waiting(clock, 100.0)) is None
    times = [round(at, 2) for at, _ in store.asked]
    assert times == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]


def test_a_lease_taken_by_another_holder_is_lost_at_the_first_renewal() -> None:
    """The server says the row is no longer ours: lost at once, no further renewal."""
    clock = FakeClock(0.0)
    store = FakeLeaseStore(clock, [True, False, True])
    reason = keep(store, 3.0, clock.monotonic, waiting(clock, 100.0))
    assert reason == "the lease was no longer this run's (it expired or was taken)"
    assert len(store.asked) == 2


def test_an_outage_shorter_than_the_lease_is_ridden_out() -> None:
    """A server restart: renewals fail for a while, then one is confirmed; nothing is lost."""
    clock = FakeClock(0.0)
    down = StateError("cannot connect: the database system is starting up")
    store = FakeLeaseStore(clock, [down] * 5 + [True])
    assert keep(store, 30.0, clock.monotonic, waiting(clock, 60.0)) is None
    failed_at = [at for at, _ in store.asked[:6]]
    assert failed_at[0] == 10.0
    assert failed_at[5] < 10.0 + 30.0
    pauses = [round(b - a - 0.01, 3) for a, b in itertools.pairwise(failed_at)]
    assert pauses == [0.1, 0.2, 0.4, 0.8, 1.6]


def test_an_outage_longer_than_the_lease_is_a_lost_lock_at_the_deadline() -> None:
    """No renewal confirmed within the lease: lost, with the last failure's reason."""
    clock = FakeClock(0.0)
    store = FakeLeaseStore(clock, [StateError("connection refused")] * 1000)
    reason = keep(store, 3.0, clock.monotonic, waiting(clock, 100.0))
    assert reason == "no renewal confirmed within the 3s lease (--lease): connection refused"
    assert clock.now == pytest.approx(3.0)
    assert all(at + within <= 3.0 + 1e-9 for at, within in store.asked)


def test_a_renewal_is_never_given_longer_than_the_lease_has_left() -> None:
    """Each renewal is bounded by the lease's deadline: a hung server is a lost lock in time."""
    clock = FakeClock(0.0)
    store = FakeLeaseStore(clock, [StateError("no answer")] * 1000, takes=5.0)
    keep(store, 9.0, clock.monotonic, waiting(clock, 100.0))
    assert store.asked[0] == (3.0, 6.0)
    assert clock.now == pytest.approx(9.0)


def test_stopping_ends_the_keeper_without_a_renewal() -> None:
    """The holder let go before the first renewal was due: None, nothing asked."""
    clock = FakeClock(0.0)
    store = FakeLeaseStore(clock)
    assert keep(store, 30.0, clock.monotonic, waiting(clock, 5.0)) is None
    assert store.asked == []


@pytest.mark.parametrize(
    ("failures", "pause"), [(0, 10.0), (1, 0.1), (2, 0.2), (5, 1.6), (6, 3.2), (7, 5.0), (99, 5.0)]
)
def test_renewal_pauses(failures: int, pause: float) -> None:
    """lease/3 when healthy; after failures 0.1 s doubling, capped at lease/6."""
    assert renewal_pause(30.0, failures) == pytest.approx(pause)
