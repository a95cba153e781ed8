"""The fleet's first contact with a server: URLs, passwords, roles, schemas, timeouts."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.e2e.test_fleet import sql
from tests.procs import wait_for


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


def _refusing() -> str:
    """The URL of a port nothing listens on: every connection there is refused."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    return f"postgresql://runner@127.0.0.1:{port}/postgres"


def test_a_connect_timeout_below_two_seconds_is_honoured(lab: Lab, silent_server: int) -> None:
    """libpq rounds connect_timeout up to 2 s; the runner keeps its own deadline instead."""
    url = f"postgresql://runner@127.0.0.1:{silent_server}/postgres"
    begun = time.monotonic()
    result = lab.run("apply", "--state", url, "--connect-timeout", "0.3", "step", "--", "true")
    elapsed = time.monotonic() - begun
    assert result.returncode == 125
    assert b"no answer within 0.3s (--connect-timeout)" in result.stderr
    begun = time.monotonic()
    refused = lab.run("apply", "--state", _refusing(), "--connect-timeout", "0.05", "step")
    start_up = time.monotonic() - begun  # the same runner, as slow to start, barely waiting
    assert refused.returncode == 125
    assert elapsed - start_up < 1.7  # 0.3 s, far from libpq's 2 s


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


def test_a_standby_is_named_as_such(lab: Lab, pg_url: str, namespace: str) -> None:
    """A server that takes no writes (a standby; here a role whose transactions are read-only):
    'read-only standby', not 'grant this role CREATE'."""
    role = "s" + namespace
    lab.run("apply", "--state", pg_url, "--namespace", namespace, "warm", "--", "true")
    sql(pg_url, f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
    sql(pg_url, f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
    sql(pg_url, f"ALTER ROLE {role} SET default_transaction_read_only = on")
    url = pg_url.replace(pg_url.split("//")[1].split("@", maxsplit=1)[0], f"{role}:pw")
    result = lab.run("apply", "--state", url, "--namespace", namespace, "step", "--", "true")
    assert result.returncode == 125
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1
    assert "it is a read-only standby" in lines[0]
    assert "target_session_attrs=read-write" in lines[0]
    assert lab.applications() == []


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:S3cret@127.0.0.1:1/db",
        "postgresql://u@127.0.0.1:1/db?pass%77ord=S3cret",
        "postgresql://u@127.0.0.1:1/db?sslpassword=S3cret",
        "postgresql://u@127.0.0.1:1/db?application_name=a@b&password=S3cret",
    ],
)
def test_a_command_without_a_lock_never_sees_the_state_urls_password(lab: Lab, url: str) -> None:
    """Regression: RUNNER_STATE_URL reached a command as it was unless the run took a lock;
    `pass%77ord=` and `sslpassword=` were not scrubbed anywhere."""
    envfile = lab.tmp / "env"
    script = f'echo "$RUNNER_STATE_URL" > {envfile}'
    result = lab.run("run", "--", "sh", "-c", script, env={"RUNNER_STATE_URL": url})
    assert result.returncode == 0, result.stderr
    seen = envfile.read_text()
    assert "S3cret" not in seen
    assert seen.startswith("postgresql://u@127.0.0.1:1/db")


def test_a_command_under_a_lock_never_sees_the_state_urls_password(
    lab: Lab, pg_url: str, namespace: str
) -> None:
    """run --lock NAME with RUNNER_STATE_URL: the command gets the URL without its password."""
    envfile = lab.tmp / "env"
    password = pg_url.split("//")[1].split("@", maxsplit=1)[0].split(":")[1]
    script = f'echo "$RUNNER_STATE_URL" > {envfile}'
    result = lab.run(
        "run",
        "--namespace",
        namespace,
        "--lock",
        "job",
        "--",
        "sh",
        "-c",
        script,
        env={"RUNNER_STATE_URL": pg_url + "?sslpassword=S3cret"},
    )
    assert result.returncode == 0, result.stderr
    seen = envfile.read_text()
    assert password not in seen
    assert "S3cret" not in seen
    assert seen.startswith("postgresql://runner@127.0.0.1:")


def test_an_at_sign_in_the_query_is_not_the_user_separator(lab: Lab, pg_url: str) -> None:
    """`?application_name=a@b` leaves the user and host as written."""
    result = lab.run(
        "apply", "--state", pg_url + "?application_name=a@b", "--dry-run", "step", "--", "true"
    )
    assert result.returncode == 0, result.stderr


SILENT_DNS = """
import socket, sys
server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind((sys.argv[1], 53))
print("ready", flush=True)
while True:
    server.recvfrom(4096)
"""


@pytest.fixture
def silent_dns(lab: Lab) -> Iterator[list[str]]:
    """A prefix that runs a command where names are looked up at a DNS server that never
    answers (a mount namespace with its own resolv.conf). Needs root and unshare."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a private resolv.conf needs root and unshare")
    address = f"127.0.0.{int(lab.token[:2], 16) % 200 + 20}"
    server = subprocess.Popen([sys.executable, "-c", SILENT_DNS, address], stdout=subprocess.PIPE)
    assert server.stdout is not None
    assert server.stdout.readline() == b"ready\n"
    resolv = lab.tmp / "resolv.conf"
    resolv.write_text(f"nameserver {address}\noptions timeout:5 attempts:4\n")
    script = f'mount --bind {resolv} /etc/resolv.conf && exec "$@"'
    try:
        yield ["unshare", "-m", "sh", "-c", script, "sh"]
    finally:
        server.kill()
        server.wait()


def test_name_lookup_obeys_connect_timeout_and_signals(lab: Lab, silent_dns: list[str]) -> None:
    """Regression: a silent DNS server held the runner 20 s, deaf to SIGTERM for 18.7 s."""
    url = "postgresql://runner@db.fleet.invalid:5432/postgres"
    command = [*silent_dns, sys.executable, RUNNER, "apply", "--state", url]
    begun = time.monotonic()
    timed = subprocess.run(
        [*command, "--connect-timeout", "1", "step", "--", "true"],
        env=lab.env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert timed.returncode == 125
    assert b"no answer within 1s (--connect-timeout) (looking up the host name)" in timed.stderr
    assert time.monotonic() - begun < 15
    waiting = subprocess.Popen(
        [*command, "--connect-timeout", "60", "step", "--", "true"], env=lab.env
    )
    wait_for(lambda: _looking_up(waiting.pid), what="the lookup to begin")
    waiting.send_signal(signal.SIGTERM)
    assert waiting.wait(timeout=10) == 143
    assert lab.applications() == []


def _looking_up(pid: int) -> bool:
    """Whether the runner (unshare execs it as `pid`) has started its lookup thread: a
    second task in /proc."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False
