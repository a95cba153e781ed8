"""--splay: a random wait before the lock and the first attempt, as systemd's
RandomizedDelaySec=, so that a fleet's cron does not start every host at the same second."""

from __future__ import annotations

import json
import signal
import time

from tests.e2e.conftest import Lab
from tests.e2e.test_cron_jobs import Service, service  # noqa: F401 - the fixture
from tests.procs import catches, wait_for


def test_a_sigterm_during_the_splay_ends_the_run_with_its_line_and_no_attempt(
    lab: Lab,
    service: str,  # noqa: F811 - the fixture
) -> None:
    ran = lab.tmp / "ran"
    runner = lab.start(
        "run", "--splay", "1h", "--name", "nightly", "--ping", service, "--lock", "nightly",
        "--", "touch", str(ran),
    )  # fmt: skip
    wait_for(lambda: catches(runner.pid, signal.SIGTERM), what="the runner's handlers")
    sent = time.monotonic()
    runner.send_signal(signal.SIGTERM)
    _, err = runner.communicate(timeout=30)
    assert runner.returncode == 143, err
    assert time.monotonic() - sent < 2
    assert not ran.exists()
    [line] = [json.loads(text) for text in lab.log.read_text().splitlines()]
    assert (line["attempt"], line["rc"], line["attempted"], line["name"]) == (
        1, 143, False, "nightly",
    )  # fmt: skip
    assert Service.pings == []  # the start ping comes after the splay: none was sent
    assert not (lab.state / "run:nightly.lock").exists()  # nor was the lock claimed


def test_a_splay_run_waits_less_than_its_splay_and_pings_start_then_its_end(
    lab: Lab,
    service: str,  # noqa: F811 - the fixture
) -> None:
    began = time.monotonic()
    result = lab.run("run", "--splay", "1", "--ping", service, "--", "true")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began < 1 + 5
    ends = [path.split("?")[0].rsplit("/", 1)[-1] for path, _ in Service.pings]
    assert len(ends) == 2
    assert ends[0] == "start"


def test_a_splay_as_long_as_the_deadline_is_refused(lab: Lab) -> None:
    result = lab.run("run", "--splay", "5m", "--deadline", "5m", "--", "true")
    assert result.returncode == 125
    assert b"--splay is waited within the --deadline" in result.stderr
