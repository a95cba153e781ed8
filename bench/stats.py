#!/usr/bin/env python3
"""`stats` on a log as the runner writes it over months, and DuckDB on the same log.

    python3 bench/stats.py [--lines N] [--reps N]

The log is written with the runner's own encoder: a distinct run id per run, one to
three attempts (the failed ones followed by `delay_ms`), forty commands (some run
under `--name`), every timestamp distinct, durations spread from a millisecond to two
hours, timeouts and signals among the failures. Figures: the first read (no
checkpoint) and its peak RSS; DuckDB's `read_json` and `GROUP BY` over the same file,
interleaved with it, when the `duckdb` module is installed (an optional benchmark
dependency, never the runner's); a repeat after about 1,000 new lines written the same
way (an hour of runs), with 10,000 distinct commands in the history, against
`run -- true` (in wall time, and in CPU time taken
run by run, which a VM's changing speed moves less), from the folder under this Python
and, on the same hours, as the README's cron recipe runs it (`/usr/bin/python3` and a
`runner.pyz` it built), and the floor of such a repeat (what no repeat can skip,
nothing counted); how long SIGTERM takes to end a
stats, at moments sampled across a whole first read; and the peak RSS of a first read
of as many of the shortest lines the runner writes (the most that wait to be counted).
"""

from __future__ import annotations

import math
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.jsonl import attempt_line  # noqa: E402 - after the path is set
from domain.attempts import AttemptRecord  # noqa: E402

RUNNER = str(ROOT / "runner.py")
CRON_PYTHON = "/usr/bin/python3"
"""The interpreter of the README's cron recipe (`* * * * * /usr/bin/python3
/opt/runner/runner.pyz stats -q --prometheus …`): the one cron finds, not the one this
benchmark runs under (a Python built elsewhere may load its extension modules from
shared objects, each a dlopen at every start)."""
MiB = 1024 * 1024
START = 1_780_000_000.0  # June 2026: the log spans the months before the benchmark

COMMANDS = [
    ["/opt/jobs/backup.sh", "--db", "orders"],
    ["/opt/jobs/backup.sh", "--db", "users"],
    ["rsync", "-a", "--delete", "/srv/data/", "backup01:/data/"],
    ["curl", "-fsS", "--max-time", "10", "https://status.internal/health"],
    ["/usr/local/bin/report", "--format", "csv", "--to", "ops@example.com"],
    ["pg_dump", "-Fc", "-f", "/var/backups/app.dump", "app"],
    ["python3", "/opt/etl/load.py", "--since", "yesterday"],
    ["certbot", "renew", "--quiet"],
    ["/opt/deploy/release.sh", "web"],
    ["find", "/var/tmp", "-mtime", "+7", "-delete"],
]
"""Ten programs; each is run with four argument sets (40 commands)."""
NAMES = ["nightly-backup", "health-check", "etl-load", None, None, None]


def realistic_log(path: Path, lines: int, seed: int = 7) -> int:
    """Write about `lines` attempt lines as the runner would over months; return how many."""
    written = 0
    with path.open("wb") as log:
        for line in realistic_lines(lines, START, 180 * 86400, seed):
            log.write(line)
            written += 1
    return written


def realistic_lines(lines: int, start: float, span: float, seed: int) -> Iterator[bytes]:
    """About `lines` attempt lines (whole runs) as the runner writes them, the runs started
    over `span` seconds from `start`."""
    rng = random.Random(seed)
    commands = [[*base, f"--shard={n}"] for base in COMMANDS for n in range(4)]
    named = {tuple(cmd): NAMES[n % len(NAMES)] for n, cmd in enumerate(commands)}
    gap = span / lines  # seconds between two runs' starts, on average
    now, written = start, 0
    longest = math.log(2 * 3600 * 1000)
    while written < lines:
        cmd = rng.choice(commands)
        name = named[tuple(cmd)]
        run_id = f"{rng.getrandbits(64):016x}"
        attempts = rng.choices((1, 2, 3), weights=(70, 20, 10))[0]
        started = now
        for attempt in range(1, attempts + 1):
            duration = int(math.exp(rng.uniform(0, longest)))
            last = attempt == attempts
            rc, timed_out, signum = _outcome(rng, fails=not last or rng.random() < 0.1)
            delay = None if last else int(1000 * 2 ** (attempt - 1) * rng.uniform(0.5, 1.5))
            record = AttemptRecord(
                started, cmd, attempt, rc, duration, run_id, name, delay, None, timed_out
            )
            record.signal = signum
            yield attempt_line(record)
            written += 1
            started += duration / 1000 + (delay or 0) / 1000 + 0.001
        now += rng.expovariate(1 / gap) + 0.001


def short_log(path: Path, lines: int) -> int:
    """The shortest lines the runner writes (one word, a short run id, one attempt each):
    the most lines a mebibyte holds, so the most that wait to be counted at once."""
    with path.open("wb") as log:
        for n in range(lines):
            log.write(attempt_line(AttemptRecord(START + n, ["t"], 1, 0, n % 7, f"{n:x}")))
    return lines


def _outcome(rng: random.Random, *, fails: bool) -> tuple[int, bool, int | None]:
    """rc, timed out, signal: mostly exit 1, some timeouts and kills."""
    if not fails:
        return 0, False, None
    kind = rng.random()
    if kind < 0.1:
        return 124, True, None
    if kind < 0.15:
        return 128 + signal.SIGKILL, False, signal.SIGKILL
    return rng.choice((1, 1, 1, 2, 75)), False, None


def spawn(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MiB) and CPU seconds (user and system, with the children it
    waited for) of one run."""
    began = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        assert process.stderr is not None
        raise SystemExit(f"bench: {argv[2:]} failed: {process.stderr.read().decode()}")
    return took, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def duckdb_query(log: Path) -> tuple[float, float] | None:
    """Seconds DuckDB takes for the same question in a fresh process, whole and the query
    alone (after `import duckdb`); None without the module."""
    import importlib.util

    if importlib.util.find_spec("duckdb") is None:
        return None
    query = f"""
        SELECT cmd, count(DISTINCT run_id) AS runs, count(*) AS attempts,
               sum(CASE WHEN rc = 0 THEN 1 ELSE 0 END) AS ok,
               quantile_cont(duration_ms, [0.5, 0.95, 0.99]) AS q, max(ts) AS last
        FROM read_json('{log}', format = 'newline_delimited')
        GROUP BY cmd
    """
    script = (
        "import time, duckdb; began = time.perf_counter(); "
        f"duckdb.sql({query!r}).fetchall(); print(time.perf_counter() - began)"
    )
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    return time.perf_counter() - began, float(done.stdout)


def first_read(log: Path, reps: int, env: dict[str, str]) -> dict[str, Any]:
    """`stats --json` with no checkpoint, and DuckDB, interleaved, after one of each that
    is not counted (the log just written is flushed first)."""
    os.sync()
    checkpoint = log.parent / ".runs.jsonl.stats-cmd.json"
    ours, rss, theirs, query = [], [], [], []
    for rep in range(reps + 1):
        checkpoint.unlink(missing_ok=True)
        took, peak, _ = spawn([sys.executable, RUNNER, "stats", "--json"], env)
        duck = duckdb_query(log)
        if rep == 0:
            continue
        ours.append(took)
        rss.append(peak)
        if duck is not None:
            theirs.append(duck[0])
            query.append(duck[1])
    found: dict[str, Any] = {
        "first_read_s": statistics.median(ours),
        "first_read_rss_mib": max(rss),
        "first_read_target_s": 2.5,
        "rss_target_mib": 64,
    }
    if theirs:
        found["duckdb_s"] = statistics.median(theirs)
        found["duckdb_query_s"] = statistics.median(query)
        found["duckdb_ratio"] = found["first_read_s"] / found["duckdb_s"]
    return found


def recipe(scratch: Path) -> list[str] | None:
    """The runner as the cron recipe runs it: CRON_PYTHON and a runner.pyz that Python built
    (its bytecode in it, as `make dist` builds it); None where there is no such Python of
    3.10 or later."""
    if not os.access(CRON_PYTHON, os.X_OK):
        return None
    recent = "import sys; sys.exit(sys.version_info < (3, 10))"
    if subprocess.run([CRON_PYTHON, "-c", recent], check=False).returncode != 0:
        return None
    zipped = scratch / "recipe" / "runner.pyz"
    zipped.parent.mkdir(exist_ok=True)
    build = [CRON_PYTHON, str(ROOT / "packaging" / "build_zipapp.py"), str(zipped)]
    subprocess.run(build, check=True, capture_output=True)
    return [CRON_PYTHON, str(zipped)]


def python_version(python: str) -> str:
    done = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


KEPT = (".runs.jsonl.stats-cmd.json", "runner.prom")
"""What a repeat changes in the home: its checkpoint and its textfile."""


def keep(home: Path) -> None:
    """Hard links to the checkpoint and the textfile as they are: put back, they are the
    same files (inode, size, time), so the textfile is still the one the checkpoint knows."""
    for name in KEPT:
        (home / f"{name}.kept").unlink(missing_ok=True)
        os.link(home / name, home / f"{name}.kept")


def put_back(home: Path) -> None:
    """The kept checkpoint and textfile back in place."""
    for name in KEPT:
        os.replace(home / f"{name}.kept", home / name)


def repeat(
    home: Path,
    reps: int,
    env: dict[str, str],
    commands: int = 10_000,
    cron: list[str] | None = None,
) -> dict[str, Any]:
    """stats -q --prometheus (the cron recipe) after about 1,000 new lines (an hour of runs
    as `realistic_lines` writes them: retries, failures, durations of a millisecond to
    two hours), over a history with `commands` distinct command lines, against the
    start-up of `run -- true`. From the folder under this Python; and, with `cron` (see
    `recipe`), also as the cron recipe runs it, on the same hour and the same checkpoint
    (put back between the two); the forms take turns going first, for `run` too."""
    log = home / "runs.jsonl"
    with log.open("ab") as handle:
        for n in range(commands):
            record = AttemptRecord(START + 200 * 86400 + n, ["echo", f"{n}"], 1, 0, 3, f"d{n}")
            handle.write(attempt_line(record))
    prom = home / "runner.prom"
    folder = [sys.executable, RUNNER]
    forms = [folder] if cron is None else [folder, cron]
    spawn([*folder, "stats", "-q", "--prometheus", str(prom)], env)
    took_by: dict[int, list[float]] = {place: [] for place in range(len(forms))}
    run_by: dict[int, list[float]] = {place: [] for place in range(len(forms))}
    cpu_by: dict[int, list[float]] = {place: [] for place in range(len(forms))}
    new_lines: list[int] = []
    for rep in range(reps):
        hour = START + 201 * 86400 + rep * 3600
        added = b"".join(realistic_lines(1000, hour, 3600, seed=1000 + rep))
        new_lines.append(added.count(b"\n"))
        with log.open("ab") as handle:
            handle.write(added)
        order = list(range(len(forms)))
        if rep % 2:
            order.reverse()
        if len(forms) > 1:
            keep(home)
        used: dict[int, float] = {}
        for turn, place in enumerate(order):
            if turn:
                put_back(home)
            took, _, used[place] = spawn(
                [*forms[place], "stats", "-q", "--prometheus", str(prom)], env
            )
            took_by[place].append(took)
        for place in order:
            took, _, started = spawn([*forms[place], "run", "--", "true"], env)
            run_by[place].append(took)
            cpu_by[place].append(used[place] / started)
    start_up = statistics.median(run_by[0])
    ours = took_by[0]
    found = {
        "repeat_commands": commands,
        "repeat_new_lines": round(statistics.median(new_lines)),
        "repeat_ms": statistics.median(ours) * 1000,
        "run_start_up_ms": start_up * 1000,
        "repeat_ratio": statistics.median(ours) / start_up,
        "repeat_mean_ratio": statistics.mean(ours) / start_up,
        "repeat_cpu_ratio": statistics.median(cpu_by[0]),
        "repeat_target_ratio": 1.5,
        "repeat_target_ratio_many": 2.0,
        "checkpoint_kib": (home / ".runs.jsonl.stats-cmd.json").stat().st_size / 1024,
    }
    if cron is not None:
        cron_start_up = statistics.median(run_by[1])
        found["cron_repeat_ms"] = statistics.median(took_by[1]) * 1000
        found["cron_run_start_up_ms"] = cron_start_up * 1000
        found["cron_repeat_ratio"] = statistics.median(took_by[1]) / cron_start_up
        found["cron_repeat_cpu_ratio"] = statistics.median(cpu_by[1])
    return found


def signal_latency(log: Path, env: dict[str, str], whole_s: float, moments: int) -> float:
    """The longest time from SIGTERM to the end of a first read, over `moments` moments
    spread across it."""
    checkpoint = log.parent / ".runs.jsonl.stats-cmd.json"
    longest = 0.0
    for k in range(moments):
        checkpoint.unlink(missing_ok=True)
        process = subprocess.Popen(
            [sys.executable, RUNNER, "stats", "-q"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(whole_s * k / moments)
        if process.poll() is not None:
            continue
        sent = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        process.wait()
        longest = max(longest, time.perf_counter() - sent)
    return longest


def bench_stats(lines: int, reps: int, env: dict[str, str], scratch: Path) -> dict[str, Any]:
    home = scratch / "stats-home"
    home.mkdir(exist_ok=True)
    log = home / "runs.jsonl"
    written = realistic_log(log, lines)
    local = {**env, "RUNNER_HOME": str(home)}
    found: dict[str, Any] = {"lines": written, "log_mib": log.stat().st_size / MiB}
    found.update(first_read(log, reps, local))
    found["sigterm_longest_s"] = signal_latency(
        log, local, found["first_read_s"], 4 if reps == 1 else 12
    )
    short_home = scratch / "stats-short"
    short_home.mkdir(exist_ok=True)
    found["short_lines"] = short_log(short_home / "runs.jsonl", lines)
    short_env = {**env, "RUNNER_HOME": str(short_home)}
    found["short_rss_mib"] = max(
        spawn([sys.executable, RUNNER, "stats", "-q"], short_env)[1] for _ in range(2)
    )
    cron = recipe(scratch)
    if cron is not None:
        found["cron_python"] = f"{CRON_PYTHON} {python_version(CRON_PYTHON)}"
    plain = repeat(home, 3 if reps == 1 else 21, local, commands=0, cron=cron)
    found["repeat_plain_ms"] = plain["repeat_ms"]
    found["repeat_plain_ratio"] = plain["repeat_ratio"]
    found["repeat_plain_mean_ratio"] = plain["repeat_mean_ratio"]
    found["repeat_plain_cpu_ratio"] = plain["repeat_cpu_ratio"]
    if cron is not None:
        found["cron_repeat_plain_ratio"] = plain["cron_repeat_ratio"]
        found["cron_repeat_plain_cpu_ratio"] = plain["cron_repeat_cpu_ratio"]
    found.update(repeat(home, 3 if reps == 1 else 21, local, cron=cron))
    return found


def rows(found: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The figures as rows of metric, value, target (for bench/run.py's table)."""
    table = [
        (
            f"stats first read, {found['lines']:,} realistic lines ({found['log_mib']:.0f} MiB)",
            f"{found['first_read_s']:.2f} s",
            f"<= {found['first_read_target_s']} s",
        ),
        (
            "... its peak RSS (largest process)",
            f"{found['first_read_rss_mib']:.1f} MiB",
            f"<= {found['rss_target_mib']} MiB",
        ),
        (
            f"... peak RSS over {found['short_lines']:,} of the shortest lines",
            f"{found['short_rss_mib']:.1f} MiB",
            f"<= {found['rss_target_mib']} MiB",
        ),
    ]
    if "duckdb_s" in found:
        table.append(
            (
                "... DuckDB read_json + GROUP BY, same log: process / query",
                f"{found['duckdb_s']:.2f} / {found['duckdb_query_s']:.2f} s",
                "",
            )
        )
        table.append(("... stats / DuckDB (processes)", f"{found['duckdb_ratio']:.1f}x", "2.5x"))
    table += [
        (
            "... SIGTERM to exit, worst of sampled moments",
            f"{found['sigterm_longest_s']:.3f} s",
            "< 1 s",
        ),
        (
            f"stats -q --prometheus again, {found['repeat_new_lines']:,} new lines / run",
            f"{found['repeat_plain_ms']:.1f} ms ({found['repeat_plain_ratio']:.2f}x)",
            f"<= {found['repeat_target_ratio']}x",
        ),
        (
            f"stats -q --prometheus again, {found['repeat_new_lines']:,} new lines, "
            f"{found['repeat_commands']:,} more commands",
            f"{found['repeat_ms']:.1f} ms",
            "",
        ),
        (
            "... / run -- true start-up",
            f"{found['repeat_ratio']:.2f}x",
            f"<= {found['repeat_target_ratio_many']}x",
        ),
        (
            "... the mean over the hours, 40 / 10,000 more commands",
            f"{found['repeat_plain_mean_ratio']:.2f}x / {found['repeat_mean_ratio']:.2f}x",
            "",
        ),
        (
            "... the same in CPU time (user and system), 40 / 10,000 more commands",
            f"{found['repeat_plain_cpu_ratio']:.2f}x / {found['repeat_cpu_ratio']:.2f}x",
            "",
        ),
    ]
    if "cron_python" in found:
        table.append(
            (
                f"... as the cron recipe runs it ({found['cron_python']}, runner.pyz), "
                "40 / 10,000 more commands",
                f"{found['cron_repeat_plain_ratio']:.2f}x / {found['cron_repeat_ratio']:.2f}x "
                f"(CPU {found['cron_repeat_plain_cpu_ratio']:.2f}x / "
                f"{found['cron_repeat_cpu_ratio']:.2f}x)",
                f"<= {found['repeat_target_ratio']}x / {found['repeat_target_ratio_many']}x",
            )
        )
    return table


def main() -> int:
    import argparse
    import json
    import shutil
    import tempfile

    parser = argparse.ArgumentParser(description="stats on a realistic log, and DuckDB.")
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=5)
    options = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="runner-bench-stats-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    try:
        print(json.dumps(bench_stats(options.lines, options.reps, env, scratch), indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
