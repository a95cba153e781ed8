#!/usr/bin/env python3
"""Benchmarks of runner.py against the floor for any Python runner and coreutils.

    python3 bench/run.py            # full: about two minutes, 2 GB streamed, 100,000 markers
    python3 bench/run.py --quick    # small sizes, few repetitions: proves it still works

Every comparison interleaves its variants repetition by repetition and reports
medians, so that drift of the machine falls on all of them alike. It prints a
table and writes the same figures as JSON (bench/results.json by default).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RUNNER = str(ROOT / "runner.py")
PYTHON = sys.executable
FLOOR = [PYTHON, "-c", "import subprocess; subprocess.run(['true'])"]
MiB = 1024 * 1024


def spawn(argv: list[str], env: dict[str, str]) -> tuple[float, int, float]:
    """Run argv with its output on /dev/null; seconds, exit code, and peak RSS in MiB."""
    null = [
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    start = time.perf_counter()
    pid = os.posix_spawnp(
        argv[0], argv, env, file_actions=null, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ)
    )
    _, status, usage = os.wait4(pid, 0)
    return time.perf_counter() - start, os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024


def medians(
    variants: dict[str, list[str]], reps: int, env: dict[str, str]
) -> dict[str, dict[str, float]]:
    """Interleave the variants `reps` times; the median time (ms) and peak RSS of each."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    rss: dict[str, float] = dict.fromkeys(variants, 0.0)
    for _ in range(reps):
        for name, argv in variants.items():
            seconds, _, peak = spawn(argv, env)
            times[name].append(seconds)
            rss[name] = max(rss[name], peak)
    return {
        name: {"median_ms": statistics.median(values) * 1000, "peak_rss_mib": rss[name]}
        for name, values in times.items()
    }


def runner(*args: str) -> list[str]:
    return [PYTHON, RUNNER, *args]


def bench_startup(reps: int, env: dict[str, str], scratch: Path) -> dict[str, Any]:
    """`run -- true` against the floor; also from the zipapp (`make dist`), and from a copy
    that may not write bytecode."""
    copy = scratch / "no-bytecode"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".*", "__pycache__", "tests"))
    cold = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    zipped = scratch / "runner.pyz"
    subprocess.run([PYTHON, str(ROOT / "packaging" / "build_zipapp.py"), str(zipped)], check=True)
    spawn(runner("run", "--", "true"), env)
    result = medians(
        {
            "runner": runner("run", "--", "true"),
            "zipapp": [PYTHON, str(zipped), "run", "--", "true"],
            "python_floor": FLOOR,
            "coreutils_timeout": ["timeout", "10", "true"],
            "runner_no_site": [PYTHON, "-S", RUNNER, "run", "--", "true"],
            "python_floor_no_site": [PYTHON, "-S", *FLOOR[1:]],
        },
        reps,
        env,
    )
    without = [PYTHON, str(copy / "runner.py"), "run", "--", "true"]
    result.update(medians({"runner_without_bytecode": without}, reps, cold))
    ratio = result["runner"]["median_ms"] / result["python_floor"]["median_ms"]
    return {**result, "ratio_to_floor": ratio, "target_ratio": 1.10}


def bench_streaming(sizes: list[int], reps: int, env: dict[str, str]) -> dict[str, Any]:
    overhead = medians({"runner": runner("run", "--", "true"), "bare": ["true"]}, reps, env)
    start_up = overhead["runner"]["median_ms"] - overhead["bare"]["median_ms"]
    rows = []
    for size in sizes:
        command = ["head", "-c", str(size), "/dev/zero"]
        idle = runner("run", "--idle-timeout", "1h", "--", *command)
        found = medians(
            {
                "runner": runner("run", "--", *command),
                "idle": idle,
                "bare": command,
                "bare_pipe": _into_a_pipe(command),
                "runner_pipe": _into_a_pipe(runner("run", "--", *command)),
                "idle_pipe": _into_a_pipe(idle),
            },
            reps,
            env,
        )
        extra = found["runner"]["median_ms"] - found["bare"]["median_ms"]
        rows.append(
            {
                "bytes": size,
                "bare_ms": found["bare"]["median_ms"],
                "runner_ms": found["runner"]["median_ms"],
                "ratio": found["runner"]["median_ms"] / found["bare"]["median_ms"],
                "idle_timeout_ratio": found["idle"]["median_ms"] / found["bare"]["median_ms"],
                "pipe_bare_ms": found["bare_pipe"]["median_ms"],
                "pipe_runner_ms": found["runner_pipe"]["median_ms"],
                "pipe_idle_ms": found["idle_pipe"]["median_ms"],
                "pipe_idle_timeout_ratio": (
                    found["idle_pipe"]["median_ms"] / found["bare_pipe"]["median_ms"]
                ),
                "extra_ms": extra,
                "extra_net_of_start_up_ms": extra - start_up,
                "runner_peak_rss_mib": found["runner"]["peak_rss_mib"],
            }
        )
    return {"start_up_ms": start_up, "sizes": rows, "target_rss_mib": 30}


def _into_a_pipe(argv: list[str]) -> list[str]:
    """argv with its stdout into a pipe that cat empties, as cron's mail pipe or a pod's."""
    return ["sh", "-c", f"{shlex.join(argv)} | cat >/dev/null"]


def bench_timeout(reps: int, env: dict[str, str], scratch: Path, limit: float) -> dict[str, Any]:
    start_up = medians({"runner": runner("run", "--", "true")}, reps, env)["runner"]["median_ms"]
    ends = [
        spawn(runner("run", "--timeout", str(limit), "--", "sleep", "30"), env)[0]
        for _ in range(reps)
    ]
    latencies = []
    for rep in range(reps):
        ready = scratch / f"ready{rep}"
        script = f": > {ready}; exec sleep 30"
        process = subprocess.Popen(
            runner("run", "--", "sh", "-c", script), env=env, stderr=subprocess.DEVNULL
        )
        _wait_until(ready.exists)
        sent = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        process.wait()
        latencies.append((time.perf_counter() - sent) * 1000)
    overshoot = statistics.median(ends) * 1000 - limit * 1000 - start_up
    return {
        "timeout_s": limit,
        "overshoot_net_of_start_up_ms": overshoot,
        "sigterm_to_exit_ms": statistics.median(latencies),
        "target_ms": 50,
    }


def bench_contention(runners: int, env: dict[str, str], scratch: Path) -> dict[str, Any]:
    applied = scratch / "applied.log"
    cmd = ["sh", "-c", f"echo x >> {applied}; sleep 0.2"]
    start = time.perf_counter()
    group = [_quiet(runner("apply", "shared", "--", *cmd), env) for _ in range(runners)]
    codes = [process.wait() for process in group]
    wall = (time.perf_counter() - start) * 1000
    log = Path(env["RUNNER_HOME"]) / "runs.jsonl"
    log.unlink(missing_ok=True)
    group = [
        _quiet(runner("run", "--retries", "2", "--backoff", "0", "--", "false"), env)
        for _ in range(runners)
    ]
    for process in group:
        process.wait()
    lines = log.read_bytes().splitlines()
    whole = sum(1 for line in lines if _is_json(line))
    return {
        "runners": runners,
        "applications": len(applied.read_text().splitlines()),
        "exit_codes": {str(code): codes.count(code) for code in sorted(set(codes))},
        "apply_wall_ms": wall,
        "log_lines": len(lines),
        "log_lines_whole": whole,
        "log_lines_expected": runners * 3,
    }


def bench_state(markers: int, log_bytes: int, reps: int, env: dict[str, str]) -> dict[str, Any]:
    """apply with few and with many markers, run with an empty and a big log, interleaved."""
    homes = {}
    for label, count in (("few", 10), ("many", markers)):
        home = Path(tempfile.mkdtemp(prefix="bench-state-"))
        (home / "state").mkdir(mode=0o700)
        for n in range(count):
            (home / "state" / f"old{n}.done").touch()
        homes[f"apply_with_{label}_markers_ms"] = home
    for label, size in (("empty", 0), ("big", log_bytes)):
        home = Path(tempfile.mkdtemp(prefix="bench-log-"))
        _fill_log(home / "runs.jsonl", size)
        homes[f"run_with_{label}_log_ms"] = home
    times: dict[str, list[float]] = {key: [] for key in homes}
    for rep in range(reps):
        for key, home in homes.items():
            local = {**env, "RUNNER_HOME": str(home)}
            argv = (
                runner("apply", f"new{rep}", "--", "true")
                if "apply" in key
                else runner("run", "--", "true")
            )
            times[key].append(spawn(argv, local)[0])
    results: dict[str, Any] = {key: statistics.median(v) * 1000 for key, v in times.items()}
    results["markers"] = markers
    results["log_bytes"] = log_bytes
    return results


def _quiet(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _fill_log(path: Path, size: int) -> None:
    line = b'{"ts":"2026-01-01T00:00:00.000+00:00","cmd":["true"],"attempt":1,"rc":0}\n'
    block = line * (MiB // len(line))
    with path.open("wb") as handle:
        while handle.tell() < size:
            handle.write(block)


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _wait_until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit("bench: a command did not start in time")
        time.sleep(0.001)


def machine() -> dict[str, Any]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "date": time.strftime("%Y-%m-%d"),
    }


def table(results: dict[str, Any]) -> list[str]:
    """The figures as rows of metric, value, target."""
    s = results["startup"]
    rows = [
        ("start-up: runner run -- true", f"{_ms(s['runner'])} ms", ""),
        ("start-up: python subprocess.run floor", f"{_ms(s['python_floor'])} ms", ""),
        ("start-up: coreutils timeout 10 true", f"{_ms(s['coreutils_timeout'])} ms", ""),
        ("start-up: runner / floor", f"{s['ratio_to_floor']:.3f}x", "<= 1.10x"),
        ("start-up: runner.pyz run -- true", f"{_ms(s['zipapp'])} ms", ""),
        ("start-up: runner, bytecode not cached", f"{_ms(s['runner_without_bytecode'])} ms", ""),
        (
            "start-up without site: runner / floor",
            f"{_ms(s['runner_no_site'])} / {_ms(s['python_floor_no_site'])} ms",
            "",
        ),
    ]
    stream = results["streaming"]
    for row in stream["sizes"]:
        size = f"{row['bytes'] / MiB:,.0f} MiB"
        rows += [
            (
                f"stream {size}: bare / runner",
                f"{row['bare_ms']:.0f} / {row['runner_ms']:.0f} ms",
                "",
            ),
            (
                f"stream {size}: extra net of start-up",
                f"{row['extra_net_of_start_up_ms']:+.1f} ms",
                "~0",
            ),
            (f"stream {size}: runner peak RSS", f"{row['runner_peak_rss_mib']:.1f} MiB", "< 30"),
            (
                f"stream {size} into a pipe: bare / runner / --idle-timeout 1h",
                f"{row['pipe_bare_ms']:.0f} / {row['pipe_runner_ms']:.0f} / "
                f"{row['pipe_idle_ms']:.0f} ms ({row['pipe_idle_timeout_ratio']:.2f}x)",
                "<= 1.10x",
            ),
            (
                f"stream {size} to /dev/null with --idle-timeout 1h (relayed): against bare",
                f"{row['idle_timeout_ratio']:.2f}x",
                "",
            ),
        ]
    t = results["timeout"]
    rows += [
        (
            f"--timeout {t['timeout_s']}: overshoot",
            f"{t['overshoot_net_of_start_up_ms']:.1f} ms",
            "< 50",
        ),
        ("SIGTERM to exit", f"{t['sigterm_to_exit_ms']:.1f} ms", "< 50"),
    ]
    c = results["contention"]
    rows += [
        (f"{c['runners']} concurrent applies: applications", str(c["applications"]), "1"),
        (f"{c['runners']} concurrent applies: exit codes", json.dumps(c["exit_codes"]), ""),
        (f"{c['runners']} concurrent applies: wall", f"{c['apply_wall_ms']:.0f} ms", ""),
        (
            f"{c['runners']} concurrent runs: whole log lines",
            f"{c['log_lines_whole']} of {c['log_lines']}",
            f"{c['log_lines_expected']}",
        ),
    ]
    st = results["state"]
    rows += [
        ("apply with 10 markers", f"{st['apply_with_few_markers_ms']:.1f} ms", ""),
        (
            f"apply with {st['markers']:,} markers",
            f"{st['apply_with_many_markers_ms']:.1f} ms",
            "same",
        ),
        ("run with an empty log", f"{st['run_with_empty_log_ms']:.1f} ms", ""),
        (
            f"run with a {st['log_bytes'] / MiB:,.0f} MiB log",
            f"{st['run_with_big_log_ms']:.1f} ms",
            "same",
        ),
    ]
    from stats import rows as stats_rows

    rows += stats_rows(results["stats"])
    win = results["window"]
    rows.append(
        (
            f"stats -q --prometheus every 5 min, {win['window_lines']:,} lines: "
            "with --since 1h / without",
            f"{win['window_marked_ms']:.1f} / {win['window_plain_ms']:.1f} ms",
            "",
        )
    )
    cap = results["capture"]
    rows.append(
        (
            f"--output-on-failure, {cap['bytes'] / MiB:,.0f} MiB: own file / captured",
            f"{cap['direct_s']:.2f} / {cap['captured_s']:.2f} s ({cap['ratio']:.2f}x)",
            f"<= {cap['target']:.2f}x",
        )
    )
    sw = results["sweep"]
    rows.append(
        (
            f"runner CPU over a {sw['grace_s']:g}s kill grace, {sw['host_processes']:,} processes",
            f"{sw['runner_cpu_s']:.3f} s",
            f"< {sw['target_cpu_s']} s",
        )
    )
    rows += _fleet_rows(results["fleet"])
    width = max(len(name) for name, _, _ in rows)
    lines = [f"{'metric':<{width}}  {'value':>20}  target", "-" * (width + 32)]
    lines += [f"{name:<{width}}  {value:>20}  {target}" for name, value, target in rows]
    return lines


def _fleet_rows(fl: dict[str, Any]) -> list[tuple[str, str, str]]:
    if "skipped" in fl:
        return [("PostgreSQL fleet", "skipped", fl["skipped"])]
    crowd, renew, cost = fl["crowd"], fl["renewals"], fl["cost"]
    crowded, every = crowd["handover_100_waiting"], crowd["handover_all"]
    rows = [
        (
            f"{crowd['hosts']} hosts, one lock: succeeded, one at a time",
            f"{crowd['succeeded']}, {'yes' if crowd['one_at_a_time'] else 'NO'}",
            "all, yes",
        ),
        (
            f"  server connections, peak (max_connections {crowd['max_connections']})",
            str(crowd["peak_connections"]),
            "<= 20",
        ),
        ("  handover p50 / p99, >= 100 waiting", _pair(crowded), "0.5 / 1.5 s"),
        ("  handover p50 / p99, all", _pair(every), ""),
        (f"renewals per lease ({renew['lease_s']:g}s lease)", f"{renew['per_lease']:.1f}", "~3"),
        ("run --lock FILE -- true", f"{cost['file_lock_ms']:.1f} ms", ""),
        ("run --state URL --lock L -- true", f"{cost['postgres_ms']:.1f} ms", "<= 100 ms"),
    ]
    if "pgbouncer_ms" in cost:
        rows.append(("  ... through PgBouncer", f"{cost['pgbouncer_ms']:.1f} ms", ""))
    return rows


def _pair(figures: dict[str, float]) -> str:
    return f"{figures['p50_s']:.3f} / {figures['p99_s']:.3f} s"


def _ms(entry: dict[str, float]) -> str:
    return f"{entry['median_ms']:.1f}"


def run_all(quick: bool, scratch: Path) -> dict[str, Any]:
    """Every benchmark, its scratch files under `scratch`."""
    home = scratch / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["RUNNER_HOME"] = str(home)
    results: dict[str, Any] = {"machine": machine()}
    results["startup"] = bench_startup(3 if quick else 40, env, scratch)
    sizes = [10 * MiB, 50 * MiB] if quick else [10 * MiB, 2048 * MiB]
    results["streaming"] = bench_streaming(sizes, 2 if quick else 31, env)
    results["timeout"] = bench_timeout(2 if quick else 9, env, scratch, 0.2 if quick else 1.0)
    results["contention"] = bench_contention(10 if quick else 50, env, scratch)
    results["state"] = bench_state(
        1000 if quick else 100_000, 10 * MiB if quick else 1024 * MiB, 3 if quick else 21, env
    )
    from stats import bench_stats

    results["stats"] = bench_stats(20_000 if quick else 1_000_000, 1 if quick else 5, env, scratch)
    from window import bench_window

    results["window"] = bench_window(
        20_000 if quick else 300_000, 1 if quick else 15, env, scratch / "window-home"
    )
    from capture import bench_capture

    results["capture"] = bench_capture(10 * MiB if quick else 2048 * MiB, 2 if quick else 5, env)
    from sweep import bench_sweep

    results["sweep"] = bench_sweep(200 if quick else 1600, 1.0 if quick else 5.0, env)
    from fleet import bench_fleet

    results["fleet"] = bench_fleet(12 if quick else 300, 3 if quick else 21)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description="Benchmarks of runner.py.")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results.json"), help="output file")
    options = parser.parse_args()
    quick = options.quick
    scratch = Path(tempfile.mkdtemp(prefix="runner-bench-"))
    scratch.chmod(0o711)  # the PostgreSQL server's user reaches its own folder in it
    tempfile.tempdir = str(scratch)  # every benchmark's own folders go in it, removed at the end
    try:
        results = run_all(quick, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results["quick"] = {"quick": quick}
    print(f"machine: {json.dumps(results['machine'])}")
    print("\n".join(table(results)))
    Path(options.json).write_text(json.dumps(results, indent=2) + "\n")
    print(f"figures written to {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
