from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters.signals import SignalWatch


@pytest.fixture
def watch() -> Iterator[SignalWatch]:
    """A real SignalWatch in the test process, with the old handlers put back after."""
    signal_watch = SignalWatch()
    try:
        yield signal_watch
    finally:
        signal_watch.close()
