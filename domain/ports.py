"""The ports: what the domain needs from the world, by role.

Only type checkers and tests import this module; the domain names these types in
annotations alone, so nothing here is loaded when the runner starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from domain.attempts import AttemptRecord, Outcome


class Clock(Protocol):
    def wall(self) -> float:
        """Seconds since the epoch, for timestamps."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for durations."""

    def sleep(self, seconds: float) -> int | None:
        """Wait `seconds`; return the signal number that cut the wait short, or None."""


class ProcessRunner(Protocol):
    def run(
        self, cmd: list[str], timeout: float, kill_after: float, env: dict[str, str]
    ) -> Outcome:
        """Run `cmd` to its end (timeout and kill_after in seconds, 0 = no limit).

        `env` is added to the runner's own environment for the command. A command
        that runs under a lock is stopped as on a timeout when the lock is lost,
        and the Outcome says why (`lost`). Raises Interrupted when a signal arrived
        before the command started.
        """


class AttemptSink(Protocol):
    def record(self, attempt: AttemptRecord) -> None:
        """Keep one attempt; never raises (a sink that cannot write warns)."""


class MarkerStore(Protocol):
    def now(self) -> float:
        """The state's time, epoch seconds: the host's for a folder, the server's for PostgreSQL."""

    def exists(self, name: str) -> bool:
        """Whether `name` has been applied."""

    def write(self, name: str, *, when: float, run_id: str, cmd: list[str]) -> None:
        """Record `name` as applied at `when` (epoch seconds), durably and atomically.

        Raises StateError when the record cannot be written.
        """

    def remove(self, name: str) -> bool:
        """Forget that `name` was applied; False when it was not."""

    def entries(self) -> list[dict[str, object]]:
        """Every marker, by name: name, time, run_id, cmd, host (or error, for a corrupt one)."""


class Lock(Protocol):
    def acquire(self, wait: float = 0.0) -> int | None:
        """Take the lock, waiting up to `wait` seconds in the holders' queue.

        Returns the fencing token: an integer that grows with every acquisition of
        this lock, on every host (None where none can be kept). Raises LockBusy
        when another run still holds it then, Interrupted when a signal ends the wait.
        """

    def lost(self) -> str | None:
        """Why the lock is no longer held (its session ended or went silent), or None."""

    def release(self) -> None:
        """Let go of the lock, for every process that inherited it too."""


class LeaseStore(Protocol):
    def renew(self, within: float) -> bool:
        """Extend this holder's lease, answering within `within` seconds.

        True: the lease is still this holder's, now extended. False: it expired or
        another holder took it. Raises StateError when the server could not be
        reached or did not answer in time (worth another try).
        """


class Console(Protocol):
    def say(self, text: str) -> None:
        """A status line on stdout, such as `already applied` (silenced by --quiet)."""

    def answer(self, text: str) -> None:
        """What the user asked for, on stdout (silenced by --quiet); never lost in silence.

        Raises OutputError when it cannot be written.
        """

    def info(self, text: str) -> None:
        """Progress, on stderr (silenced by --quiet)."""

    def warn(self, text: str) -> None:
        """A problem, on stderr (always shown)."""
