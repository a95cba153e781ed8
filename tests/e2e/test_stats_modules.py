"""`stats --prometheus` loads its modules from one file of their bytecode (adapters.preload):
the real runner in a copy of its folder, with Python's own account (-v) of what it
imported as usual."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.preload import file_name
from entrypoints.manage import STATS_MODULES
from tests.e2e.test_first_contact import zipapp
from tests.procs import ROOT

OURS = ("domain.", "adapters.", "entrypoints.")


class Copy:
    """runner.py and its folders copied with no bytecode, a home, and a textfile."""

    def __init__(self, tmp_path: Path) -> None:
        self.folder = tmp_path / "runner"
        shutil.copytree(
            ROOT,
            self.folder,
            ignore=shutil.ignore_patterns(".*", "tests", "state", "*.jsonl", "__pycache__"),
        )
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.prom = tmp_path / "runner.prom"
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["RUNNER_HOME"] = str(self.home)

    @property
    def kept(self) -> Path:
        return self.folder / "entrypoints" / "__pycache__" / str(file_name("stats"))

    def runner(
        self, *args: str, verbose: bool = False, status: int = 0, python: str = sys.executable
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [python, *(["-v"] if verbose else []), str(self.folder / "runner.py"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == status, result.stderr[-2000:]
        return result

    def imported_as_usual(self) -> list[str]:
        """Our modules a `stats -q --prometheus` imported through importlib, in order."""
        result = self.runner("stats", "-q", "--prometheus", str(self.prom), verbose=True)
        return [name for name in _imported(result.stderr) if name.startswith(OURS)]


def _imported(verbose: str) -> list[str]:
    """The modules imported through importlib, in order, as `python -v` tells them."""
    return [line.split("'")[1] for line in verbose.splitlines() if line.startswith("import '")]


def test_a_repeat_loads_every_stats_module_from_the_one_file_and_never_a_changed_one(
    tmp_path: Path,
) -> None:
    """The first `stats` imports as usual every module STATS_MODULES names (none is loaded
    that a repeat would not import) and keeps the file; a repeat then imports none of them
    as usual (each comes after those it imports); a module edited since is imported as
    usual, its new text in the export, and the file is kept anew."""
    copy = Copy(tmp_path)
    copy.runner("run", "--", "true")
    first = copy.imported_as_usual()
    assert set(STATS_MODULES) <= set(first)
    assert copy.kept.is_file()
    kept = copy.kept.stat().st_mtime_ns
    copy.runner("run", "--", "false", status=1)
    repeat = copy.imported_as_usual()
    assert not set(repeat) & set(STATS_MODULES)
    assert repeat.index("adapters.preload") > repeat.index("entrypoints.manage")
    assert copy.kept.stat().st_mtime_ns == kept
    assert 'runner_runs_total{cmd="false",outcome="failure"} 1' in copy.prom.read_text()

    exposition = copy.folder / "entrypoints" / "exposition.py"
    text = exposition.read_text()
    assert '"Attempt duration."' in text
    exposition.write_text(text.replace('"Attempt duration."', '"Attempt duration, edited."'))
    edited = copy.imported_as_usual()
    assert "entrypoints.exposition" in edited
    assert (
        "# HELP runner_attempt_duration_seconds Attempt duration, edited." in copy.prom.read_text()
    )
    assert copy.kept.stat().st_mtime_ns != kept
    assert not set(copy.imported_as_usual()) & set(STATS_MODULES)


def test_without_bytecode_stats_keeps_no_file_and_counts_the_same(tmp_path: Path) -> None:
    """PYTHONDONTWRITEBYTECODE: Python writes no .pyc, stats no file of its modules."""
    copy = Copy(tmp_path)
    copy.env["PYTHONDONTWRITEBYTECODE"] = "1"
    copy.runner("run", "--", "true")
    copy.runner("stats", "-q", "--prometheus", str(copy.prom))
    assert not copy.kept.parent.exists()
    assert 'runner_runs_total{cmd="true",outcome="success"} 1' in copy.prom.read_text()


def test_the_zipapp_loads_every_stats_module_from_the_file_built_into_it(tmp_path: Path) -> None:
    """runner.pyz holds the file of stats' modules, built by the Python that built it: a
    `stats` from it imports none of them through zipimport, one by one, and counts the same."""
    archive = zipapp(tmp_path)
    env = {**os.environ, "RUNNER_HOME": str(tmp_path / "home")}
    prom = tmp_path / "runner.prom"
    subprocess.run(
        [sys.executable, str(archive), "run", "--", "true"], env=env, check=True, timeout=60
    )
    result = subprocess.run(
        [sys.executable, "-v", str(archive), "stats", "-q", "--prometheus", str(prom)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = _imported(result.stderr)
    assert "adapters.preload" in found
    assert not set(found) & set(STATS_MODULES)
    assert 'runner_runs_total{cmd="true",outcome="success"} 1' in prom.read_text()


def _same_tag_other_version() -> str | None:
    """Another Python of this one's bytecode tag but another version (the system's 3.11.2
    beside a 3.11.7), if there is one."""
    probe = "import sys; print(sys.implementation.cache_tag, sys.hexversion)"
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if not os.path.exists(candidate) or os.path.realpath(candidate) == os.path.realpath(
            sys.executable
        ):
            continue
        found = subprocess.run(
            [candidate, "-c", probe], capture_output=True, text=True, timeout=30, check=False
        )
        if found.stdout.split() == [sys.implementation.cache_tag, str(sys.hexversion)]:
            continue
        if found.stdout.split()[:1] == [sys.implementation.cache_tag]:
            return candidate
    return None


OTHER = _same_tag_other_version()


@pytest.mark.skipif(OTHER is None, reason="no other Python of this bytecode tag here")
def test_two_pythons_of_one_tag_taking_turns_each_keep_a_file_and_write_it_once(
    tmp_path: Path,
) -> None:
    """Cron's /usr/bin/python3 and an operator's own 3.11 on one folder: each loads its own
    file, neither writes it again."""
    assert OTHER is not None
    copy = Copy(tmp_path)
    copy.runner("run", "--", "true")
    pythons = [sys.executable, OTHER]
    for python in pythons * 2:
        copy.runner("stats", "-q", "--prometheus", str(copy.prom), python=python)
    kept = sorted(copy.kept.parent.glob("stats.*.modules"))
    assert len(kept) == 2
    written = [path.stat().st_mtime_ns for path in kept]
    for python in pythons:
        copy.runner("stats", "-q", "--prometheus", str(copy.prom), python=python)
    assert [path.stat().st_mtime_ns for path in kept] == written
