from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator

import pytest

from adapters.signals import SignalWatch
from tests import pgserver

# A suite started in the background of a script (as `cmd &` in sh) inherits SIGINT and
# SIGQUIT ignored, and so would every runner it starts: the runner keeps a signal its
# parent ignored, as nohup needs. The tests send both and expect them heard.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


RUNNER_FILES = ("runs.jsonl", "state", "applied.log")
"""What a runner writes into its home: a test or benchmark writing them here used the checkout."""


def _runner_files() -> set[str]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {
        name
        for name in os.listdir(root)
        if name in RUNNER_FILES or name.startswith((".runs.jsonl", "runs.jsonl"))
    }


_BEFORE = _runner_files()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a test wrote the runner's own files into the checkout."""
    written = _runner_files() - _BEFORE
    if written:
        print(f"\ntests wrote into the checkout: {sorted(written)}")
        session.exitstatus = 1


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A PostgreSQL server for the whole session (skipped only outside CI when none can be had)."""
    try:
        import psycopg  # noqa: F401
    except ImportError as missing:
        _unavailable(f"psycopg is not installed: {missing}")
    try:
        with pgserver.server() as url:
            pgserver.wait_until_accepting(url)
            yield url
    except (LookupError, OSError, KeyError) as reason:
        _unavailable(str(reason))


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required in CI: {reason}")
    pytest.skip(f"no PostgreSQL server: {reason}")


@pytest.fixture
def namespace() -> str:
    """A namespace of its own for each test, so tests share the server but no state."""
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture
def watch() -> Iterator[SignalWatch]:
    """A real SignalWatch in the test process, with the old handlers put back after."""
    signal_watch = SignalWatch()
    try:
        yield signal_watch
    finally:
        signal_watch.close()
