"""recipes.md's node_exporter recipe with the real node_exporter (Debian's
prometheus-node-exporter): what `stats` writes is served, whole and without a parse error."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Lab
from tests.procs import wait_for

EXPORTER = "prometheus-node-exporter"


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A node_exporter serving the textfiles of a folder of its own: (folder, metrics URL)."""
    program = shutil.which(EXPORTER) or shutil.which("node_exporter")
    if program is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node_exporter is required in CI (make postgres installs it)")
        pytest.skip("no node_exporter")
    folder = tmp_path / "node-exporter"
    folder.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen(
        [program, "--collector.disable-defaults", "--collector.textfile",
         f"--collector.textfile.directory={folder}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_for(lambda: _answers(url), what="node_exporter to listen")
        yield folder, url
    finally:
        served.terminate()
        served.wait(timeout=30)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except OSError:
        return False


def test_node_exporter_serves_the_recipe_s_textfile_by_name(
    lab: Lab, exporter: tuple[Path, str]
) -> None:
    folder, url = exporter
    for code in ("0", "0", "3"):
        lab.run("run", "--name", "sync", "--", "sh", "-c", f"exit {code}")
    prom = folder / "runner.prom"
    result = lab.run("stats", "-q", "--by", "name", "--prometheus", str(prom))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    with urllib.request.urlopen(url, timeout=5) as answer:  # read at each scrape
        served = answer.read().decode()
    assert 'runner_runs_total{name="sync",outcome="success"} 2' in served
    assert 'runner_runs_total{name="sync",outcome="failure"} 1' in served
    assert "node_textfile_scrape_error 0" in served
