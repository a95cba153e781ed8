"""The run and apply use cases, driven through a fake for every port."""

from __future__ import annotations

import pytest

from domain.apply import apply
from domain.attempts import Outcome
from domain.errors import Interrupted, LockBusy, LockLost
from domain.flows import Attempts, run
from domain.policy import Policy
from tests.fakes import (
    FakeClock,
    FakeConsole,
    FakeLock,
    FakeMarkerStore,
    FakeProcessRunner,
    FakeSink,
)

CMD = ["deploy", "--now"]


class World:
    """The fakes wired as the composition root wires the real adapters."""

    def __init__(self, *outcomes: Outcome | Interrupted, applied: set[str] | None = None) -> None:
        self.clock = FakeClock()
        self.processes = FakeProcessRunner(list(outcomes), self.clock)
        self.sink = FakeSink()
        self.console = FakeConsole()
        self.lock = FakeLock()
        self.markers = FakeMarkerStore(applied)
        self.attempts = Attempts(self.processes, self.clock, self.sink, self.console, "run-1")

    def apply(self, name: str = "step", policy: Policy | None = None, dry_run: bool = False) -> int:
        return apply(
            name,
            CMD,
            policy or Policy(),
            dry_run=dry_run,
            attempts=self.attempts,
            lock=self.lock,
            markers=self.markers,
            console=self.console,
        )


def test_run_returns_the_commands_code() -> None:
    """No retries: one attempt, its rc is the result."""
    world = World(Outcome(3))
    assert world.attempts.run(CMD, Policy()) == 3
    assert [r.rc for r in world.sink.records] == [3]


def test_retries_wait_exponentially_then_succeed() -> None:
    """flaky: two failures, waits of backoff and 2*backoff, then success."""
    world = World(Outcome(1), Outcome(1), Outcome(0))
    assert world.attempts.run(CMD, Policy(retries=3, backoff=0.2)) == 0
    assert world.clock.slept == pytest.approx([0.2, 0.4])
    assert [r.attempt for r in world.sink.records] == [1, 2, 3]
    assert world.console.infos == [
        "attempt 1/4 failed (rc=1); retrying in 0.2s",
        "attempt 2/4 failed (rc=1); retrying in 0.4s",
    ]


def test_gives_up_after_the_last_retry() -> None:
    """retries=2 gives three attempts and the last rc."""
    world = World(Outcome(1), Outcome(1), Outcome(5))
    assert world.attempts.run(CMD, Policy(retries=2, backoff=1)) == 5
    assert world.clock.slept == [1, 2]
    assert world.console.infos[-1] == "attempt 3/3 failed (rc=5); giving up"


def test_timeouts_are_retried_and_reported() -> None:
    """A timed-out attempt (124) is a failure like any other, and says timeout."""
    world = World(Outcome(124, timed_out=True, died_of=15), Outcome(0))
    assert world.attempts.run(CMD, Policy(timeout=2, retries=1, backoff=0)) == 0
    assert world.processes.calls[0] == (CMD, 2, 10.0)
    assert "timeout: command ran past 2s and was ended by signal 15" in world.console.warnings


@pytest.mark.parametrize(
    ("died_of", "said"),
    [
        (9, "was killed (SIGKILL)"),
        (15, "was ended by signal 15"),
        (None, "exited by itself once told to stop"),
    ],
)
def test_a_timeout_says_was_killed_only_when_sigkill_ended_it(
    died_of: int | None, said: str
) -> None:
    """Regression: every timeout said "was killed", when SIGTERM ended the command, or when
    it ignored the signal and ended by itself."""
    world = World(Outcome(124, timed_out=True, died_of=died_of))
    assert world.attempts.run(CMD, Policy(timeout=2)) == 124
    assert world.console.warnings == [f"timeout: command ran past 2s and {said}"]


def test_a_timeout_cut_short_by_the_deadline_names_the_deadline() -> None:
    """The attempt's limit was what remained of --deadline, not --timeout: it says so."""
    world = World(Outcome(124, timed_out=True, died_of=9))
    assert world.attempts.run(CMD, Policy(timeout=60, deadline=5)) == 124
    assert "timeout: command ran past the --deadline and was killed (SIGKILL)" in (
        world.console.warnings
    )


def test_not_found_is_not_retried() -> None:
    """127 ends at once, with the reason on stderr."""
    world = World(Outcome(127, error="cannot run 'deploy': No such file or directory"))
    assert world.attempts.run(CMD, Policy(retries=3)) == 127
    assert world.clock.slept == []
    assert world.console.warnings == ["cannot run 'deploy': No such file or directory"]


def test_log_records_carry_start_time_duration_and_run_id() -> None:
    """Each attempt's line: ts is its start; duration from the monotonic clock."""
    world = World(Outcome(1), Outcome(0))
    world.attempts.run(CMD, Policy(retries=1, backoff=2))
    first, second = world.sink.records
    assert second.started - first.started == pytest.approx(0.5 + 2)
    assert (first.duration_ms, first.run_id, first.cmd, first.name) == (500, "run-1", CMD, None)


def test_signal_during_an_attempt_stops_after_logging_it() -> None:
    """The interrupted attempt is logged; no further attempt starts."""
    world = World(Outcome(143, signal=15), Outcome(0))
    with pytest.raises(Interrupted) as info:
        world.attempts.run(CMD, Policy(retries=3))
    assert info.value.exit_code == 143
    assert [r.rc for r in world.sink.records] == [143]
    assert len(world.processes.calls) == 1


def test_signal_during_backoff_stops_at_once() -> None:
    """A signal in the wait ends the run with no further attempt."""
    world = World(Outcome(1), Outcome(0))
    world.clock.interrupt_sleep_with = 2
    with pytest.raises(Interrupted) as info:
        world.attempts.run(CMD, Policy(retries=3))
    assert info.value.exit_code == 130
    assert len(world.processes.calls) == 1


def test_apply_runs_then_marks_under_the_lock() -> None:
    """Success writes the marker, and the lock is released afterwards."""
    world = World(Outcome(0))
    assert world.apply("step") == 0
    assert world.markers.applied["step"]["run_id"] == "run-1"
    assert world.markers.applied["step"]["cmd"] == CMD
    assert world.lock.events == ["acquire", "asked", "release"]
    assert world.sink.records[0].name == "step"


def test_every_attempt_gets_the_fencing_token_in_its_environment_and_log_line() -> None:
    """The token of the acquisition goes to the command (RUNNER_FENCING_TOKEN) and the log."""
    world = World(Outcome(1), Outcome(0))
    world.lock.token = 41
    assert world.apply("step", Policy(retries=1, backoff=0)) == 0
    assert [env["RUNNER_FENCING_TOKEN"] for env in world.processes.envs] == ["42", "42"]
    assert [record.token for record in world.sink.records] == [42, 42]


def test_a_lock_lost_while_the_command_ran_ends_the_run_without_a_marker() -> None:
    """The lock went with its session: no retry, no marker, the runner's own error."""
    world = World(Outcome(143, lost="the server closed the session"), Outcome(0))
    with pytest.raises(LockLost, match="closed the session; command stopped") as info:
        world.apply("step", Policy(retries=3, backoff=0))
    assert info.value.status == 125
    assert len(world.processes.calls) == 1
    assert [record.rc for record in world.sink.records] == [143]
    assert world.markers.applied == {}
    assert world.lock.events == ["acquire", "release"]


def test_a_lock_lost_after_the_command_succeeded_writes_no_marker() -> None:
    """The command ended well but the lock cannot be confirmed: no marker, exit 125."""
    world = World(Outcome(0))
    world.lock.lose_with = "no answer within 30s"
    with pytest.raises(LockLost, match="not marked as applied"):
        world.apply("step")
    assert world.markers.applied == {}
    assert world.lock.events == ["acquire", "asked", "release"]


def test_a_lock_lost_during_a_backoff_starts_no_further_attempt() -> None:
    """Regression: the next attempt ran with a stale token beside the new holder."""
    world = World(Outcome(1), Outcome(0))
    original = world.clock.sleep

    def sleep_and_lose(seconds: float) -> int | None:
        world.lock.lose_with = "the lease was no longer this run's"
        return original(seconds)

    world.clock.sleep = sleep_and_lose  # type: ignore[method-assign]
    with pytest.raises(LockLost, match="no longer this run's; no further attempt"):
        world.apply("step", Policy(retries=3, backoff=1))
    assert len(world.processes.calls) == 1
    assert world.markers.applied == {}
    assert world.lock.events == ["acquire", "asked", "release"]


def test_apply_skips_an_applied_name() -> None:
    """The marker exists: 'already applied', exit 0, nothing run."""
    world = World(applied={"step"})
    assert world.apply("step") == 0
    assert world.console.said == ["already applied"]
    assert world.processes.calls == []
    assert world.lock.events == ["acquire", "release"]


def test_failed_apply_exits_1_without_a_marker() -> None:
    """The marker is written only after success."""
    world = World(Outcome(1), Outcome(2))
    assert world.apply("step", Policy(retries=1, backoff=0)) == 1
    assert world.markers.applied == {}
    assert world.lock.events == ["acquire", "asked", "release"]


@pytest.mark.parametrize("rc", [126, 127])
def test_apply_passes_not_executable_and_not_found_through(rc: int) -> None:
    """A missing apply command is a setup problem, told apart from a failed one."""
    world = World(Outcome(rc, error="cannot run"))
    assert world.apply("step") == rc
    assert world.markers.applied == {}


def test_busy_lock_touches_nothing() -> None:
    """Another run holds the lock: LockBusy, no marker check, no command."""
    world = World(Outcome(0))
    world.lock.busy = True
    with pytest.raises(LockBusy):
        world.apply("step")
    assert world.processes.calls == []
    assert world.markers.applied == {}


@pytest.mark.parametrize(
    "outcomes",
    [
        [Interrupted(15)],
        [Outcome(0, signal=15)],
        [Outcome(143, signal=15)],
    ],
)
def test_interrupted_apply_writes_no_marker(outcomes: list[Outcome | Interrupted]) -> None:
    """A signal before or during the command: no marker, lock released, 128+N."""
    world = World(*outcomes)
    with pytest.raises(Interrupted):
        world.apply("step")
    assert world.markers.applied == {}
    assert world.lock.events == ["acquire", "release"]


def test_dry_run_names_the_command_and_touches_nothing() -> None:
    """--dry-run: no lock, no command, no marker; it says what it would run."""
    world = World()
    assert world.apply("step", dry_run=True) == 0
    assert world.console.said == ["would apply step: would run deploy --now"]
    assert world.lock.events == []
    assert world.processes.calls == []


def test_dry_run_of_an_applied_name_says_so() -> None:
    """--dry-run on an applied name prints 'already applied'."""
    world = World(applied={"step"})
    assert world.apply("step", dry_run=True) == 0
    assert world.console.said == ["already applied"]


def test_dry_run_quotes_arguments_as_a_shell_user_would_type_them() -> None:
    """Spaces and quotes are shown quoted, so the line can be pasted back."""
    world = World()
    apply(
        "step",
        ["sh", "-c", "echo 'hi there'"],
        Policy(),
        dry_run=True,
        attempts=world.attempts,
        lock=world.lock,
        markers=world.markers,
        console=world.console,
    )
    assert world.console.said == ["would apply step: would run sh -c 'echo '\"'\"'hi there'\"'\"''"]


@pytest.mark.parametrize("use", ["run", "apply"])
def test_a_lock_wait_is_spent_from_the_deadline(use: str) -> None:
    """Regression: --deadline counted from the first attempt, so `--lock-wait 10m --deadline
    10m` could take 20 minutes, past the Kubernetes deadline it was meant to fit. The
    wait for the lock is part of the budget: it is cut to the deadline, and the attempt
    that follows has what remains of it."""
    world = World(Outcome(0))
    world.lock = FakeLock(clock=world.clock, free_in=4.0)
    policy = Policy(timeout=60, deadline=10, lock_wait=600)
    if use == "run":
        assert run(CMD, policy, attempts=world.attempts, lock=world.lock) == 0
    else:
        assert world.apply("step", policy) == 0
    assert world.lock.waits == [10]
    assert [timeout for _, timeout, _ in world.processes.calls] == [pytest.approx(6)]


def test_a_lock_still_busy_at_the_deadline_is_busy_then() -> None:
    """A holder that outlasts the budget: the wait ends at the deadline, as a busy lock."""
    world = World(Outcome(0))
    world.lock = FakeLock(clock=world.clock, free_in=30.0)
    with pytest.raises(LockBusy):
        run(CMD, Policy(deadline=10, lock_wait=600), attempts=world.attempts, lock=world.lock)
    assert world.lock.waits == [10]
    assert world.processes.calls == []


def test_the_splay_waits_a_random_part_of_itself_and_the_deadline_counts_it() -> None:
    """--splay waits splay * random() once, before the lock; the --deadline is counted from
    before it, for the lock wait and the attempt's time limit alike."""
    from domain.attempts import AttemptRecord
    from domain.flows import splay

    world = World(Outcome(0))
    policy = Policy(deadline=10, lock_wait=8, splay=4)
    since = world.clock.monotonic()
    first = AttemptRecord(world.clock.wall(), CMD, 1, 0, 0, "run-1")
    splay(policy, world.clock, lambda: 0.75, world.sink, first)
    assert world.clock.slept == [3.0]
    assert run(CMD, policy, attempts=world.attempts, lock=world.lock, since=since) == 0
    assert world.lock.waits == [7.0]
    assert world.processes.calls[0][1] == pytest.approx(7.0)
    assert [r.attempted for r in world.sink.records] == [True]


def test_a_signal_during_the_splay_ends_the_run_with_its_line_and_no_attempt() -> None:
    from domain.attempts import AttemptRecord
    from domain.flows import splay

    world = World()
    world.clock.interrupt_sleep_with = 15
    first = AttemptRecord(world.clock.wall(), CMD, 1, 0, 0, "run-1", "nightly")
    with pytest.raises(Interrupted) as stopped:
        splay(Policy(splay=60), world.clock, lambda: 0.5, world.sink, first)
    assert stopped.value.exit_code == 143
    [line] = world.sink.records
    assert (line.attempt, line.rc, line.signal, line.attempted, line.name) == (
        1, 143, 15, False, "nightly",
    )  # fmt: skip
    assert not world.processes.calls


def test_apply_every_marks_the_period_and_runs_again_in_the_next_one() -> None:
    """apply --every: the marker counts for the period (aligned to the epoch, in UTC) it was
    applied in, by the state's clock; a failure leaves none, so a retry in the period runs."""
    from domain.apply import period_marker

    assert period_marker("nightly", 86400, 1_796_356_245.6) == (
        "nightly@2026-12-04T00:00:00Z", "2026-12-04T00:00:00Z",
    )  # fmt: skip
    assert period_marker("n", 3600, 3600 * 5 - 0.001)[1] == "1970-01-01T04:00:00Z"
    world = World(Outcome(1), Outcome(0), Outcome(0))
    world.markers.clock = 86400 * 20_000 + 10
    daily = Policy(every=86400)
    assert world.apply("nightly", daily) == 1
    assert not world.markers.applied
    assert world.apply("nightly", daily) == 0
    assert list(world.markers.applied) == ["nightly@2024-10-04T00:00:00Z"]
    assert world.apply("nightly", daily) == 0
    assert world.console.said[-1] == "already applied for the period from 2024-10-04T00:00:00Z"
    assert len(world.processes.calls) == 2
    world.markers.clock += 86400
    assert world.apply("nightly", daily, dry_run=True) == 0
    assert world.console.said[-1] == (
        "would apply nightly for the period from 2024-10-05T00:00:00Z: would run deploy --now"
    )
    assert world.apply("nightly", daily) == 0
    assert len(world.processes.calls) == 3


def test_forget_every_forgets_the_current_period_alone() -> None:
    from domain.manage import forget

    world = World(applied={"nightly@2024-10-04T00:00:00Z", "nightly@2024-10-03T00:00:00Z"})
    world.markers.clock = 86400 * 20_000 + 10
    code = forget(
        "nightly", dry_run=False, lock_wait=0, lock=world.lock, markers=world.markers,
        console=world.console, every=86400,
    )  # fmt: skip
    assert code == 0
    assert list(world.markers.applied) == ["nightly@2024-10-03T00:00:00Z"]
    assert world.console.said[-1] == (
        "forgot nightly for the period from 2024-10-04T00:00:00Z: its next apply runs again"
    )


def test_forget_without_every_forgets_the_newest_period_of_a_name_applied_with_it() -> None:
    from domain.manage import forget

    world = World(applied={"nightly@2024-10-04T00:00:00Z", "nightly@2024-10-03T00:00:00Z"})
    code = forget(
        "nightly", dry_run=False, lock_wait=0, lock=world.lock, markers=world.markers,
        console=world.console,
    )  # fmt: skip
    assert code == 0
    assert list(world.markers.applied) == ["nightly@2024-10-03T00:00:00Z"]
    assert world.console.said[-1].startswith("forgot nightly for the period from 2024-10-04")
