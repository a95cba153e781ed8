"""The backoff calculation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.policy import MAX_DELAY, Policy, backoff_delay


@pytest.mark.parametrize(
    ("backoff", "attempt", "expected"),
    [(0.2, 1, 0.2), (0.2, 2, 0.4), (0.2, 3, 0.8), (1.0, 4, 8.0), (0.0, 9, 0.0)],
)
def test_delay_doubles_with_each_attempt(backoff: float, attempt: int, expected: float) -> None:
    """The lab's formula: backoff * 2**(attempt-1)."""
    assert backoff_delay(backoff, attempt) == pytest.approx(expected)


def test_huge_attempt_numbers_do_not_overflow() -> None:
    """2**5000 overflows a float; the delay is capped instead."""
    assert backoff_delay(1.0, 5000) == MAX_DELAY
    assert backoff_delay(0.0, 5000) == 0.0


@given(st.floats(0, 1e6), st.integers(1, 10_000))
def test_delay_is_finite_nonnegative_and_capped(backoff: float, attempt: int) -> None:
    """Any backoff and attempt give a finite wait between 0 and the cap."""
    delay = backoff_delay(backoff, attempt)
    assert math.isfinite(delay)
    assert 0 <= delay <= MAX_DELAY


@given(st.floats(1e-3, 1e3), st.integers(1, 60))
def test_each_delay_is_at_least_the_one_before(backoff: float, attempt: int) -> None:
    """Waits never shrink: retrying at the same interval keeps an overload going."""
    assert backoff_delay(backoff, attempt + 1) >= backoff_delay(backoff, attempt)


def test_max_attempts_counts_the_first() -> None:
    """--retries N means N + 1 attempts in all."""
    assert Policy(retries=3).max_attempts == 4
