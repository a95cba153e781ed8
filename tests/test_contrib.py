"""contrib/'s alert rules and dashboard use only metrics the runner exports."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from domain.stats import Summary
from entrypoints import prometheus
from tests.procs import ROOT


def export(history: Summary, by: str, **options: Any) -> str:
    """The textfile as text."""
    return prometheus.render(history, by, [], **options).decode()


METRIC = re.compile(r"\brunner_[a-z_]+\b")
T0 = 1_800_000_000.0


def exported() -> set[str]:
    """Every sample name of a textfile with runs of every outcome, retries, a window."""
    s = Summary()
    for n, (rc, outcome) in enumerate([(0, "success"), (1, "failure"), (124, "timeout")]):
        s.add(f"r{n}", "job", T0 + n, 1, rc, 10, outcome, False)
    s.add("r3", "job", T0 + 4, 1, 143, 10, "signal", False)
    s.add("w", "job", T0 + 9, 1, 1, 10, "failure", True)
    s.malformed = 1
    text = export(s, "cmd", now=T0, window=s.finished(), window_seconds=60)
    return {
        sample.name for family in text_string_to_metric_families(text) for sample in family.samples
    }


def used(path: str) -> set[str]:
    with open(os.path.join(ROOT, "contrib", path)) as handle:
        text = handle.read()
    if path.endswith(".json"):
        document = json.loads(text)
        exprs = [t["expr"] for p in document["panels"] for t in p["targets"]]
        exprs += [v.get("query", "") for v in document["templating"]["list"]]
        text = "\n".join(exprs)
    else:
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return set(METRIC.findall(text))


def test_every_metric_the_alerts_use_is_exported() -> None:
    names = used("runner-alerts.yml")
    assert len(names) >= 6
    assert names <= exported(), names - exported()


def test_every_metric_the_dashboard_uses_is_exported() -> None:
    names = used("runner-dashboard.json")
    assert len(names) >= 8
    assert names <= exported(), names - exported()


def test_the_alert_rules_pass_promtool_with_a_test_for_every_alert() -> None:
    """`promtool test rules`: each alert fires on the series it is for, and not on a quiet
    one; summaries and descriptions read as written (a job that never succeeded says so)."""
    import shutil
    import subprocess

    import pytest

    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is required in CI (Debian: apt-get install prometheus)")
        pytest.skip("promtool is not installed")
    folder = os.path.join(ROOT, "contrib")
    checked = subprocess.run(
        [promtool, "check", "rules", "runner-alerts.yml"],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [promtool, "test", "rules", "runner-alerts.test.yml"],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    with open(os.path.join(folder, "runner-alerts.yml")) as rules:
        alerts = re.findall(r"- alert: (\w+)", rules.read())
    with open(os.path.join(folder, "runner-alerts.test.yml")) as tests:
        covered = set(re.findall(r"alertname: (\w+)", tests.read()))
    assert set(alerts) == covered
