"""A throwaway PgBouncer on loopback in front of a test server, as fleets reach PostgreSQL.

Its configuration is PgBouncer's default but for what must be said: where to listen,
which database to serve, how clients log in, and the pool mode under test.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from tests.pgserver import free_port


@contextmanager
def pgbouncer(server_url: str, pool_mode: str) -> Iterator[str]:
    """Start PgBouncer before `server_url` in `pool_mode`; yield the URL that goes through it."""
    program = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not os.path.exists(program):
        raise LookupError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
    parts = urlsplit(server_url)
    folder = tempfile.mkdtemp(prefix="runner-pgbouncer-")
    port = free_port()
    with open(f"{folder}/userlist.txt", "w") as handle:
        handle.write(f'"{parts.username}" "{parts.password}"\n')
    with open(f"{folder}/pgbouncer.ini", "w") as handle:
        handle.write(
            "[databases]\n"
            f"postgres = host={parts.hostname} port={parts.port} dbname=postgres\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
            f"auth_file = {folder}/userlist.txt\npool_mode = {pool_mode}\n"
            f"logfile = {folder}/log\n"
        )
    as_user: list[str] = []
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        shutil.chown(folder, "postgres")
        for name in os.listdir(folder):
            shutil.chown(f"{folder}/{name}", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    process = subprocess.Popen(
        [*as_user, program, f"{folder}/pgbouncer.ini"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, process, folder)
        yield f"postgresql://{parts.username}:{parts.password}@127.0.0.1:{port}/postgres"
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def _wait_listening(port: int, process: subprocess.Popen[bytes], folder: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                log = f"{folder}/log"
                said = ""
                if os.path.exists(log):
                    with open(log, errors="replace") as handle:
                        said = handle.read()[-2000:]
                raise OSError(f"pgbouncer did not start: {said}") from None
            time.sleep(0.05)
