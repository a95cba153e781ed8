"""The fleet's way in: PgBouncer with its default configuration, in transaction and session
mode, in front of a real server. Everything the lock promises holds through it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Lab
from tests.e2e.test_fleet import HOLD, Host, holders, sql
from tests.pgbouncer import pgbouncer
from tests.procs import wait_for


@pytest.fixture(params=["transaction", "session"])
def bounced(request: pytest.FixtureRequest, pg_url: str) -> Iterator[str]:
    """The test server's URL through a PgBouncer of the test's own, in each pool mode."""
    try:
        with pgbouncer(pg_url, request.param) as url:
            yield url
    except LookupError as reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PgBouncer is required in CI: {reason}")
        pytest.skip(str(reason))


def test_twelve_hosts_apply_a_step_once(lab: Lab, bounced: str, namespace: str) -> None:
    """Regression: in transaction mode two hosts applied the same step (5 of 5)."""
    hosts = [Host(lab, f"web-{n}", bounced, namespace) for n in range(12)]
    command = ["sh", "-c", f"echo once >> {lab.applied_log}; sleep 0.2"]
    runs = [lab.start("apply", *host.args(), "step", "--", *command) for host in hosts]
    codes = [run.wait(timeout=60) for run in runs]
    assert lab.applications() == ["once"]
    assert set(codes) <= {0, 3}, [run.stderr.read() for run in runs if run.stderr]


def test_the_lock_is_exclusive_names_its_holder_and_hands_out_growing_tokens(
    lab: Lab, bounced: str, namespace: str
) -> None:
    """Regression: in session mode every run failed ('unsupported startup parameter')."""
    first, second = (Host(lab, f"web-{n}", bounced, namespace) for n in (1, 2))
    holder = first.start(HOLD)
    wait_for(first.started.exists, what="the holder's command")
    busy = lab.run("run", *second.args("--lock", "nightly"), "--", "true")
    assert busy.returncode == 3, busy.stderr
    assert f"(pid {holder.pid})".encode() in busy.stderr
    first.release.touch()
    assert holder.wait(timeout=30) == 0
    tokens = []
    for _ in range(3):
        result = lab.run(
            "run", *second.args("--lock", "nightly"), "--", "sh", "-c", "echo $RUNNER_FENCING_TOKEN"
        )
        tokens.append(int(result.stdout))
    assert tokens == sorted(set(tokens))
    three = [Host(lab, f"slot-{n}", bounced, namespace) for n in range(3)]
    running = [host.start(HOLD, "--slots", "2") for host in three[:2]]
    wait_for(lambda: all(h.started.exists() for h in three[:2]), what="two holders")
    third = lab.run("run", *three[2].args("--lock", "nightly", "--slots", "2"), "--", "true")
    assert third.returncode == 3
    for host in three[:2]:
        host.release.touch()
    assert [run.wait(timeout=30) for run in running] == [0, 0]


def test_a_lost_lease_stops_the_command(
    lab: Lab, bounced: str, pg_url: str, namespace: str
) -> None:
    """The lease taken from under the holder: its next renewal, through the pooler, sees it;
    on its way out it deletes nobody's lease but its own."""
    host = Host(lab, "web-1", bounced, namespace)
    holder = host.start(HOLD, "--lease", "1s")
    wait_for(host.started.exists, what="the holder's command")
    sql(pg_url, "UPDATE runner_leases SET owner = 'thief' WHERE namespace = %s", (namespace,))
    assert holder.wait(timeout=30) == 125
    assert holder.stderr is not None
    assert b"lost the lock" in holder.stderr.read()
    assert len(holders(pg_url, namespace)) == 1  # the new owner's lease stands
