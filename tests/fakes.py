"""One in-memory fake per port, each recording what happened to it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain.attempts import AttemptRecord, Outcome
from domain.errors import Interrupted, LockBusy


class FakeClock:
    """Time stands still until someone sleeps; `interrupt_sleep_with` cuts the next sleep."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start
        self.slept: list[float] = []
        self.interrupt_sleep_with: int | None = None

    def wall(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> int | None:
        self.slept.append(seconds)
        if self.interrupt_sleep_with is not None:
            return self.interrupt_sleep_with
        self.now += seconds
        return None


class FakeProcessRunner:
    """Plays back scripted outcomes; each attempt takes `duration` seconds of `clock`."""

    def __init__(
        self, outcomes: list[Outcome | Interrupted], clock: FakeClock, duration: float = 0.5
    ) -> None:
        self.outcomes = list(outcomes)
        self.clock = clock
        self.duration = duration
        self.calls: list[tuple[list[str], float, float]] = []
        self.envs: list[dict[str, str]] = []

    def run(
        self, cmd: list[str], timeout: float, kill_after: float, env: dict[str, str]
    ) -> Outcome:
        self.calls.append((cmd, timeout, kill_after))
        self.envs.append(env)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Interrupted):
            raise outcome
        self.clock.now += self.duration
        return outcome


class FakeSink:
    def __init__(self) -> None:
        self.records: list[AttemptRecord] = []
        self.closed = False

    def record(self, attempt: AttemptRecord) -> None:
        self.records.append(attempt)

    def close(self) -> None:
        self.closed = True


class FakeMarkerStore:
    def __init__(self, applied: set[str] | None = None, now: float = 1_700_000_000.0) -> None:
        self.applied: dict[str, dict[str, object]] = {name: {} for name in applied or ()}
        self.clock = now

    def now(self) -> float:
        return self.clock

    def exists(self, name: str) -> bool:
        return name in self.applied

    def write(self, name: str, *, when: float, run_id: str, cmd: list[str]) -> None:
        self.applied[name] = {"when": when, "run_id": run_id, "cmd": cmd}

    def remove(self, name: str) -> bool:
        return self.applied.pop(name, None) is not None

    def entries(self) -> list[dict[str, object]]:
        return [{"name": name, **record} for name, record in sorted(self.applied.items())]


class FakeLock:
    """Busy (or interrupted by `signal`) on every try; records how long each was to wait.

    Each acquisition hands out the next token; `lose_with` makes `lost()` say so. With a
    `clock`, the holder before lets go `free_in` seconds after the first try: a wait
    that long moves the clock on and takes the lock, a shorter one moves it by its
    length and finds the lock busy.
    """

    def __init__(
        self,
        busy: bool = False,
        signal: int | None = None,
        clock: FakeClock | None = None,
        free_in: float = 0.0,
    ) -> None:
        self.busy = busy
        self.signal = signal
        self.clock = clock
        self.free_in = free_in
        self.held = False
        self.events: list[str] = []
        self.waits: list[float] = []
        self.token = 0
        self.lose_with: str | None = None

    def lost(self) -> str | None:
        self.events.append("asked")
        return self.lose_with

    def acquire(self, wait: float = 0.0) -> int:
        self.waits.append(wait)
        if self.signal is not None:
            self.events.append("interrupted")
            raise Interrupted(self.signal)
        if self.clock is not None and self.free_in > 0:
            self.clock.now += min(wait, self.free_in)
            if wait < self.free_in:
                self.events.append("busy")
                raise LockBusy()
        if self.busy:
            self.events.append("busy")
            raise LockBusy()
        self.held = True
        self.events.append("acquire")
        self.token += 1
        return self.token

    def release(self) -> None:
        self.held = False
        self.events.append("release")


class FakeConsole:
    def __init__(self) -> None:
        self.said: list[str] = []
        self.infos: list[str] = []
        self.warnings: list[str] = []

    def say(self, text: str) -> None:
        self.said.append(text)

    def answer(self, text: str) -> None:
        self.said.append(text)

    def info(self, text: str) -> None:
        self.infos.append(text)

    def warn(self, text: str) -> None:
        self.warnings.append(text)


class FakeLeaseStore:
    """Answers renewals from a script: True (renewed), False (taken), or an exception.

    Each renewal takes `takes` seconds of `clock`; `asked` records the time of each
    and the bound it was given. An empty script renews for ever.
    """

    def __init__(
        self, clock: FakeClock, answers: Sequence[bool | Exception] = (), takes: float = 0.01
    ) -> None:
        self.clock = clock
        self.answers = list(answers)
        self.takes = takes
        self.asked: list[tuple[float, float]] = []

    def renew(self, within: float) -> bool:
        self.asked.append((self.clock.now, within))
        self.clock.now += min(self.takes, within)
        answer = self.answers.pop(0) if self.answers else True
        if isinstance(answer, Exception):
            raise answer
        return answer


def waiting(clock: FakeClock, stop_after: float) -> Callable[[float], bool]:
    """A keeper's wait on `clock`: advances time; says stop once `stop_after` seconds passed."""
    end = clock.now + stop_after

    def wait(seconds: float) -> bool:
        if clock.now + seconds >= end:
            clock.now = max(clock.now, end)
            return True
        clock.now += seconds
        return False

    return wait
