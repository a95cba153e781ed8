"""The PostgreSQL lease lock at fleet scale, against a real server of the benchmark's own.

- crowd: N hosts (separate homes, one process each) run the README's fleet recipe at
  once, `run --state URL --lock nightly --lock-wait 600s -- JOB`, against a server with
  max_connections 50. Every one must succeed, one at a time; the server's connection
  count (pg_stat_activity, sampled every 20 ms) must stay at or below 20. Handover is
  the time from one job's end to the next one's start, over the handovers made while
  at least 100 hosts were still waiting (and over all of them).
- renewals: one holder for 3 leases; the server's count of updates to its lease row.
- once: N hosts whose cron fires up to 5 s apart, each `run --lock nightly --hold 9m` on a
  2 s job: exactly one runs it, the others find it held (exit 3).
- cost: `run --state URL --lock L -- true` against `run --lock FILE -- true`, straight
  to the server and through PgBouncer (transaction mode) when it is installed.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import pgserver  # noqa: E402
from tests.pgbouncer import pgbouncer  # noqa: E402

RUNNER = [sys.executable, str(ROOT / "runner.py")]
JOB = "echo start $(date +%s.%N) >> {log}; sleep {seconds}; echo end $(date +%s.%N) >> {log}"


def bench_fleet(hosts: int, repeat: int) -> dict[str, Any]:
    try:
        context = pgserver.own_server("-c max_connections=50")
        server = context.__enter__()
    except (LookupError, OSError, KeyError) as reason:
        return {"skipped": str(reason)}
    try:
        pgserver.wait_until_accepting(server.url)
        results: dict[str, Any] = {"crowd": _crowd(server.url, hosts)}
        results["once"] = _once(server.url, hosts)
        results["renewals"] = _renewals(server.url, lease=3.0, leases=3)
        results["cost"] = _cost(server.url, repeat)
    finally:
        context.__exit__(None, None, None)
    return results


def _crowd(url: str, hosts: int) -> dict[str, Any]:
    """`hosts` runners at once on one lock; connections sampled while they run."""
    import psycopg

    scratch = Path(tempfile.mkdtemp(prefix="bench-crowd-"))
    log = scratch / "timeline"
    job = JOB.format(log=log, seconds=0.05)
    env = {**os.environ, "RUNNER_STATE_URL": url}
    peak, stop = [0, 0.0], threading.Event()

    def sample() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.is_set():
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                    " AND pid <> pg_backend_pid()"
                ).fetchone()
                count = int(row[0]) if row else 0
                if count > peak[0]:
                    peak[:] = [count, time.monotonic() - begun]
                stop.wait(0.02)

    begun = time.monotonic()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    runs = []
    for n in range(hosts):
        home = scratch / f"host{n}"
        home.mkdir()
        options = ["--home", str(home), "--namespace", "bench", "--lock", "nightly"]
        runs.append(
            subprocess.Popen(
                [*RUNNER, "run", *options, "--lock-wait", "600s", "--", "sh", "-c", job],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    codes = [run.wait(timeout=3600) for run in runs]
    elapsed = time.monotonic() - begun
    stop.set()
    sampler.join()
    failures = [run.stderr.read().decode()[-300:] for run in runs if run.stderr and run.returncode]
    words = log.read_text().split()
    kinds, times = words[0::2], [float(t) for t in words[1::2]]
    serial = kinds == ["start", "end"] * hosts and times == sorted(times)
    handovers = [times[i + 1] - times[i] for i in range(1, len(times) - 1, 2)]
    crowded = handovers[: max(1, hosts - 100)]
    return {
        "hosts": hosts,
        "succeeded": codes.count(0),
        "failures": failures[:3],
        "one_at_a_time": serial,
        "max_connections": 50,
        "peak_connections": peak[0],
        "peak_at_s": peak[1],
        "seconds": elapsed,
        "handover_100_waiting": _percentiles(crowded),
        "handover_all": _percentiles(handovers),
    }


def _once(url: str, hosts: int, spread: float = 5.0) -> dict[str, Any]:
    """`hosts` runners whose cron fires up to `spread` seconds apart, each `run --lock nightly
    --hold 9m` on a 2 s job: how many ran it (one), how many found it held (the rest). The
    "hosts" share this machine's cores, where real ones would each have their own: their
    connect timeout is a minute, so that starving each other of CPU is not an outage."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-once-"))
    ran = scratch / "ran"
    env = {**os.environ, "RUNNER_STATE_URL": url}
    job = f"echo x >> {ran}; sleep 2"
    runs = []
    begun = time.monotonic()
    for n in range(hosts):
        while time.monotonic() < begun + spread * n / hosts:  # the cron schedule itself
            time.sleep(0.001)
        home = scratch / f"host{n}"
        home.mkdir()
        options = ["--home", str(home), "--namespace", "once", "--lock", "nightly"]
        options += ["--connect-timeout", "60s"]  # 300 "hosts" share this machine's cores
        runs.append(
            subprocess.Popen(
                [*RUNNER, "run", *options, "--hold", "9m", "--", "sh", "-c", job],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    said = [run.communicate(timeout=3600)[1].decode() for run in runs]
    codes = [run.returncode for run in runs]
    return {
        "errors": sorted({said[n][-200:] for n, code in enumerate(codes) if code not in (0, 3)})[
            :3
        ],
        "hosts": hosts,
        "spread_s": spread,
        "ran": ran.read_text().count("x") if ran.exists() else 0,
        "held": codes.count(3),
        "other_exits": sorted({code for code in codes if code not in (0, 3)}),
        "seconds": time.monotonic() - begun,
    }


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50_s": pick(0.5), "p99_s": pick(0.99), "count": len(ordered)}


def _renewals(url: str, lease: float, leases: int) -> dict[str, Any]:
    """Updates of one lease row while a holder keeps it for `leases` leases."""
    import psycopg

    scratch = Path(tempfile.mkdtemp(prefix="bench-renew-"))
    seconds = lease * leases
    options = ["--home", str(scratch), "--state", url, "--namespace", "renew", "--lock", "r"]
    subprocess.run(
        [*RUNNER, "run", *options, "--lease", f"{lease}s", "--", "sleep", str(seconds)],
        check=True,
    )

    def updates() -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'runner_leases'"
            ).fetchone()
            return int(row[0]) if row else 0

    deadline = time.monotonic() + 5
    count = updates()
    while count == 0 and time.monotonic() < deadline:  # the server publishes its counts lazily
        time.sleep(0.1)
        count = updates()
    return {"lease_s": lease, "held_s": seconds, "renewals": count, "per_lease": count / leases}


def _cost(url: str, repeat: int) -> dict[str, Any]:
    """Median wall time of one locked `true`: a file lock, PostgreSQL, PgBouncer."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-cost-"))
    home = ["--home", str(scratch)]

    def median(*options: str) -> float:
        times = []
        for _ in range(repeat):
            begun = time.perf_counter()
            subprocess.run([*RUNNER, "run", *home, *options, "--", "true"], check=True)
            times.append((time.perf_counter() - begun) * 1000)
        return statistics.median(times)

    figures: dict[str, Any] = {
        "file_lock_ms": median("--lock", str(scratch / "lock")),
        "postgres_ms": median("--state", url, "--lock", "cost"),
        "target_ms": 100,
    }
    try:
        with pgbouncer(url, "transaction") as bounced:
            figures["pgbouncer_ms"] = median("--state", bounced, "--lock", "cost")
    except (LookupError, OSError) as reason:
        figures["pgbouncer_skipped"] = str(reason)
    return figures
