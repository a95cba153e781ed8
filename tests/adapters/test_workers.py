"""Forked stats workers: a worker that fails or dies is said as such, never as a crash."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest

from adapters.signals import SignalWatch
from adapters.workers import fork_map
from domain.errors import StateError


def test_every_task_runs_once_and_the_results_come_back_in_order(watch: SignalWatch) -> None:
    assert fork_map(lambda n, check: n * n, 7, 3, watch) == [n * n for n in range(7)]


def _failing(how: str) -> Callable[[int, Callable[[], None]], int]:
    def task(number: int, check: Callable[[], None]) -> int:
        if number == 2:
            if how == "raises":
                raise ValueError("a bug in a worker")
            os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer, say
        return number

    return task


@pytest.mark.parametrize("how", ["raises", "killed"])
def test_a_worker_that_fails_or_dies_is_a_state_error(watch: SignalWatch, how: str) -> None:
    """Regression: its empty result was unpickled, and stats said `internal error: EOFError`."""
    with pytest.raises(StateError, match="a stats worker failed"):
        fork_map(_failing(how), 5, 2, watch)
