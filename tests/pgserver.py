"""A throwaway PostgreSQL server on loopback for the tests, from the distribution's packages.

Set RUNNER_TEST_PG_URL to use a server of your own instead. When no server can
be had, the PostgreSQL tests skip with the reason, except under CI=true, where
they fail: CI must run them.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

USER = "runner"


def find_tool(name: str) -> str | None:
    """A PostgreSQL server program from PATH or Debian's versioned folders, newest first."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return candidates[0] if candidates else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """A running server of the tests' own: its URL and port, and ways to stop and start it."""

    def __init__(self, url: str, port: int, control: list[str]) -> None:
        self.url = url
        self.port = port
        self.control = control

    def restart(self) -> None:
        _quietly([*self.control, "-m", "immediate", "restart"])

    def stop(self) -> None:
        _quietly([*self.control, "-m", "immediate", "stop"])

    def start(self) -> None:
        _quietly([*self.control, "start"])


@contextmanager
def server() -> Iterator[str]:
    """Start a server on 127.0.0.1 with password authentication; yield its URL; stop it."""
    given = os.environ.get("RUNNER_TEST_PG_URL")
    if given:
        yield given
        return
    with own_server() as started:
        yield started.url


@contextmanager
def own_server(settings: str = "") -> Iterator[Server]:
    """A server of this test's own (never a given one), which the test may restart.

    `settings` are more server options (`-c max_connections=50`).
    """
    initdb, pg_ctl = find_tool("initdb"), find_tool("pg_ctl")
    if not initdb or not pg_ctl:
        raise LookupError("PostgreSQL server programs (initdb, pg_ctl) are not installed")
    as_user: list[str] = []
    folder = tempfile.mkdtemp(prefix="runner-pg-")
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    password = secrets.token_hex(12)
    data, pwfile, log = f"{folder}/data", f"{folder}/pw", f"{folder}/log"
    with open(pwfile, "w") as handle:
        handle.write(password + "\n")
    if as_user:
        shutil.chown(pwfile, "postgres")
    port = free_port()
    _quietly(
        [
            *as_user,
            initdb,
            "-D",
            data,
            "-U",
            USER,
            "--pwfile",
            pwfile,
            "-A",
            "scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
        ]
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off {settings}"
    control = [*as_user, pg_ctl, "-D", data, "-o", options, "-l", log, "-w", "-t", "60"]
    _quietly([*control, "start"])
    try:
        yield Server(f"postgresql://{USER}:{password}@127.0.0.1:{port}/postgres", port, control)
    finally:
        subprocess.run(
            [*as_user, pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        shutil.rmtree(folder, ignore_errors=True)


def _quietly(argv: list[str]) -> None:
    """Run a setup step; its output is shown only when it fails."""
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise OSError(f"{' '.join(argv)} failed: {result.stdout}{result.stderr}".strip())


def wait_until_accepting(url: str, timeout: float = 30) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
