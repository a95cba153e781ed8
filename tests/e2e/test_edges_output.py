"""Faults found by hostile use: the attempt log, the runner's own output, durations."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from tests.e2e.conftest import RUNNER, Lab


def test_a_log_that_is_a_fifo_never_blocks_the_runner(lab: Lab) -> None:
    """Regression: open() on a FIFO with no reader blocked forever, ignoring SIGTERM."""
    os.mkfifo(lab.log)
    result = lab.run("apply", "db", "--", "true", timeout=20)
    assert result.returncode == 0
    assert result.stderr.count(b"not a regular file") == 1
    assert (lab.state / "db.done").exists()


def test_a_log_that_is_a_device_is_not_written(lab: Lab) -> None:
    """A symlink to /dev/null (or any device) is refused with one warning, as every link is;
    the outcome stands."""
    lab.log.symlink_to("/dev/null")
    result = lab.run("run", "--retries", "1", "--backoff", "0", "--", "false")
    assert result.returncode == 1
    assert result.stderr.count(b"cannot write the attempt log") == 1
    assert b"a symbolic link" in result.stderr


def test_a_line_cut_short_by_a_full_disk_is_never_merged_with_the_next(lab: Lab) -> None:
    """Regression: after a short write (file size limit), the next attempt's line is whole."""
    lab.run("run", "--", "true")
    size = lab.log.stat().st_size
    limit = size + 40

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    cut = subprocess.run(
        [sys.executable, RUNNER, "run", "--", "true"],
        env=lab.env,
        preexec_fn=small_files,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert cut.returncode == 0
    assert b"cannot write the attempt log" in cut.stderr
    assert lab.log.stat().st_size == limit
    assert lab.run("run", "--", "sh", "-c", "exit 3").returncode == 3
    lines = lab.log.read_bytes().split(b"\n")
    assert json.loads(lines[-2])["rc"] == 3
    report = json.loads(lab.run("stats", "--json").stdout)
    assert report["malformed"] == 1
    assert sum(group["runs"] for group in report["groups"]) == 2


def test_run_creates_a_missing_home(lab: Lab) -> None:
    """Regression: run --home MISSING dropped the log; now the folder is made (0700)."""
    home = lab.tmp / "new" / "home"
    assert lab.run("run", "--home", str(home), "--", "true").returncode == 0
    assert (home / "runs.jsonl").exists()
    assert home.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("first", [["run", "--", "true"], ["apply", "step", "--", "true"]])
def test_every_folder_the_runner_makes_is_private(lab: Lab, first: list[str]) -> None:
    """Regression: a missing home made by `apply` (on the way to its state folder), and the
    folders above a missing home, were left 0755 (mkdir -p's way), where `run` made the
    home 0700: anyone could list what was in them. Every folder made is 0700."""
    top = lab.tmp / "new"
    home = top / "deep" / "home"
    assert lab.run(*first, env={"RUNNER_HOME": str(home)}).returncode == 0
    made = [top, top / "deep", home, *([home / "state"] if first[0] == "apply" else [])]
    assert [oct(path.stat().st_mode & 0o777) for path in made] == [oct(0o700)] * len(made)


def beside_a_full_device(
    lab: Lab, args: list[str], *, cron: bool, full: str
) -> subprocess.CompletedProcess[bytes]:
    """The runner with its stdout or stderr (`full`) on /dev/full and the other captured; with
    `cron`, in cron's environment (no PYTHONUNBUFFERED, no LANG: output buffered)."""
    env = lab.env
    if cron:
        keep = ("PATH", "RUNNER_HOME", "RUNNER_APPLY_COMMAND", "APPLY_LOG")
        env = {name: lab.env[name] for name in keep}
    with open("/dev/full", "w") as device:
        return subprocess.run(
            [sys.executable, RUNNER, *args],
            env=env,
            stdout=device if full == "stdout" else subprocess.PIPE,
            stderr=device if full == "stderr" else subprocess.PIPE,
            timeout=30,
            check=False,
        )


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["stats", "--json"],
        ["applied"],
        ["applied", "--json"],
        ["apply", "--dry-run", "x"],
    ],
)
@pytest.mark.parametrize("cron", [False, True])
def test_output_to_a_full_device_is_an_error(lab: Lab, args: list[str], cron: bool) -> None:
    """Regression: `stats > /dev/full` exited 0 having written nothing; under cron's
    environment (no PYTHONUNBUFFERED, no LANG: stdout buffered) it exited 120 with
    Python's 'Exception ignored' lines."""
    lab.run("apply", "db", "--", "true")
    result = beside_a_full_device(lab, args, cron=cron, full="stdout")
    assert result.returncode == 125
    assert result.stderr.startswith(b"runner: error: cannot write output: No space left")
    assert result.stderr.count(b"\n") == 1


@pytest.mark.parametrize(
    ("args", "code", "stdout"),
    [
        (
            ["run", "--retries", "1", "--backoff", "0", "--", "sh", "-c", "echo out; exit 3"],
            3,
            b"out\nout\n",
        ),
        (["run", "--", "no-such-command-here"], 127, b""),
        (["run", "--timeout", "0.2", "--", "sleep", "5"], 124, b""),
        (["stats", "--since", "nonsense"], 125, b""),
        (["apply", "db", "--", "true"], 0, b""),
    ],
)
@pytest.mark.parametrize("cron", [False, True])
def test_a_full_stderr_never_changes_the_exit_code(
    lab: Lab, args: list[str], code: int, stdout: bytes, cron: bool
) -> None:
    """Regression: with stderr on a full device (`2>>` a log on a full disk) the runner's own
    lines could not be written, and Python exited 120 at the end in place of the command's
    code. The command's own stderr is left as it was given (still the full device)."""
    result = beside_a_full_device(lab, args, cron=cron, full="stderr")
    assert (result.returncode, result.stdout) == (code, stdout)


def test_the_commands_stderr_stays_as_given_after_the_runners_lines_fail(lab: Lab) -> None:
    """Once a line of the runner's cannot be written, the next attempt's stderr is still the
    one the runner was given, not one the runner swapped in."""
    script = "readlink /proc/self/fd/2; exit 1"
    args = ["run", "--retries", "1", "--backoff", "0", "--", "sh", "-c", script]
    result = beside_a_full_device(lab, args, cron=True, full="stderr")
    assert result.returncode == 1
    assert result.stdout == b"/dev/full\n/dev/full\n"


def test_a_reader_that_goes_away_is_no_error(lab: Lab) -> None:
    """`stats | head -1`: a closed pipe ends the output quietly, with no traceback."""
    for n in range(40):
        lab.run("run", "--", "sh", "-c", f"exit {n % 3}", f"job{n}")
    reader_gone = subprocess.run(
        f'"$0" {RUNNER} stats | head -c 1 >/dev/null; echo "${{PIPESTATUS[0]}}"',
        shell=True,
        executable="/bin/bash",
        env={**lab.env, "0": sys.executable},
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert b"Traceback" not in reader_gone.stderr
    assert b"Broken pipe" not in reader_gone.stderr


def test_text_that_is_not_utf8_is_escaped_on_a_strict_stdout(lab: Lab) -> None:
    """Regression: an argument b'\\xff' made stats print nothing under a strict UTF-8 stdout."""
    odd = b"\xff".decode("utf-8", "surrogateescape")
    lab.run("run", "--", "echo", odd)
    lab.run("apply", "odd", "--", "echo", odd)
    strict = {"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}
    for args in (["stats"], ["applied"], ["apply", "--dry-run", "other", "--", "echo", odd]):
        result = lab.run(*args, env=strict)
        assert result.returncode == 0, result.stderr
        assert b"echo" in result.stdout
        assert b"\\xff" in result.stdout


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("1e-10000", 124),
        ("1e-10000s", 124),
        ("1.2e4932", 0),
        ("inf", 0),
        ("infinity", 0),
        ("-1", 125),
        ("-0.5s", 125),
        ("nan", 125),
        ("1_000", 125),
        ("0x10", 0),  # 16 s: GNU timeout 9.1 reads hexadecimal too
        (" 0.05", 124),  # and spaces before the number
        ("\u0661", 125),
        ("", 125),
        ("s", 125),
    ],
)
def test_durations_are_read_as_coreutils_timeout_reads_them(
    lab: Lab, value: str, code: int
) -> None:
    """timeout-parameters.sh: too small rounds up to the smallest; too large means no limit."""
    result = lab.run("run", "--timeout", value, "--", "sleep", "0.2")
    assert result.returncode == code, result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.parametrize("option", ["--kill-after", "--backoff", "--max-backoff", "--deadline"])
def test_a_huge_duration_is_no_limit_for_every_option(lab: Lab, option: str) -> None:
    """No overflow anywhere a duration is used."""
    assert lab.run("run", option, "1.2e4932", "--", "true").returncode == 0


def test_a_5000_digit_count_is_a_usage_error(lab: Lab) -> None:
    """Regression: --retries with 5000 digits was an internal error."""
    result = lab.run("run", "--retries", "9" * 5000, "--", "true")
    assert result.returncode == 125
    assert b"internal error" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["stats", "--log", "/nowhere/\x1b]0;owned\x07\x1b[2J"],
        ["run", "--lock", "/nowhere/\x1b[31m\u202eered", "--", "true"],
        ["run", "--timeout", "\x1b[2J", "--", "true"],
        ["run", "--", "/nowhere/\x1b[2J"],
    ],
)
def test_the_runners_own_lines_never_carry_a_terminal_escape(lab: Lab, args: list[str]) -> None:
    """Regression: a path or value in a message reached the terminal raw (`no attempt log
    at /tmp/…\\e[2J`, `cannot open lock file …`), where a file name found on disk or given
    by a script can clear the screen or retitle it. Every line the runner writes of its
    own is escaped as the table is: `\\E`, `\\u202e`."""
    result = lab.run(*args)
    assert result.stderr.startswith(b"runner: ")
    assert b"\x1b" not in result.stderr
    assert "\u202e".encode() not in result.stderr
    assert b"\\E[" in result.stderr or b"\\x1b[" in result.stderr


TEARDOWN_SEEN = """
import atexit, os, sys
sys.path.insert(0, sys.argv.pop(1))
atexit.register(lambda: os.write(2, b"torn down\\n"))
from entrypoints.cli import launch
launch(None)
"""
"""The runner's CLI, saying on stderr whether the interpreter's teardown ran."""


def test_stats_leaves_without_the_interpreters_teardown_its_output_whole(lab: Lab) -> None:
    """stats ends without freeing what it built object by object (3 ms of a repeat),
    its document still whole on a buffered stdout (cron's environment); run still tears down."""
    for n in range(30):
        lab.run("run", "--", "sh", "-c", f"exit {n % 2}", f"job{n}")
    cron = {name: lab.env[name] for name in ("PATH", "RUNNER_HOME")}

    def through_script(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-c", TEARDOWN_SEEN, os.path.dirname(RUNNER), *args],
            env=cron,
            capture_output=True,
            timeout=30,
            check=False,
        )

    table = through_script("stats", "--json")
    assert table.returncode == 0
    assert table.stderr == b""
    plain = subprocess.run(
        [sys.executable, RUNNER, "stats", "--json"],
        env=cron, capture_output=True, timeout=30, check=True,
    )  # fmt: skip
    assert table.stdout == plain.stdout  # the same environment: the same local times
    assert table.stdout.count(b"job") == 30
    ran = through_script("run", "--", "true")
    assert (ran.returncode, ran.stderr) == (0, b"torn down\n")


LEAVE_AT_ONCE = """
import sys
sys.path.insert(0, sys.argv.pop(1))
from entrypoints.cli import exit_with
for _ in range(int(sys.argv[1])):
    sys.stdout.write("line\\n")
exit_with(4, teardown=False)
"""
"""Text left in stdout's buffer (its last part), then an exit without the interpreter's
teardown."""


def test_leaving_at_once_flushes_the_output_first(lab: Lab) -> None:
    whole = subprocess.run(
        [sys.executable, "-c", LEAVE_AT_ONCE, os.path.dirname(RUNNER), "20000"],
        env={"PATH": lab.env["PATH"]},
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert (whole.returncode, whole.stdout, whole.stderr) == (4, b"line\n" * 20000, b"")


def test_leaving_at_once_with_output_that_cannot_be_written_is_never_silent(lab: Lab) -> None:
    """The buffer cannot be flushed to a full device: Python's own exit reports it, as it
    did before (never an exit as if the text had been written)."""
    with open("/dev/full", "w") as device:
        full = subprocess.run(
            [sys.executable, "-c", LEAVE_AT_ONCE, os.path.dirname(RUNNER), "100"],
            env={"PATH": lab.env["PATH"]},
            stdout=device,
            stderr=subprocess.PIPE,
            timeout=30,
            check=False,
        )
    assert full.returncode == 120
    assert b"No space left" in full.stderr


def test_the_attempt_log_is_never_written_through_a_symbolic_link(lab: Lab) -> None:
    """Regression: `runs.jsonl` followed a link planted in a home another user can write
    (root appended a line to a root-only file of the planter's choosing); every other file
    the runner writes refuses links. The run goes on, with one warning naming the log."""
    target = lab.tmp / "secret"
    target.write_text("kept\n")
    lab.home.mkdir(exist_ok=True)
    lab.log.symlink_to(target)
    result = lab.run("run", "--", "true")
    assert result.returncode == 0
    assert target.read_text() == "kept\n"
    assert result.stderr.decode() == (
        f"runner: warning: cannot write the attempt log {lab.log}: a symbolic link\n"
    )
