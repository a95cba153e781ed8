"""The PostgreSQL lock under faults: how soon the command hears that its lock is gone.

A real server of the benchmark's own (tests/pgserver.py). Each repetition starts an
apply whose command notes the instant SIGTERM reaches it, then ends the lock's
session on the server (pg_terminate_backend, or an immediate restart) and takes
the time from the fault to that instant. Target: 100 ms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.postgres.lock import advisory_key  # noqa: E402
from tests import pgserver  # noqa: E402

HOLD = """
import os, signal, sys, time
def stop(signum, frame):
    open(sys.argv[2], "w").write(repr(time.time()))
    os._exit(143)
signal.signal(signal.SIGTERM, stop)
open(sys.argv[1], "w").write("started")
while True:
    signal.pause()
"""


def bench_lost_lock(terminations: int, restarts: int) -> dict[str, Any]:
    """Fault to SIGTERM at the command, in ms: median and worst, per kind of fault."""
    import psycopg

    try:
        server_context = pgserver.own_server()
        server = server_context.__enter__()
    except (LookupError, OSError, KeyError) as reason:
        return {"skipped": str(reason)}
    try:
        pgserver.wait_until_accepting(server.url)
        with psycopg.connect(server.url, autocommit=True) as conn:

            def terminate(namespace: str) -> None:
                key = advisory_key("apply", namespace) & 0xFFFFFFFFFFFFFFFF
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
                    " AND granted AND classid = %s AND objid = %s",
                    (key >> 32, key & 0xFFFFFFFF),
                )

            kill = [_reaction(server.url, terminate) for _ in range(terminations)]
        restart = [_reaction(server.url, lambda _: server.restart()) for _ in range(restarts)]
    finally:
        server_context.__exit__(None, None, None)
    return {
        "terminate_ms": _summary(kill),
        "restart_ms": _summary(restart),
        "target_ms": 100,
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values), "runs": len(values)}


def _reaction(url: str, fault: Any) -> float:
    scratch = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    started, stopped = scratch / "started", scratch / "stopped"
    namespace = "b" + os.urandom(6).hex()
    command = [sys.executable, "-c", HOLD, str(started), str(stopped)]
    state = ["--state", url, "--namespace", namespace]
    runner = [sys.executable, str(ROOT / "runner.py"), "apply", "--home", str(scratch)]
    holder = subprocess.Popen(
        [*runner, *state, "step", "--", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not started.exists():
        if time.monotonic() > deadline:
            holder.kill()
            raise RuntimeError("the apply's command did not start")
        time.sleep(0.005)
    begun = time.time()
    fault(namespace)
    holder.wait(timeout=60)
    return (float(stopped.read_text()) - begun) * 1000
