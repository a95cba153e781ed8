"""First contact: old interpreters, a lone runner.py, the zipapp, help, and the command line."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from adapters.jsonl import attempt_line
from adapters.log_read import TWO_FROM as PARALLEL_FROM
from domain.attempts import AttemptRecord
from entrypoints.invocation import ACTIONS, ALLOWED
from tests.e2e.conftest import RUNNER, Lab
from tests.procs import ROOT

OLD = sorted(Path.home().glob(".pyenv/versions/[23].*/bin/python"))


def _version(python: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in python.parent.parent.name.split(".")[:2])


OLD_PYTHONS = [python for python in OLD if _version(python) < (3, 10)]
OTHER_PYTHONS = [
    python
    for python in OLD
    if _version(python) >= (3, 10) and _version(python) != tuple(sys.version_info[:2])
]
"""Pythons the runner supports, of another version than the one running the tests."""


@pytest.mark.skipif(not OLD_PYTHONS, reason="no Python older than 3.10 on this machine")
@pytest.mark.parametrize("python", OLD_PYTHONS, ids=lambda p: p.parent.parent.name)
def test_an_old_python_gets_one_line_and_125(lab: Lab, python: Path) -> None:
    """Regression: 3.8 and 3.9 said 'internal error: TypeError'; 2.7 could not even parse it."""
    for target in (RUNNER, str(zipapp(lab.tmp))):
        result = subprocess.run(
            [str(python), target, "run", "--", "true"], capture_output=True, check=False
        )
        assert result.returncode == 125
        version = python.parent.parent.name
        assert result.stderr.decode() == (
            f"runner: error: runner.py needs Python 3.10 or later (this is {version})\n"
        )


def test_a_lone_runner_py_says_what_is_missing(tmp_path: Path) -> None:
    """Regression: copying only runner.py gave a traceback."""
    shutil.copy(RUNNER, tmp_path / "runner.py")
    result = subprocess.run(
        [sys.executable, str(tmp_path / "runner.py"), "run", "--", "true"],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 125
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1
    assert "needs its folders domain/, adapters/, entrypoints/ beside it" in lines[0]
    assert "pipx install" in lines[0]
    assert "runner.pyz" in lines[0]


def test_a_lone_runner_py_is_not_fooled_by_an_installed_entrypoints_package(
    tmp_path: Path,
) -> None:
    """An `entrypoints` module elsewhere on the path is never taken for the runner's own."""
    shutil.copy(RUNNER, tmp_path / "runner.py")
    decoy = tmp_path / "site"
    (decoy / "entrypoints").mkdir(parents=True)
    (decoy / "entrypoints" / "__init__.py").write_text("raise SystemExit('decoy imported')\n")
    result = subprocess.run(
        [sys.executable, str(tmp_path / "runner.py"), "run", "--", "true"],
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(decoy)},
    )
    assert result.returncode == 125
    assert b"decoy" not in result.stderr


def zipapp(folder: Path) -> Path:
    """Build the zipapp into `folder` (once per folder)."""
    target = folder / "runner.pyz"
    if not target.exists():
        builder = os.path.join(ROOT, "packaging", "build_zipapp.py")
        subprocess.run([sys.executable, builder, str(target)], check=True)
    return target


def test_the_zipapp_is_the_same_bytes_every_time_and_runs_anywhere(tmp_path: Path) -> None:
    """make dist twice: the same bytes. Run from elsewhere, its home is the user's state folder."""
    first, second = zipapp(tmp_path / "a"), zipapp(tmp_path / "b")
    assert (
        hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()
    )
    state = tmp_path / "xdg"
    env = {k: v for k, v in os.environ.items() if k != "RUNNER_HOME"}
    env["XDG_STATE_HOME"] = str(state)
    result = subprocess.run(
        [sys.executable, str(first), "run", "--", "sh", "-c", "echo zipped"],
        cwd="/",
        env=env,
        capture_output=True,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, b"zipped\n")
    assert (state / "runner" / "runs.jsonl").exists()
    assert sorted(p.name for p in first.parent.iterdir()) == ["runner.pyz"]
    direct = subprocess.run([str(first), "--version"], capture_output=True, check=False, env=env)
    assert direct.stdout.startswith(b"runner ")


def test_the_zipapp_starts_from_the_bytecode_of_the_python_that_built_it(tmp_path: Path) -> None:
    """Regression: it held only sources, which Python compiles at every start from an archive
    (it never writes bytecode into one): twice the folder's start-up."""
    archive = zipapp(tmp_path)
    with zipfile.ZipFile(archive) as opened:
        names = opened.namelist()
    sources = sorted(name for name in names if name.endswith(".py"))
    assert sorted(name for name in names if name.endswith(".pyc")) == [f"{n}c" for n in sources]
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import entrypoints.cli, entrypoints.stats;"
        "print(entrypoints.cli.__file__, entrypoints.stats.__file__)"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe, str(archive)], capture_output=True, text=True, check=True
    )
    assert [path.rsplit("/", 2)[-2:] for path in loaded.stdout.split()] == [
        ["entrypoints", "cli.pyc"],
        ["entrypoints", "stats.pyc"],
    ]


@pytest.mark.skipif(not OTHER_PYTHONS, reason="no other Python 3.10 or later on this machine")
@pytest.mark.parametrize("python", OTHER_PYTHONS, ids=lambda p: p.parent.parent.name)
def test_the_zipapp_runs_on_another_python_from_its_sources(tmp_path: Path, python: Path) -> None:
    """Bytecode of another version is passed by: its sources are compiled, as before."""
    archive = zipapp(tmp_path)
    result = subprocess.run(
        [str(python), str(archive), "run", "--", "sh", "-c", "echo zipped"],
        env={**os.environ, "RUNNER_HOME": str(tmp_path / "home")},
        capture_output=True,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"zipped\n", b"")


def _attempts(first: int, last: int) -> bytes:
    """The runner's own lines for runs first..last: successes, retried failures, timeouts,
    signals, some under a name."""
    lines = []
    for n in range(first, last):
        cmd, name = ["job", str(n % 7)], ("nightly-1" if n % 5 == 0 else None)
        if n % 11 == 0:
            lines.append(AttemptRecord(1e9 + n, cmd, 1, 1, 40, f"r{n}", name, delay_ms=500))
            lines.append(AttemptRecord(1e9 + n + 1, cmd, 2, 0, 30, f"r{n}", name))
        elif n % 13 == 0:
            lines.append(AttemptRecord(1e9 + n, cmd, 1, 124, 9000, f"r{n}", name, timed_out=True))
        elif n % 17 == 0:
            lines.append(AttemptRecord(1e9 + n, cmd, 1, 137, 70, f"r{n}", name, signal=9))
        else:
            lines.append(AttemptRecord(1e9 + n, cmd, 1, n % 3 // 2, n % 997, f"r{n}", name))
    return b"".join(map(attempt_line, lines))


def _stats_twice(python: str, folder: Path) -> list[object]:
    """`stats --json` on a log big enough to be read by several processes, then again after
    1,000 more lines (read on from the checkpoint): the figures of both, log path aside."""
    log = folder / "runs.jsonl"
    found: list[object] = []
    for first, last in ((0, 70_000), (70_000, 71_000)):
        with log.open("ab") as handle:
            handle.write(_attempts(first, last))
            handle.write(b"not json\n" if first else b'{"hand": "written"}\n')
        assert first or log.stat().st_size > PARALLEL_FROM  # the first read is split
        result = subprocess.run(
            [python, RUNNER, "stats", "--json", "--log", str(log)],
            capture_output=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr.startswith(b"runner: skipped "), result.stderr  # the foreign lines
        figures = json.loads(result.stdout)
        del figures["logs"]
        found.append(figures)
    return found


@pytest.fixture(scope="module")
def our_figures(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    """`_stats_twice` by the Python running the suite: once for every other Python."""
    return _stats_twice(sys.executable, tmp_path_factory.mktemp("ours"))


@pytest.mark.skipif(not OTHER_PYTHONS, reason="no other Python 3.10 or later on this machine")
@pytest.mark.parametrize("python", OTHER_PYTHONS, ids=lambda p: p.parent.parent.name)
def test_stats_counts_the_same_on_another_python(
    tmp_path: Path, python: Path, our_figures: list[object]
) -> None:
    """Every Python from 3.10 counts a large log the same (regression: on 3.10 the line
    pattern of an earlier design did not compile, and every stats of 500 lines or more
    ended in `internal error`)."""
    assert _stats_twice(str(python), tmp_path) == our_figures


def test_a_relative_xdg_state_home_is_ignored(tmp_path: Path) -> None:
    """The XDG rule: a relative $XDG_STATE_HOME is not used; ~/.local/state is."""
    env = {k: v for k, v in os.environ.items() if k != "RUNNER_HOME"}
    env.update(XDG_STATE_HOME="relative/state", HOME=str(tmp_path))
    result = subprocess.run(
        [sys.executable, str(zipapp(tmp_path)), "run", "--", "true"],
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert result.returncode == 0
    assert (tmp_path / ".local" / "state" / "runner" / "runs.jsonl").exists()
    assert not (tmp_path / "relative").exists()


@pytest.mark.parametrize("action", ACTIONS)
def test_each_subcommand_has_its_own_help_listing_every_option(lab: Lab, action: str) -> None:
    """Regression: every --help printed one page that left out --state and others."""
    asked = lab.run(action, "--help")
    assert asked.returncode == 0
    assert lab.run("help", action).stdout == asked.stdout
    text = asked.stdout.decode()
    assert text.startswith(f"usage: runner.py {action}")
    for option in ALLOWED[action] - {"-q"}:
        assert f"\n  {option}" in text, option
    assert "(default: " in text
    if action in ("run", "apply", "forget", "applied"):
        assert "$RUNNER_STATE_URL" in text
    assert "$RUNNER_HOME" in text
    if action == "apply":
        assert "$RUNNER_APPLY_COMMAND" in text


def test_the_overview_lists_the_subcommands_and_v_is_version(lab: Lab) -> None:
    """--help lists every subcommand; -V is --version."""
    text = lab.run("--help").stdout.decode()
    for action in ACTIONS:
        assert f"\n  {action} " in text
    assert lab.run("-V").stdout == lab.run("--version").stdout
    assert lab.run("-V").stdout.startswith(b"runner 0.")


def test_global_options_work_before_the_subcommand(lab: Lab) -> None:
    """--home and -q before `run`, as after it."""
    home = lab.tmp / "elsewhere"
    result = lab.run(
        "--home", str(home), "-q", "run", "--retries", "1", "--backoff", "0", "--", "false"
    )
    assert (result.returncode, result.stderr) == (1, b"")
    assert len((home / "runs.jsonl").read_text().splitlines()) == 2
    wrong = lab.run("--timeout", "3", "run", "--", "true")
    assert wrong.returncode == 125
    assert b"--timeout is not an option of the runner before its subcommand" in wrong.stderr


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["run", "--timout", "3", "--", "true"], b"did you mean --timeout?"),
        (["aply", "db"], b"did you mean apply?"),
        (["apply", "--dry-rn", "db"], b"did you mean --dry-run?"),
        (["--hme", "x", "run", "true"], b"did you mean --home?"),
        (["help", "stat"], b"did you mean stats?"),
    ],
)
def test_a_near_miss_gets_a_did_you_mean(lab: Lab, args: list[str], hint: bytes) -> None:
    """An unknown option or subcommand close to a real one names it."""
    result = lab.run(*args)
    assert result.returncode == 125
    assert hint in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_each_subcommands_help_lists_only_its_own_exit_codes(lab: Lab) -> None:
    """stats cannot give 124 or 126; run can; the overview lists them all."""
    stats = lab.run("help", "stats").stdout.decode()
    run = lab.run("help", "run").stdout.decode()
    assert "124" not in stats.split("exit:")[1]
    assert "124 timeout" in run
    assert "126 cannot execute" in lab.run("--help").stdout.decode()


def test_the_installed_command_calls_itself_runner(tmp_path: Path) -> None:
    """Help names the program as it was called: `runner` installed, not `runner.py`."""
    link = tmp_path / "runner"
    link.symlink_to(RUNNER)
    shown = subprocess.run(
        [sys.executable, str(link), "help", "run"], capture_output=True, check=True
    ).stdout
    assert shown.startswith(b"usage: runner run ")


def test_help_says_which_home_log_and_state_this_runner_uses(lab: Lab) -> None:
    """Regression: nothing printed the home the runner resolved (a cron job's `runner.py run
    -- true` wrote where?)."""
    url = "postgresql://cron:s3cret@db.internal:5432/ops"
    shown = lab.run("help", env={"RUNNER_STATE_URL": url}).stdout.decode()
    assert f"  home   {lab.home}\n" in shown
    assert f"  log    {lab.home / 'runs.jsonl'}\n" in shown
    assert "  state  PostgreSQL at postgresql://cron@db.internal:5432/ops" in shown
    assert "s3cret" not in shown
    plain = lab.run("help").stdout.decode()
    assert f"  state  {lab.home / 'state'}" in plain


def test_every_duration_s_help_says_what_0_means() -> None:
    """Regression: the footer said "0 means no limit" of every DURATION, false for
    --lock-wait 0 (no wait) and --backoff 0 (retry at once)."""
    from entrypoints.invocation import DURATIONS
    from entrypoints.optiontext import OPTIONS

    durations = [n for n, (metavar, _, _) in OPTIONS.items() if metavar in ("DURATION", "PERIOD")]
    assert set(DURATIONS) <= set(durations)
    for name in durations:
        assert "0" in OPTIONS[name][2], name
    assert "no wait" in OPTIONS["--lock-wait"][2]
    assert "at once" in OPTIONS["--backoff"][2]


def test_messages_name_things_as_the_operator_reads_them(lab: Lab) -> None:
    """Regression: `cannot run '\\udcff\\udcfe'` where stats shows $'\\xff\\xfe'; a corrupt
    marker showed the JSON parser's `Expecting value: line 1 column 1 (char 0)`."""
    undecodable = os.fsdecode(b"\xff\xfe")
    result = subprocess.run(
        [sys.executable, RUNNER, "run", "--", undecodable],
        capture_output=True, env=lab.env, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 127
    assert result.stderr == b"runner: cannot run $'\\xff\\xfe': No such file or directory\n"
    lab.state.mkdir()
    (lab.state / "bad.done").write_text("{")
    shown = lab.run("applied").stdout.decode()
    assert "corrupt marker: not the record an apply writes" in shown
    assert "Expecting" not in shown
    assert "char 0" not in shown
