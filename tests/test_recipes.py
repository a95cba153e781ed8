"""Every runner command line in the README's and docs/' code blocks parses: recipes cannot rot."""

from __future__ import annotations

import json
import os
import re
import shlex

import pytest

from domain.errors import UsageError
from entrypoints.args import parse
from tests.procs import ROOT

RUNNERS = ("runner.py", "runner.pyz", "runner")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SUBSTITUTION = re.compile(r"\$\([^)]*\)|\$\{?\w+\}?")
SYNOPSIS = re.compile(r"\[[-A-Z]")
"""A usage synopsis (`[OPTIONS]`, `[--json]`), not a command line."""


DOCUMENTS = [
    "README.md",
    *sorted(f"docs/{name}" for name in os.listdir(os.path.join(ROOT, "docs"))),
]


def code_blocks() -> list[tuple[str, str]]:
    blocks = []
    for document in DOCUMENTS:
        with open(os.path.join(ROOT, document)) as handle:
            blocks += [(m.group(1), m.group(2)) for m in BLOCK.finditer(handle.read())]
    return blocks


def command_lines() -> list[list[str]]:
    """The runner's arguments in each command line of a sh, cron, ini, console or yaml block."""
    found: list[list[str]] = []
    for language, body in code_blocks():
        if language == "yaml":
            found += _yaml_commands(body)
            continue
        if language == "dockerfile":
            found += _docker_command(body)
            continue
        if language not in ("sh", "cron", "ini", "console", ""):
            continue
        for raw in body.replace("\\\n", " ").splitlines():
            line = raw.strip().removeprefix("$ ").removeprefix("ExecStart=")
            if not line or line.startswith("#") or SYNOPSIS.search(line):
                continue
            try:
                words = shlex.split(SUBSTITUTION.sub("x", line), comments=True)
            except ValueError:
                continue
            arguments = _after_runner(words)
            if arguments is not None:
                found.append(arguments)
                if "RUNNER_STATE_URL=" in body:  # exported in the block, or set on the line
                    STATEFUL.add(id(arguments))
    return found


STATEFUL: set[int] = set()
"""The command lines whose block gives them a state URL."""


def _docker_command(body: str) -> list[list[str]]:
    """ENTRYPOINT's list, completed by CMD's."""
    parts = dict(re.findall(r"^(ENTRYPOINT|CMD) (\[.*\])$", body, re.MULTILINE))
    words = json.loads(parts.get("ENTRYPOINT", "[]")) + json.loads(parts.get("CMD", "[]"))
    arguments = _after_runner(words)
    return [] if arguments is None else [arguments]


def _yaml_commands(body: str) -> list[list[str]]:
    """`command: [...]` lists, which may run over several lines."""
    found = []
    for match in re.finditer(r"command: (\[.*?\])", body, re.DOTALL):
        words = json.loads(match.group(1))
        arguments = _after_runner(words)
        if arguments is not None:
            found.append(arguments)
    return found


def _after_runner(words: list[str]) -> list[str] | None:
    for index, word in enumerate(words):
        if os.path.basename(word) in RUNNERS and index + 1 < len(words):
            following = words[index + 1]
            if following.startswith("-") or following in (
                "run",
                "apply",
                "stats",
                "applied",
                "forget",
                "locks",
                "setup",
                "help",
            ):
                return words[index + 1 :]
    return None


LINES = command_lines()


def test_the_readme_has_recipes_to_check() -> None:
    """The search finds the README's command lines (so the next test cannot pass empty)."""
    assert len(LINES) >= 20
    assert any(arguments[0] == "apply" for arguments in LINES)
    assert any("--lock" in arguments for arguments in LINES)


@pytest.mark.parametrize("arguments", LINES, ids=lambda a: " ".join(a)[:60])
def test_every_command_line_in_the_readme_parses(arguments: list[str]) -> None:
    """No recipe uses an option, value or name the runner would refuse."""
    env = {"RUNNER_APPLY_COMMAND": "/bin/true"}
    if id(arguments) in STATEFUL:
        env["RUNNER_STATE_URL"] = "postgresql://cron@db.internal:5432/ops"
    try:
        parse(arguments, env)
    except UsageError as error:
        pytest.fail(f"{' '.join(arguments)}: {error}")
