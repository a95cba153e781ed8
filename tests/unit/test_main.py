"""main(argv) in process, on fakes: the command line, the wiring and the domain together."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from adapters.capture import Capture
from adapters.signals import SignalWatch
from domain.attempts import Outcome
from domain.ports import Clock, ProcessRunner
from entrypoints.backends import Backend
from entrypoints.cli import main
from entrypoints.invocation import Invocation
from entrypoints.wiring import Wiring
from tests.fakes import FakeClock, FakeLock, FakeMarkerStore, FakeProcessRunner, FakeSink

if TYPE_CHECKING:
    from entrypoints.wiring import Sink


class FakeWiring(Wiring):
    """The fakes, wired where main() wires the real adapters."""

    def __init__(
        self, *outcomes: Outcome, busy: bool = False, applied: frozenset[str] = frozenset()
    ) -> None:
        self.fake_clock = FakeClock()
        self.fake_processes = FakeProcessRunner(list(outcomes), self.fake_clock)
        self.fake_sink = FakeSink()
        self.lock = FakeLock(busy=busy)
        self.markers = FakeMarkerStore(set(applied))
        self.watches: list[SignalWatch] = []

    def watch(self) -> SignalWatch:
        self.watches.append(SignalWatch())
        return self.watches[-1]

    def backend(self, invocation: Invocation, home: str, watch: SignalWatch) -> Backend | None:
        if invocation.action == "run" and invocation.lock is None:
            return None
        return Backend(self.lock, self.markers, environ={})

    def processes(
        self,
        invocation: Invocation,
        watch: SignalWatch,
        backend: Backend | None,
        capture: Capture | None,
    ) -> ProcessRunner:
        return self.fake_processes

    def clock(self, watch: SignalWatch) -> Clock:
        return self.fake_clock

    def random(self) -> Callable[[], float]:
        return lambda: 0.5

    def sink(self, path: str, warn: Callable[[str], None]) -> Sink:
        return self.fake_sink


@pytest.fixture
def wired() -> Iterator[Callable[..., FakeWiring]]:
    made: list[FakeWiring] = []

    def make(*outcomes: Outcome, **options: object) -> FakeWiring:
        made.append(FakeWiring(*outcomes, **options))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for wiring in reversed(made):
        for watch in reversed(wiring.watches):  # each puts back what the one before set
            watch.close()


def test_a_flaky_command_through_main_retries_with_doubling_waits(
    wired: Callable[..., FakeWiring], tmp_path: object
) -> None:
    """The lab's test line, parsed and wired as the runner does, on fakes."""
    fakes = wired(Outcome(1), Outcome(1), Outcome(0))
    argv = ["--home", str(tmp_path), "run", "--retries", "3", "--backoff", "0.2", "--", "flaky"]
    assert main(argv, wiring=fakes) == 0
    assert [record.attempt for record in fakes.fake_sink.records] == [1, 2, 3]
    assert fakes.fake_clock.slept == pytest.approx([0.2, 0.4])
    assert fakes.fake_sink.closed


def test_apply_through_main_marks_once_and_then_skips(
    wired: Callable[..., FakeWiring], capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    fakes = wired(Outcome(0))
    argv = ["--home", str(tmp_path), "apply", "db", "--", "migrate"]
    assert main(argv, wiring=fakes) == 0
    assert set(fakes.markers.applied) == {"db"}
    assert main(argv, wiring=fakes) == 0
    assert "already applied" in capsys.readouterr().out
    assert len(fakes.fake_processes.calls) == 1
    assert fakes.lock.events == ["acquire", "asked", "release", "acquire", "release"]


def test_a_dry_run_through_main_takes_no_lock_and_runs_nothing(
    wired: Callable[..., FakeWiring], capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    fakes = wired()
    assert main(["--home", str(tmp_path), "apply", "--dry-run", "db", "--", "x"], wiring=fakes) == 0
    assert capsys.readouterr().out == "would apply db: would run x\n"
    assert fakes.lock.events == []
    assert fakes.fake_processes.calls == []


def test_a_busy_lock_through_main_is_exit_3_and_runs_nothing(
    wired: Callable[..., FakeWiring], capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    fakes = wired(Outcome(0), busy=True)
    assert main(["--home", str(tmp_path), "apply", "db", "--", "x"], wiring=fakes) == 3
    assert capsys.readouterr().err.startswith("runner: another run in progress")
    assert fakes.fake_processes.calls == []


def test_a_bad_value_through_main_is_125_and_builds_nothing(
    wired: Callable[..., FakeWiring], capsys: pytest.CaptureFixture[str]
) -> None:
    fakes = wired(Outcome(0))
    assert main(["run", "--timeout", "nope", "--", "x"], wiring=fakes) == 125
    assert "--timeout" in capsys.readouterr().err
    assert fakes.fake_processes.calls == []
    assert fakes.fake_sink.records == []


def test_stats_runs_with_the_cyclic_collector_off_and_puts_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wired: Callable[..., FakeWiring]
) -> None:
    import gc

    import entrypoints.stats

    seen: list[bool] = []

    def stats(*args: object) -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr(entrypoints.stats, "stats", stats)
    assert gc.isenabled()
    assert main(["stats", "--home", str(tmp_path)], wiring=wired()) == 0
    assert seen == [False]
    assert gc.isenabled()


def test_running_out_of_memory_is_one_line_that_says_so(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    wired: Callable[..., FakeWiring],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Under an address-space limit (`ulimit -v`) a MemoryError said `internal error:
    MemoryError: `, nothing after it: it says what it is, and where to look."""
    import entrypoints.stats

    def stats(*args: object) -> int:
        raise MemoryError

    monkeypatch.setattr(entrypoints.stats, "stats", stats)
    assert main(["stats", "--home", str(tmp_path)], wiring=wired()) == 125
    assert capsys.readouterr().err == (
        "runner: error: out of memory (see ulimit -v, or the container's memory limit)\n"
    )
