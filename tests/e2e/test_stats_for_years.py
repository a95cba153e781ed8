"""stats left in cron for years: hostile text, odd logs, and files in its way."""

from __future__ import annotations

import os

from tests.e2e.conftest import Lab

ESCAPES = "\x1b]0;owned\x07\x1b[2J"


def test_a_command_line_that_is_not_utf8_exports_valid_text(lab: Lab) -> None:
    """Regression: one such line broke every later --prometheus with a UnicodeEncodeError."""
    lab.run("run", "--", "printf", "%s", os.fsdecode(b"\xff"))
    prom = lab.tmp / "runner.prom"
    for _ in range(2):
        result = lab.run("stats", "-q", "--prometheus", str(prom))
        assert result.returncode == 0, result.stderr
    text = prom.read_bytes().decode("utf-8")
    assert "printf %s $'\\\\xff'" in text


def test_terminal_escapes_in_commands_and_names_never_reach_the_terminal(lab: Lab) -> None:
    """Regression: `\\e]0;…\\a\\e[2J` in a command line reached the operator's terminal raw
    through `stats` and `applied`; a name in a hostile log line too."""
    lab.run("run", "--", "true", ESCAPES)
    lab.run("apply", "step", "--", "true", ESCAPES)
    with lab.log.open("a") as log:
        log.write(
            '{"ts":"2026-11-30T00:00:00+00:00","cmd":["x"],"attempt":1,"rc":0,'
            '"duration_ms":1,"run_id":"r","name":"\\u001b[31mred"}\n'
        )
    outputs = [
        lab.run("stats").stdout,
        lab.run("stats", "--by", "name").stdout,
        lab.run("applied").stdout,
        lab.run("stats", "-q", "--prometheus", "-").stdout,
    ]
    for shown in outputs:
        assert b"\x1b" not in shown
        assert b"\x07" not in shown
    assert b"$'\\E]0;owned\\a\\E[2J'" in outputs[0]
    assert b"\\E[31mred" in outputs[1]


def test_prometheus_dash_writes_the_text_to_stdout(lab: Lab) -> None:
    """--prometheus - (as --log - reads stdin): the textfile's text on stdout, even with -q,
    and no file named '-'."""
    lab.run("run", "--name", "job", "--", "true")
    result = lab.run("stats", "-q", "--by", "name", "--prometheus", "-")
    assert result.returncode == 0
    assert b'runner_runs_total{name="job",outcome="success"} 1\n' in result.stdout
    assert not os.path.exists("-")  # the runner ran in this process's folder
