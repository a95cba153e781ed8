"""Retry policy: --retry-on, --max-backoff, --jitter, --deadline, the command's environment."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.attempts import Finish, Outcome, Retry, next_step
from domain.errors import Interrupted, LockBusy
from domain.flows import lock_wait, run
from domain.policy import MAX_DELAY, Policy, attempt_timeout, wait_after
from tests.fakes import FakeLock
from tests.unit.test_flows import CMD, World


@pytest.mark.parametrize(
    ("max_backoff", "expected"),
    [(0, [1, 2, 4, 8, 16, 32]), (5, [1, 2, 4, 5, 5, 5]), (0.5, [0.5] * 6)],
)
def test_waits_are_capped_by_max_backoff(max_backoff: float, expected: list[float]) -> None:
    """Exponential up to the cap, then flat at the cap."""
    policy = Policy(backoff=1, max_backoff=max_backoff)
    assert [wait_after(policy, attempt, 1.0) for attempt in range(1, 7)] == expected


def test_the_cap_holds_for_attempt_numbers_that_overflow_floats() -> None:
    """2**2000 is an OverflowError in float maths; the wait is still the cap."""
    assert wait_after(Policy(backoff=1, max_backoff=30), 2001, 1.0) == 30
    assert wait_after(Policy(backoff=1), 2001, 1.0) == MAX_DELAY


@given(st.integers(1, 3000), st.floats(0, 1, exclude_max=True))
def test_full_jitter_stays_within_zero_and_the_capped_wait(attempt: int, fraction: float) -> None:
    """Each jittered wait is uniform in [0, min(cap, backoff * 2**(attempt-1))]."""
    policy = Policy(backoff=0.5, max_backoff=60, jitter=True)
    capped = wait_after(Policy(backoff=0.5, max_backoff=60), attempt, 1.0)
    assert 0 <= wait_after(policy, attempt, fraction) <= capped


def test_jitter_from_a_seeded_source_is_deterministic() -> None:
    """The random source is injected: the same seed gives the same waits."""
    policy = Policy(backoff=1, max_backoff=10, jitter=True)
    first = [wait_after(policy, n, f) for n, f in enumerate(_fractions(1), 1)]
    second = [wait_after(policy, n, f) for n, f in enumerate(_fractions(1), 1)]
    assert first == second
    assert len(set(first)) == len(first)


def _fractions(seed: int) -> list[float]:
    source = random.Random(seed)
    return [source.random() for _ in range(6)]


@pytest.mark.parametrize(("rc", "retried"), [(1, True), (75, True), (124, True), (2, False)])
def test_retry_on_retries_only_listed_codes(rc: int, retried: bool) -> None:
    """--retry-on 1,75,124: exit 2 (bad arguments) ends the run at once."""
    policy = Policy(retries=3, retry_on=frozenset({1, 75, 124}))
    step = next_step(Outcome(rc), 1, policy)
    assert isinstance(step, Retry) == retried
    if not retried:
        assert isinstance(step, Finish)
        assert (step.rc, step.why) == (rc, "not retried")


@pytest.mark.parametrize(
    ("elapsed", "expected"), [(0.0, Retry), (0.4, Retry), (0.5, Finish), (1.9, Finish)]
)
def test_no_wait_begins_that_would_end_past_the_deadline(elapsed: float, expected: type) -> None:
    """Deadline 2 s, next wait 1.5 s: retried only while elapsed + 1.5 < 2."""
    policy = Policy(retries=5, backoff=1.5, deadline=2)
    step = next_step(Outcome(1), 1, policy, elapsed)
    assert isinstance(step, expected)
    if isinstance(step, Finish):
        assert step.why == "deadline"


@pytest.mark.parametrize(
    ("timeout", "elapsed", "expected"),
    [
        (0, 0, 10),
        (3, 0, 3),
        (0, 7.5, 2.5),
        (5, 7.5, 2.5),
        (5, 2, 5),
        (0, 10, 0.001),
        (0.75, 0, 0.75),
    ],
)
def test_the_deadline_shortens_an_attempts_timeout(
    timeout: float, elapsed: float, expected: float
) -> None:
    """An attempt gets the smaller of its timeout and what remains of a 10 s budget."""
    assert attempt_timeout(Policy(timeout=timeout, deadline=10), elapsed) == pytest.approx(expected)


def test_a_deadline_under_a_second_is_a_deadline() -> None:
    """Sub-second budgets count: the attempt and the wait for a lock are cut to them."""
    assert attempt_timeout(Policy(deadline=0.5), 0.2) == pytest.approx(0.3)
    assert lock_wait(Policy(deadline=0.5, lock_wait=600)) == 0.5


def test_a_run_with_a_deadline_ends_within_it() -> None:
    """Waits of 1, 2, 4 s with 0.5 s attempts: a 5 s budget allows three attempts."""
    world = World(*[Outcome(1)] * 10)
    rc = world.attempts.run(CMD, Policy(retries=9, backoff=1, deadline=5))
    assert rc == 1
    assert world.clock.slept == [1, 2]
    assert [call[1] for call in world.processes.calls] == [5, 3.5, 1.0]
    assert any("--deadline of 5s" in line for line in world.console.warnings)
    assert world.clock.now - 1_700_000_000.0 <= 5


def test_the_command_sees_its_attempt_and_run_id() -> None:
    """RUNNER_ATTEMPT, RUNNER_MAX_ATTEMPTS and RUNNER_RUN_ID reach every attempt."""
    world = World(Outcome(1), Outcome(0))
    world.attempts.run(CMD, Policy(retries=2, backoff=0))
    assert world.processes.envs == [
        {"RUNNER_ATTEMPT": "1", "RUNNER_MAX_ATTEMPTS": "3", "RUNNER_RUN_ID": "run-1"},
        {"RUNNER_ATTEMPT": "2", "RUNNER_MAX_ATTEMPTS": "3", "RUNNER_RUN_ID": "run-1"},
    ]


def test_log_records_carry_the_wait_that_followed() -> None:
    """delay_ms on each attempt that was followed by a wait; absent on the last."""
    world = World(Outcome(1), Outcome(1), Outcome(0))
    world.attempts.run(CMD, Policy(retries=3, backoff=0.25))
    assert [r.delay_ms for r in world.sink.records] == [250, 500, None]


def test_jittered_waits_use_the_injected_source() -> None:
    """With --jitter the flow asks its random source after each attempt."""
    world = World(Outcome(1), Outcome(1), Outcome(0))
    world.attempts.random = iter([0.5, 0.25, 0.9]).__next__
    world.attempts.run(CMD, Policy(retries=3, backoff=2, jitter=True))
    assert world.clock.slept == [1.0, 1.0]


def test_run_waits_for_the_lock_as_long_as_lock_wait_says() -> None:
    """--lock-wait is handed to the lock, which does the waiting."""
    world = World(Outcome(0))
    lock = FakeLock()
    run(CMD, Policy(lock_wait=5), attempts=world.attempts, lock=lock)
    assert lock.waits == [5]


def test_a_signal_while_waiting_for_the_lock_ends_the_run() -> None:
    """SIGTERM during --lock-wait: Interrupted, nothing run."""
    world = World(Outcome(0))
    with pytest.raises(Interrupted):
        run(CMD, Policy(lock_wait=10), attempts=world.attempts, lock=FakeLock(signal=15))
    assert world.processes.calls == []


def test_run_with_a_lock_holds_it_across_every_attempt() -> None:
    """run --lock: acquired before the first attempt, asked again before the next, released
    after the last."""
    world = World(Outcome(1), Outcome(0))
    lock = FakeLock()
    assert run(CMD, Policy(retries=1, backoff=0), attempts=world.attempts, lock=lock) == 0
    assert lock.events == ["acquire", "asked", "release"]
    assert not lock.held


def test_run_with_a_busy_lock_runs_nothing() -> None:
    """Another holder: LockBusy (exit 3), no attempt."""
    world = World(Outcome(0))
    with pytest.raises(LockBusy):
        run(CMD, Policy(), attempts=world.attempts, lock=FakeLock(busy=True))
    assert world.processes.calls == []
