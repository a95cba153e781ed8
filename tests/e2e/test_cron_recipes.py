"""Every cron line of the README and docs/, run as cron runs it: `env -i PATH=/usr/bin:/bin`,
no tty, stdin /dev/null, the cwd $HOME, through /bin/sh, with the runner.pyz that
`make dist PYTHON=/usr/bin/python3` builds. Paths under /opt, /run and /var are moved into
the test's folder, the PostgreSQL URL is the test server's, and a --splay is cut short
(a wait of up to 30 s is what it is for); nothing else of a line is changed. A line that
works prints nothing: cron would mail it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import Lab

ROOT = Path(__file__).resolve().parent.parent.parent
CRON_PYTHON = "/usr/bin/python3"
SCHEDULE = re.compile(r"^(\S+\s+){5}")


def cron_lines() -> list[tuple[str, str]]:
    """(document, command) for each cron line that starts the runner."""
    found = []
    for document in ["README.md", *(f"docs/{name}" for name in sorted(os.listdir(ROOT / "docs")))]:
        text = (ROOT / document).read_text()
        for block in re.findall(r"```cron\n(.*?)```", text, re.DOTALL):
            for line in block.splitlines():
                if "runner.pyz" in line and SCHEDULE.match(line):
                    found.append((document, SCHEDULE.sub("", line).strip()))
    return found


LINES = cron_lines()


def test_the_docs_have_cron_lines_to_run() -> None:
    assert len(LINES) >= 6


@pytest.fixture(scope="module")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runner.pyz as the recipes' install step builds it, with the Python cron finds."""
    if not os.access(CRON_PYTHON, os.X_OK):
        pytest.skip(f"no {CRON_PYTHON}")
    folder = tmp_path_factory.mktemp("dist")
    subprocess.run(
        ["make", "-s", "-C", str(ROOT), "dist", f"PYTHON={CRON_PYTHON}", f"DIST={folder}"],
        check=True,
        capture_output=True,
    )
    return folder / "runner.pyz"


@pytest.mark.parametrize(
    ("document", "line"), LINES, ids=[f"{d}:{n}" for n, (d, _) in enumerate(LINES)]
)
def test_a_cron_line_runs_as_written_and_says_nothing(
    lab: Lab, pyz: Path, pg_url: str, namespace: str, document: str, line: str
) -> None:
    if "RUNNER_STATE_URL=" in line and _no_psycopg():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CRON_PYTHON} has no psycopg (make postgres installs python3-psycopg)")
        pytest.skip(f"{CRON_PYTHON} has no psycopg")
    root = lab.tmp / "root"
    jobs = root / "opt" / "jobs"
    jobs.mkdir(parents=True)
    for name in ("sync.sh", "nightly.sh", "report.sh", "export.sh"):
        script = jobs / name
        script.write_text("#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
    for folder in ("run", "var/log", "var/lib/node_exporter/textfile",
                   "var/lib/prometheus/node-exporter"):  # fmt: skip
        (root / folder).mkdir(parents=True, exist_ok=True)
    command = line.replace("/opt/runner/runner.pyz", str(pyz))
    command = re.sub(r"(?<![\w.])/(opt/jobs|run|var)/", lambda m: f"{root}/{m.group(1)}/", command)
    command = command.replace("postgresql://cron@db.internal:5432/ops", pg_url)
    command = command.replace("--namespace prod", f"--namespace {namespace}")
    command = re.sub(r"--splay \S+", "--splay 0.1s", command)
    command = command.replace("\\%", "%")  # cron's escape: a bare % would end the command
    home = lab.tmp / "cronhome"
    home.mkdir()
    done = subprocess.run(
        ["env", "-i", "PATH=/usr/bin:/bin", f"HOME={home}", "SHELL=/bin/sh", "/bin/sh", "-c",
         command],
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), (document, command)


def _no_psycopg() -> bool:
    found = subprocess.run([CRON_PYTHON, "-c", "import psycopg"], capture_output=True, check=False)
    return found.returncode != 0
