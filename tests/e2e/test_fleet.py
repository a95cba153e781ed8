"""One step, one host, across the fleet: a lease that rides out blips and never overlaps.

Two "hosts" are two homes sharing one server. The fault tests print how long the
two hosts' commands overlapped (it must be zero) and what the holder saw.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests import pgserver
from tests.e2e.conftest import RUNNER, Lab
from tests.procs import UNTIL, processes_with, wait_for

BEAT = (
    "trap '' TERM; touch {started}; "
    "while :; do date +%s.%N > {beat}.new && mv {beat}.new {beat}; sleep 0.02; done"
)
"""A command that ignores SIGTERM and notes, every 20 ms, that it still runs (each note
replaces the last whole: SIGKILL between truncating and writing cannot leave it empty)."""

HOLD = "touch {started}; " + UNTIL + "; date +%s.%N > {ended}"
MARK = "date +%s.%N > {started}"


class Host:
    """One host of the fleet: a home of its own, the shared server and namespace."""

    def __init__(self, lab: Lab, name: str, url: str, namespace: str) -> None:
        self.lab = lab
        self.home = lab.tmp / name
        self.home.mkdir()
        self.url = url
        self.namespace = namespace
        self.started = lab.tmp / f"{name}.started"
        self.ended = lab.tmp / f"{name}.ended"
        self.release = lab.tmp / f"{name}.release"

    def args(self, *extra: str) -> list[str]:
        return [
            "--home",
            str(self.home),
            "--state",
            self.url,
            "--namespace",
            self.namespace,
            *extra,
        ]

    def start(
        self, script: str, *options: str, prefix: tuple[str, ...] = ()
    ) -> subprocess.Popen[bytes]:
        """run --lock nightly OPTIONS -- sh -c SCRIPT (formatted with this host's files)."""
        text = script.format(
            started=self.started, release=self.release, ended=self.ended, beat=self.ended
        )
        return subprocess.Popen(
            [*prefix, *self.runner("--lock", "nightly", *options), "--", "sh", "-c", text],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.lab.env,
        )

    def runner(self, *options: str) -> list[str]:
        return [sys.executable, RUNNER, "run", *self.args(*options)]

    def time_of(self, path: os.PathLike[str]) -> float:
        return float(open(path).read())


def sql(url: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement.encode(), params)
        return cursor.fetchall() if cursor.description else []


def holders(url: str, namespace: str) -> list[tuple[object, ...]]:
    """The live leases of `namespace`: (lock, host, pid)."""
    return sql(
        url,
        "SELECT lock, host, pid FROM runner_leases WHERE namespace = %s AND expires > now()",
        (namespace,),
    )


@pytest.fixture
def own_pg() -> Iterator[pgserver.Server]:
    """A server of this test's own, to stop and start."""
    with _own("") as server:
        yield server


@contextmanager
def _own(settings: str) -> Iterator[pgserver.Server]:
    """A server of the test's own with `settings`; skipped (failed under CI) if none can be had."""
    try:
        with pgserver.own_server(settings) as started:
            pgserver.wait_until_accepting(started.url)
            yield started
    except (LookupError, OSError, KeyError) as reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required in CI: {reason}")
        pytest.skip(f"no PostgreSQL server: {reason}")


def test_a_two_second_restart_is_ridden_out_and_nobody_runs_beside_the_holder(
    lab: Lab, own_pg: pgserver.Server, namespace: str
) -> None:
    """Regression: a 2 s restart ended the holder (125) and every waiter; etcd rode it out.

    The holder's command goes on (rc 0), the waiter keeps waiting through the outage
    and runs only after the holder ended."""
    first, second = (Host(lab, f"web-{n}", own_pg.url, namespace) for n in (1, 2))
    holder = first.start(HOLD, "--lease", "3s")
    wait_for(first.started.exists, what="the holder's command")
    waiter = second.start(MARK, "--lock-wait", "60", "--lease", "3s")
    own_pg.stop()
    time.sleep(2)  # the outage itself, not a wait for an event
    own_pg.start()
    first.release.touch()
    assert holder.wait(timeout=60) == 0, holder.stderr.read() if holder.stderr else b""
    assert waiter.wait(timeout=60) == 0, waiter.stderr.read() if waiter.stderr else b""
    overlap = max(0.0, first.time_of(first.ended) - second.time_of(second.started))
    print(f"\nrestart: overlap {overlap * 1000:.1f} ms")
    assert overlap == 0.0


def test_a_terminated_holder_and_waiter_reconnect(lab: Lab, pg_url: str, namespace: str) -> None:
    """pg_terminate_backend on every runner connection: both carry on; no overlap."""
    first, second = (Host(lab, f"web-{n}", pg_url, namespace) for n in (1, 2))
    holder = first.start(HOLD, "--lease", "2s")
    wait_for(first.started.exists, what="the holder's command")
    waiter = second.start(MARK, "--lock-wait", "60", "--lease", "2s")
    for _ in range(3):
        wait_for(lambda: bool(_runner_backends(pg_url)), what="a runner connection")
        for (pid,) in _runner_backends(pg_url):
            sql(pg_url, "SELECT pg_terminate_backend(%s)", (pid,))
    first.release.touch()
    assert holder.wait(timeout=60) == 0
    assert waiter.wait(timeout=60) == 0
    assert first.time_of(first.ended) <= second.time_of(second.started)


def _loaded_libpq(pid: int) -> bool:
    """Whether `pid` has loaded libpq: past its start-up (handlers set), at the lock."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            return "libpq" in maps.read()
    except OSError:
        return False


def _runner_backends(url: str) -> list[tuple[object, ...]]:
    return sql(url, "SELECT pid FROM pg_stat_activity WHERE application_name = 'runner.py'")


@pytest.fixture
def partitioned_host(lab: Lab, pg_url: str) -> Iterator[tuple[list[str], str, list[str]]]:
    """A network namespace of the test's own, reaching the server through a veth pair and a
    forwarder; yields (prefix to run in it, the server's URL from there, the command that
    cuts the link). Skipped where network namespaces cannot be made."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("network namespaces need root and iproute2")
    name = "rn" + lab.token[:8]
    outside, inside = f"va{lab.token[:6]}", f"vb{lab.token[:6]}"
    octet = int(lab.token[:2], 16) % 250 + 1
    here, there = f"10.231.{octet}.1", f"10.231.{octet}.2"
    steps = [
        ["ip", "netns", "add", name],
        ["ip", "link", "add", outside, "type", "veth", "peer", "name", inside],
        ["ip", "link", "set", inside, "netns", name],
        ["ip", "addr", "add", f"{here}/30", "dev", outside],
        ["ip", "link", "set", outside, "up"],
        ["ip", "netns", "exec", name, "ip", "addr", "add", f"{there}/30", "dev", inside],
        ["ip", "netns", "exec", name, "ip", "link", "set", inside, "up"],
        ["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"],
    ]
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True)
    except subprocess.CalledProcessError as failed:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot make a network namespace: {failed.stderr!r}")
        pytest.skip(f"cannot make a network namespace: {failed.stderr!r}")
    port = int(pg_url.rsplit(":", 1)[1].split("/", maxsplit=1)[0])
    forward = subprocess.Popen(
        [sys.executable, "-c", FORWARD, here, str(port)], stdout=subprocess.PIPE
    )
    try:
        assert forward.stdout is not None
        listening = int(forward.stdout.readline())
        url = pg_url.replace(f"127.0.0.1:{port}", f"{here}:{listening}")
        yield ["ip", "netns", "exec", name], url, ["ip", "link", "set", outside, "down"]
    finally:
        forward.kill()
        forward.wait()
        subprocess.run(["ip", "link", "del", outside], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


FORWARD = """
import socket, sys, threading
listener = socket.create_server((sys.argv[1], 0))
print(listener.getsockname()[1], flush=True)
def pipe(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
while True:
    client = listener.accept()[0]
    server = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    for a, b in ((client, server), (server, client)):
        threading.Thread(target=pipe, args=(a, b), daemon=True).start()
"""


def test_a_partitioned_holder_stops_its_command_before_anyone_else_may_start(
    lab: Lab, pg_url: str, namespace: str, partitioned_host: tuple[list[str], str, list[str]]
) -> None:
    """The holder's host loses the network; its command ignores SIGTERM. The holder gives up
    after the lease and SIGKILLs the command after --kill-after; the other host claims only
    once the server lets the lease expire (lease + kill-after + 5 s): no overlap."""
    prefix, inside_url, cut = partitioned_host
    first = Host(lab, "web-1", inside_url, namespace)
    second = Host(lab, "web-2", pg_url, namespace)
    holder = first.start(BEAT, "--lease", "2s", "--kill-after", "1", prefix=tuple(prefix))
    wait_for(first.started.exists, what="the holder's command")
    waiter = second.start(MARK, "--lock-wait", "60")
    subprocess.run(cut, check=True)
    assert holder.wait(timeout=60) == 125
    assert holder.stderr is not None
    assert b"lost the lock: no renewal confirmed within the 2s lease" in holder.stderr.read()
    assert waiter.wait(timeout=60) == 0
    overlap = max(0.0, first.time_of(first.ended) + 0.02 - second.time_of(second.started))
    print(f"\npartition: overlap {overlap * 1000:.1f} ms")
    assert overlap == 0.0
    assert processes_with(lab.token) == []


def test_fencing_tokens_grow_across_hosts_and_reach_the_command_and_the_log(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """RUNNER_FENCING_TOKEN: each acquisition, on any host, a larger number; logged as token."""
    hosts = [Host(lab, f"web-{n}", pg_url, namespace) for n in range(3)]
    seen = []
    for host in hosts:
        run = host.start('echo "$RUNNER_FENCING_TOKEN" > {started}')
        assert run.wait(timeout=30) == 0
        seen.append(int(host.started.read_text()))
    assert seen == sorted(seen)
    assert len(set(seen)) == 3
    logged = [json.loads(line)["token"] for h in hosts for line in (h.home / "runs.jsonl").open()]
    assert logged == seen


def test_run_lock_name_runs_on_one_host_and_names_the_holder(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """run --state URL --lock NAME: cron on every host, the job on one; the others exit 3."""
    first, second = (Host(lab, f"web-{n}", pg_url, namespace) for n in (1, 2))
    holder = first.start(HOLD)
    wait_for(first.started.exists, what="the job to start")
    busy = lab.run("run", *second.args("--lock", "nightly"), "--", "true")
    assert busy.returncode == 3
    message = busy.stderr.decode()
    assert message.startswith("runner: another run in progress: run sh -c ")
    assert f"on {os.uname().nodename} (pid {holder.pid}) for " in message
    first.release.touch()
    assert holder.wait(timeout=30) == 0
    assert lab.run("run", *second.args("--lock", "nightly"), "--", "true").returncode == 0
    assert holders(pg_url, namespace) == []


def test_run_lock_slots_admit_n_holders(lab: Lab, pg_url: str, namespace: str) -> None:
    """--slots 2: two at once across hosts, the third exits 3."""
    hosts = [Host(lab, f"web-{n}", pg_url, namespace) for n in range(3)]
    running = [host.start(HOLD, "--slots", "2") for host in hosts[:2]]
    wait_for(lambda: all(host.started.exists() for host in hosts[:2]), what="two jobs to start")
    third = lab.run("run", *hosts[2].args("--lock", "nightly", "--slots", "2"), "--", "true")
    assert third.returncode == 3
    for host in hosts[:2]:
        host.release.touch()
    assert [p.wait(timeout=30) for p in running] == [0, 0]


def test_a_full_server_is_waited_for_not_a_failure(lab: Lab, namespace: str) -> None:
    """Regression: with max_connections reached, waiters exited 125 ('too many clients').

    A server that takes 3 clients (and keeps superuser slots apart); 12 hosts wait on
    one lock at once: every one runs, one at a time."""
    with _own("-c max_connections=6 -c superuser_reserved_connections=3") as server:
        hosts = [Host(lab, f"web-{n}", server.url, namespace) for n in range(12)]
        log = lab.tmp / "timeline"
        script = f"echo start $(date +%s.%N) >> {log}; sleep 0.05; echo end $(date +%s.%N) >> {log}"
        runs = [
            subprocess.Popen(
                [*h.runner("--lock", "nightly", "--lock-wait", "120"), "--", "sh", "-c", script],
                env=lab.env,
                stderr=subprocess.PIPE,
            )
            for h in hosts
        ]
        codes = [run.wait(timeout=180) for run in runs]
        errors = [run.stderr.read() for run in runs if run.stderr]
    assert codes == [0] * 12, errors
    events = log.read_text().split()
    kinds = events[0::2]
    assert kinds == ["start", "end"] * 12
    times = [float(t) for t in events[1::2]]
    assert times == sorted(times)


def test_a_lease_without_a_kill_grace_or_in_the_foreground_is_refused(lab: Lab) -> None:
    """--kill-after 0 (no bound on a lost lease's overlap) and --foreground (lock loss would
    leave the command's children running) are usage errors with a state URL."""
    url = "postgresql://runner@127.0.0.1:1/postgres"
    for options in (["--kill-after", "0"], ["--foreground"]):
        result = lab.run("run", "--state", url, "--lock", "x", *options, "--", "true")
        assert result.returncode == 125
        assert b"with a --state lock" in result.stderr
    assert lab.run("run", "--kill-after", "0", "--signal", "KILL", "--", "true").returncode == 0


def test_sigterm_while_waiting_ends_the_runner_and_runs_nothing(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """A waiter holds no connection: SIGTERM ends it (143) long before its 60 s wait."""
    first, second = (Host(lab, f"web-{n}", pg_url, namespace) for n in (1, 2))
    holder = first.start(HOLD)
    wait_for(first.started.exists, what="the holder's command")
    waiter = second.start(MARK, "--lock-wait", "60")
    wait_for(lambda: _loaded_libpq(waiter.pid), what="the waiter to be at the server")
    waiter.send_signal(signal.SIGTERM)
    assert waiter.wait(timeout=10) == 143
    first.release.touch()
    assert holder.wait(timeout=30) == 0
    assert not second.started.exists()


def test_a_wait_without_limit_outlasts_the_lease(lab: Lab, pg_url: str, namespace: str) -> None:
    """--lock-wait inf waits as long as it takes; the lease bounds the holder, not the wait."""
    first, second = (Host(lab, f"web-{n}", pg_url, namespace) for n in (1, 2))
    holder = first.start(HOLD)
    wait_for(first.started.exists, what="the holder's command")
    waiter = second.start(MARK, "--lock-wait", "inf", "--lease", "1s")
    deadline = time.monotonic() + 2.5
    wait_for(lambda: time.monotonic() > deadline or waiter.poll() is not None, 5, "the lease")
    assert waiter.poll() is None
    first.release.touch()
    assert holder.wait(timeout=30) == 0
    assert waiter.wait(timeout=30) == 0
