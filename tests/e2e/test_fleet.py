"""One step, one host, across the fleet: a PostgreSQL lock that is never silently lost.

Two "hosts" are two homes sharing one server. Each fault test prints the measured
reaction (server fault to SIGTERM at the first host's command) and the overlap
(how long both hosts' commands ran together).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from adapters.postgres.lock import advisory_key
from tests import pgserver
from tests.e2e.conftest import Lab
from tests.procs import processes_with, wait_for

HOLD = """
import os, signal, sys, time
def stop(signum, frame):
    with open(sys.argv[2], "w") as handle:
        handle.write(repr(time.time()))
    os._exit(143)
signal.signal(signal.SIGTERM, stop)
with open(sys.argv[1], "w") as handle:
    handle.write(repr(time.time()) + " " + os.environ.get("RUNNER_FENCING_TOKEN", "-"))
while True:
    signal.pause()
"""

MARK = """
import os, sys, time
with open(sys.argv[1], "w") as handle:
    handle.write(repr(time.time()) + " " + os.environ.get("RUNNER_FENCING_TOKEN", "-"))
"""


class Host:
    """One host of the fleet: a home of its own, the shared server and namespace."""

    def __init__(self, lab: Lab, name: str, url: str, namespace: str) -> None:
        self.lab = lab
        self.name = name
        self.home = lab.tmp / name
        self.home.mkdir()
        self.url = url
        self.namespace = namespace
        self.started = lab.tmp / f"{name}.started"
        self.stopped = lab.tmp / f"{name}.stopped"

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

    def apply_holding(self, *options: str) -> subprocess.Popen[bytes]:
        """apply step -- a command that runs until SIGTERM, noting when it started and stopped."""
        return self.lab.start(
            "apply",
            *self.args(*options),
            "step",
            "--",
            sys.executable,
            "-c",
            HOLD,
            str(self.started),
            str(self.stopped),
        )

    def apply_marking(self, *options: str) -> subprocess.Popen[bytes]:
        """apply step -- a command that notes when it started, then ends."""
        return self.lab.start(
            "apply",
            *self.args(*options),
            "step",
            "--",
            sys.executable,
            "-c",
            MARK,
            str(self.started),
        )

    def start_time(self) -> float:
        return float(self.started.read_text().split()[0])

    def stop_time(self) -> float:
        return float(self.stopped.read_text())


def sql(url: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement.encode(), params)
        return cursor.fetchall() if cursor.description else []


def holder_backend(url: str, namespace: str) -> int:
    """The server process whose session holds apply's lock of `namespace`."""
    key = advisory_key("apply", namespace) & 0xFFFFFFFFFFFFFFFF
    found: list[int] = []

    def held() -> bool:
        found[:] = [
            int(str(pid))
            for (pid,) in sql(
                url,
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND classid = %s AND objid = %s",
                (key >> 32, key & 0xFFFFFFFF),
            )
        ]
        return len(found) == 1

    wait_for(held, what="the lock's holder on the server")
    return found[0]


def waiting_on_lock(url: str) -> bool:
    return bool(sql(url, "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"))


@pytest.fixture
def own_pg() -> Iterator[pgserver.Server]:
    """A server of this test's own, to restart."""
    try:
        with pgserver.own_server() as started:
            pgserver.wait_until_accepting(started.url)
            yield started
    except (LookupError, OSError, KeyError) as reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required in CI: {reason}")
        pytest.skip(f"no PostgreSQL server: {reason}")


def report(what: str, reaction: float, overlap: float) -> None:
    print(
        f"\n{what}: SIGTERM reached the command {reaction * 1000:.1f} ms after the fault;"
        f" the two hosts' commands overlapped {overlap * 1000:.1f} ms"
    )


def test_a_terminated_session_stops_the_command_at_once(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Regression: pg_terminate_backend let a second host run beside the first for 3.75 s."""
    first = Host(lab, "web-1", pg_url, namespace)
    second = Host(lab, "web-2", pg_url, namespace)
    holder = first.apply_holding()
    wait_for(first.started.exists, what="the first command")
    backend = holder_backend(pg_url, namespace)
    waiter = second.apply_marking("--lock-wait", "30")
    wait_for(lambda: waiting_on_lock(pg_url), what="the second host to queue")
    fault = time.time()
    sql(pg_url, "SELECT pg_terminate_backend(%s)", (backend,))
    assert holder.wait(timeout=30) == 125
    assert holder.stderr is not None
    assert holder.stderr.read().startswith(b"runner: error: lost the lock: ")
    assert waiter.wait(timeout=30) == 0
    reaction = first.stop_time() - fault
    overlap = max(0.0, first.stop_time() - second.start_time())
    report("terminate", reaction, overlap)
    assert reaction < 1.0
    assert overlap < 1.0
    assert not (first.home / "state").exists()
    assert processes_with(lab.token) == []


def test_a_server_restart_stops_the_command_before_a_second_host_can_run(
    lab: Lab, own_pg: pgserver.Server, namespace: str
) -> None:
    """Regression: an immediate restart gave 4.55 s of overlap; now none."""
    first = Host(lab, "web-1", own_pg.url, namespace)
    second = Host(lab, "web-2", own_pg.url, namespace)
    holder = first.apply_holding()
    wait_for(first.started.exists, what="the first command")
    fault = time.time()
    own_pg.restart()
    assert holder.wait(timeout=30) == 125
    waiter = second.apply_marking("--lock-wait", "30")
    assert waiter.wait(timeout=30) == 0
    reaction = first.stop_time() - fault
    overlap = max(0.0, first.stop_time() - second.start_time())
    report("restart", reaction, overlap)
    assert overlap == 0.0
    assert reaction < 5.0


def test_a_stalled_backend_is_a_lost_lock_after_the_lease_and_never_an_overlap(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """SIGSTOP on the holder's server process: no answer within --lease; command stopped.

    A stalled backend cannot free the lock, so the waiting host runs only once the
    first host has stopped its command: the overlap is zero.
    """
    first = Host(lab, "web-1", pg_url, namespace)
    second = Host(lab, "web-2", pg_url, namespace)
    holder = first.apply_holding("--lease", "2s", "--kill-after", "1")
    wait_for(first.started.exists, what="the first command")
    backend = holder_backend(pg_url, namespace)
    waiter = second.apply_marking("--lock-wait", "60")
    wait_for(lambda: waiting_on_lock(pg_url), what="the second host to queue")
    fault = time.time()
    os.kill(backend, signal.SIGSTOP)
    try:
        assert holder.wait(timeout=30) == 125
    finally:
        os.kill(backend, signal.SIGCONT)
    assert holder.stderr is not None
    assert b"did not answer for 2s (--lease)" in holder.stderr.read()
    assert waiter.wait(timeout=30) == 0
    reaction = first.stop_time() - fault
    overlap = max(0.0, first.stop_time() - second.start_time())
    report("stall", reaction, overlap)
    assert overlap == 0.0
    assert reaction < 2.0 + 1.5


def test_fencing_tokens_grow_across_hosts_and_reach_the_command_and_the_log(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """RUNNER_FENCING_TOKEN: each acquisition, on any host, a larger number; logged as token."""
    hosts = [Host(lab, f"web-{n}", pg_url, namespace) for n in range(3)]
    seen = []
    for host in hosts:
        assert host.apply_marking().wait(timeout=30) == 0
        seen.append(int(host.started.read_text().split()[1]))
        lab.run("forget", *host.args(), "step")
    assert seen == sorted(seen)
    assert len(set(seen)) == 3
    logged = [json.loads(line)["token"] for h in hosts for line in (h.home / "runs.jsonl").open()]
    assert logged == seen


def test_run_lock_name_runs_on_one_host_of_the_fleet(lab: Lab, pg_url: str, namespace: str) -> None:
    """run --state URL --lock NAME: cron on every host, the job on one; the others exit 3."""
    hosts = [Host(lab, f"web-{n}", pg_url, namespace) for n in range(2)]
    release, started = lab.tmp / "release", lab.tmp / "started"
    job = ["sh", "-c", f"touch {started}; while [ ! -e {release} ]; do sleep 0.02; done"]
    first = lab.start("run", *hosts[0].args("--lock", "nightly"), "--", *job)
    wait_for(started.exists, what="the job to start")
    busy = lab.run("run", *hosts[1].args("--lock", "nightly"), "--", "true")
    assert busy.returncode == 3
    message = busy.stderr.decode()
    assert message.startswith("runner: another run in progress: run sh -c ")
    assert "(pid " in message
    assert f"on {os.uname().nodename} " in message
    release.touch()
    assert first.wait(timeout=30) == 0
    assert lab.run("run", *hosts[1].args("--lock", "nightly"), "--", "true").returncode == 0


def test_run_lock_slots_admit_n_holders(lab: Lab, pg_url: str, namespace: str) -> None:
    """--slots 2: two at once across hosts, the third exits 3."""
    release = lab.tmp / "release"
    job = ["sh", "-c", f'touch "$0"; while [ ! -e {release} ]; do sleep 0.02; done']
    hosts = [Host(lab, f"web-{n}", pg_url, namespace) for n in range(3)]
    running = [
        lab.start(
            "run", *host.args("--lock", "batch", "--slots", "2"), "--", *job, str(host.started)
        )
        for host in hosts[:2]
    ]
    wait_for(lambda: all(host.started.exists() for host in hosts[:2]), what="two jobs to start")
    third = lab.run("run", *hosts[2].args("--lock", "batch", "--slots", "2"), "--", "true")
    assert third.returncode == 3
    release.touch()
    assert [p.wait(timeout=30) for p in running] == [0, 0]


def test_a_file_lock_name_is_refused_with_a_state_url(lab: Lab, pg_url: str) -> None:
    """With a state URL, --lock takes a NAME: a path is a usage error, not a silent file lock."""
    result = lab.run("run", "--state", pg_url, "--lock", "/tmp/x.lock", "--", "true")
    assert result.returncode == 125
    assert b"lock NAME" in result.stderr


def test_sigterm_while_connecting_ends_the_runner_within_a_second(
    lab: Lab, silent_server: int
) -> None:
    """A server that never answers: SIGTERM during connect ends the runner (143) at once."""
    url = f"postgresql://runner:secret@127.0.0.1:{silent_server}/postgres"
    runner = lab.start("apply", "--state", url, "--connect-timeout", "60", "step", "--", "true")
    wait_for(lambda: _connected_to(runner.pid, silent_server), what="the connection attempt")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=10) == 143
    assert lab.applications() == []


def _connected_to(pid: int, port: int) -> bool:
    """Whether process `pid` has a TCP connection to `port` on loopback."""
    try:
        inodes = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except OSError:
        return False
    with open("/proc/net/tcp") as table:
        for row in table.read().splitlines()[1:]:
            fields = row.split()
            if int(fields[2].split(":")[1], 16) == port and f"socket:[{fields[9]}]" in inodes:
                return True
    return False


def test_sigterm_while_queued_on_the_server_ends_the_runner(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Queued on the server (a blocking advisory lock): SIGTERM ends it (143) and its wait."""
    first = Host(lab, "web-1", pg_url, namespace)
    second = Host(lab, "web-2", pg_url, namespace)
    holder = first.apply_holding()
    wait_for(first.started.exists, what="the first command")
    waiter = second.apply_marking("--lock-wait", "60")
    wait_for(lambda: waiting_on_lock(pg_url), what="the second host to queue")
    waiter.send_signal(signal.SIGTERM)
    assert waiter.wait(timeout=10) == 143
    wait_for(lambda: not waiting_on_lock(pg_url), what="the waiter to leave the queue")
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(timeout=30) == 143
    assert not second.started.exists()


def test_sigterm_while_the_marker_check_is_blocked_ends_the_runner(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """The markers table is locked by someone else: SIGTERM during the check, 143 at once."""
    import psycopg

    lab.run("apply", *Host(lab, "warm", pg_url, namespace).args(), "warm", "--", "true")
    with psycopg.connect(pg_url) as blocker:
        blocker.execute("LOCK TABLE public.runner_markers IN ACCESS EXCLUSIVE MODE")
        runner = lab.start(
            "apply", *Host(lab, "web-1", pg_url, namespace).args(), "x", "--", "true"
        )
        wait_for(
            lambda: bool(
                sql(pg_url, "SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = 'relation'")
            ),
            what="the marker check to wait",
        )
        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=10) == 143
        blocker.rollback()
    assert lab.applications() == []


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def test_a_connect_timeout_below_two_seconds_is_honoured(lab: Lab, silent_server: int) -> None:
    """libpq rounds connect_timeout up to 2 s; the runner keeps its own deadline instead."""
    url = f"postgresql://runner@127.0.0.1:{silent_server}/postgres"
    begun = time.monotonic()
    result = lab.run("apply", "--state", url, "--connect-timeout", "0.3", "step", "--", "true")
    elapsed = time.monotonic() - begun
    assert result.returncode == 125
    assert b"no answer within 0.3s (--connect-timeout)" in result.stderr
    assert elapsed < 1.9


def test_roles_with_different_search_paths_apply_once(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Regression: each role created its own runner_markers and applied the step again."""
    role = "r" + namespace
    first = lab.run("apply", "--state", pg_url, "--namespace", namespace, "step")
    sql(pg_url, f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    sql(pg_url, f"CREATE SCHEMA {role} AUTHORIZATION {role}")
    sql(pg_url, f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
    sql(pg_url, f"ALTER ROLE {role} SET search_path = {role}, public")
    other = pg_url.replace(pg_url.split("//")[1].split("@", maxsplit=1)[0], f"{role}:pw")
    second = lab.run("apply", "--state", other, "--namespace", namespace, "step")
    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    assert second.stdout == b"already applied\n"
    assert len(lab.applications()) == 1
    assert sql(pg_url, f"SELECT to_regclass('{role}.runner_markers')") == [(None,)]


def test_a_schema_that_cannot_be_created_is_one_clear_line(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """A role without CREATE: exit 125, the schema named, what to do said."""
    role = "n" + namespace
    sql(pg_url, f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    url = pg_url.replace(pg_url.split("//")[1].split("@", maxsplit=1)[0], f"{role}:pw")
    result = lab.run("apply", "--state", url, "--schema", "elsewhere", "step", "--", "true")
    assert result.returncode == 125
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1
    assert "cannot create the state tables in schema 'elsewhere'" in lines[0]
    assert lab.applications() == []


NASTY = "pa/ss?wo#rd@x%y"


def test_a_password_with_url_characters_works_and_is_never_shown(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Unencoded / ? # @ in the password: the URL works; no message, log or env carries it."""
    role = "p" + namespace
    lab.run("apply", "--state", pg_url, "--namespace", namespace, "warm", "--", "true")
    sql(pg_url, f"CREATE ROLE {role} LOGIN PASSWORD '{NASTY.replace('%', '%%')}'")
    sql(pg_url, f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
    host = pg_url.split("@", 1)[1]
    url = f"postgresql://{role}:{NASTY}@{host}"
    envfile = lab.tmp / "env"
    result = lab.run(
        "apply",
        "--namespace",
        namespace,
        "step",
        "--",
        "sh",
        "-c",
        f'echo "$RUNNER_STATE_URL" > {envfile}',
        env={"RUNNER_STATE_URL": url},
    )
    assert result.returncode == 0, result.stderr
    assert envfile.read_text().strip() == f"postgresql://{role}@{host}"
    wrong = url.replace(NASTY, NASTY + "-wrong")
    refused = lab.run("apply", "--state", wrong, "--namespace", namespace, "other")
    assert refused.returncode == 125
    everything = refused.stderr + result.stderr + lab.log.read_bytes()
    for secret in (NASTY, NASTY + "-wrong", "pa/ss", "wo#rd", "ss?wo"):
        assert secret.encode() not in everything


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:S3cret@127.0.0.1:1/db",
        "postgresql://u@127.0.0.1:1/db?password=S3cret",
        "postgresql://u@127.0.0.1:1/db?sslmode=disable&password=S3cret&connect_timeout=1",
        "postgresql://u:S3cret/x?y#z@127.0.0.1:1/db",
        "postgresql://u:S3cret@127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write",
        "postgresql://u:S3cret@[::1]:1/db",
        "postgresql://u:S3cret@127.0.0.1:notaport/db",
        "postgresql://u:S3cret@127.0.0.1:1/db?no_such_option=1",
    ],
)
def test_no_form_of_password_is_ever_printed(lab: Lab, url: str) -> None:
    """Regression: ?password=, and passwords with / ? #, were printed in errors."""
    result = lab.run("apply", "--state", url, "--connect-timeout", "2", "step", timeout=20)
    assert result.returncode == 125
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("runner: error: ")
    assert b"S3cret" not in result.stderr
    assert b"internal error" not in result.stderr


def test_a_multi_host_url_follows_to_the_host_that_answers(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """Regression: libpq's failover URL (h1,h2 and target_session_attrs) was an internal error."""
    userinfo, place = pg_url.split("//", 1)[1].split("@", 1)
    address, database = place.split("/", 1)
    url = (
        f"postgresql://{userinfo}@127.0.0.1:1,{address}/{database}?target_session_attrs=read-write"
    )
    result = lab.run("apply", "--state", url, "--namespace", namespace, "step", "--", "true")
    assert result.returncode == 0, result.stderr


def test_a_wait_without_limit_outlasts_the_lease(lab: Lab, pg_url: str, namespace: str) -> None:
    """--lock-wait inf queues as long as it takes; the lease bounds the server's answers, not
    the wait (regression: such a wait ended at the lease)."""
    first = Host(lab, "web-1", pg_url, namespace)
    second = Host(lab, "web-2", pg_url, namespace)
    release = lab.tmp / "release"
    hold = ["sh", "-c", f"touch {first.started}; while [ ! -e {release} ]; do sleep 0.02; done"]
    holder = lab.start("apply", *first.args(), "step", "--", *hold)
    wait_for(first.started.exists, what="the first command")
    waiter = second.apply_marking("--lock-wait", "inf", "--lease", "1s")
    wait_for(lambda: waiting_on_lock(pg_url), what="the second host to queue")
    deadline = time.monotonic() + 2.5
    wait_for(lambda: time.monotonic() > deadline or waiter.poll() is not None, 5, "the lease")
    assert waiter.poll() is None
    release.touch()
    assert holder.wait(timeout=30) == 0
    assert waiter.wait(timeout=30) == 0
    assert waiter.stdout is not None
    assert waiter.stdout.read() == b"already applied\n"
