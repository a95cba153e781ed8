"""Exit codes and the exceptions that carry a reason to stop."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """The runner's own exit codes (a command's own code passes through unchanged)."""

    OK = 0
    FAILED = 1
    LOCKED = 3
    TIMEOUT = 124
    RUNNER_ERROR = 125
    NOT_EXECUTABLE = 126
    NOT_FOUND = 127
    SIGNAL_BASE = 128


TIMEOUT_RC = 124
SIGNALLED_RC = 129
"""In the attempt log, an rc that reads as a timeout (124) or a signal (129 to 193) always
comes with `timed_out` (true or false) or `signal` (a name, or null): whether the
runner's timeout or a signal really ended it, or the command merely exited with that
code."""


class RunnerError(Exception):
    """A reason for the runner to stop, with the exit code it stops with."""

    status: int = ExitStatus.RUNNER_ERROR


class UsageError(RunnerError):
    """The command line asks for something that cannot be done as written."""


class StateError(RunnerError):
    """The state folder, the lock or a marker cannot be used."""


class OutputError(RunnerError):
    """An answer the user asked for could not be written."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"cannot write output: {reason}")


class LockBusy(RunnerError):
    """Another run holds the lock; `holder` says who, when it is known."""

    status: int = ExitStatus.LOCKED

    def __init__(self, holder: str | None = None) -> None:
        super().__init__("another run in progress" + (f": {holder}" if holder else ""))
        self.holder = holder


class LockLost(RunnerError):
    """The lock was lost (its session ended or went silent) while it was held."""

    def __init__(self, reason: str, then: str) -> None:
        super().__init__(f"lost the lock: {reason}; {then}")
        self.reason = reason


class Interrupted(RunnerError):
    """The runner received signal `signum` and stops with 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"received signal {signum}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return ExitStatus.SIGNAL_BASE + self.signum
