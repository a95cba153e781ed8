"""The attempt state machine."""

from __future__ import annotations

import pytest

from domain.attempts import Abandon, Finish, Outcome, Retry, Stop, next_step
from domain.policy import Policy


def test_success_finishes() -> None:
    """rc 0 ends the run at once."""
    step = next_step(Outcome(0), 1, Policy(retries=3))
    assert isinstance(step, Finish)
    assert step.rc == 0


@pytest.mark.parametrize("rc", [1, 2, 124, 137, 255])
def test_failure_with_retries_left_retries_with_backoff(rc: int) -> None:
    """Any failure but 126/127 is retried, timeouts (124) included."""
    step = next_step(Outcome(rc, timed_out=rc == 124), 2, Policy(retries=3, backoff=0.5))
    assert isinstance(step, Retry)
    assert step.delay == 1.0


@pytest.mark.parametrize("rc", [126, 127])
def test_cannot_execute_and_not_found_are_never_retried(rc: int) -> None:
    """A missing or non-executable command fails the same way every time."""
    step = next_step(Outcome(rc), 1, Policy(retries=5))
    assert isinstance(step, Finish)
    assert step.rc == rc


def test_last_attempt_finishes_with_its_rc() -> None:
    """After N retries the last attempt's code is the result."""
    step = next_step(Outcome(7), 4, Policy(retries=3))
    assert isinstance(step, Finish)
    assert step.rc == 7


@pytest.mark.parametrize("rc", [0, 1, 143])
def test_a_signal_to_the_runner_stops_whatever_the_rc(rc: int) -> None:
    """Even a command that exits 0 after a forwarded SIGTERM does not count as done."""
    step = next_step(Outcome(rc, signal=15), 1, Policy(retries=3))
    assert isinstance(step, Stop)
    assert step.signum == 15


def test_decisions_are_values_that_compare_and_show_themselves() -> None:
    """One assertion per decision, and a failure prints values, not addresses."""
    policy = Policy(retries=3, backoff=0.2)
    assert next_step(Outcome(1), 1, policy) == Retry(delay=0.2)
    assert next_step(Outcome(0), 1, policy) == Finish(0)
    assert next_step(Outcome(1), 4, policy) == Finish(1, "attempts")
    assert next_step(Outcome(143, signal=15), 1, policy) == Stop(15)
    assert next_step(Outcome(1, lost="gone"), 1, policy) == Abandon("gone")
    assert Retry(0.2) != Retry(0.4)
    assert Retry(0.2) != Finish(0)
    assert repr(Finish(1, "attempts")) == "Finish(rc=1, why='attempts')"
    assert Policy(retries=1) == Policy(retries=1)
    assert "retries=1" in repr(Policy(retries=1))
