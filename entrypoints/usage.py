"""The help text: one page per subcommand, from one table of options (loaded only for help)."""

from __future__ import annotations

import os

from entrypoints.helptext import DURATIONS_NOTE, EXITS, FOOTER, SUBCOMMANDS, SUMMARIES
from entrypoints.invocation import ACTIONS, ALLOWED
from entrypoints.optiontext import OPTIONS

VERSION = "0.6.0"

WIDTH = 78


def program() -> str:
    """How the user called the runner: `runner` installed, `runner.pyz`, else `runner.py`."""
    import sys  # noqa: PLC0415 - loaded already; kept out of the module's import list

    called = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return called if called in ("runner", "runner.pyz") else "runner.py"


def options_of(action: str) -> list[str]:
    """The options `action` takes, in the table's order (-q is --quiet's short form)."""
    return [option for option in OPTIONS if option in ALLOWED[action]]


def page(topic: str | None, home: str | None = None) -> str:
    """The help of one subcommand, or the overview (with the home this runner uses)."""
    if topic is None:
        return _overview() + ("" if home is None else "\n\n" + where(home))
    synopsis, description = SUBCOMMANDS[topic]
    lines = [f"usage: {program()} {synopsis}", "", description, "", "options:"]
    for option in options_of(topic):
        lines += _option(option)
    lines += ["  -h, --help", "", DURATIONS_NOTE, EXITS[topic]]
    return "\n".join(lines)


def _overview() -> str:
    lines = [f"usage: {program()} [--home DIR] [-q] SUBCOMMAND [OPTIONS] ...", ""]
    lines += [
        "Run an external command safely: ended when it hangs, retried with exponential",
        "backoff when it fails, applied once when it must not run twice.",
        "",
        "subcommands:",
    ]
    for action in ACTIONS:
        lines.append(f"  {action:<9}{SUMMARIES[action]}")
    lines += ["", "every subcommand:"]
    for option in ("--home", "--quiet"):
        lines += _option(option)
    lines += [
        f"  -h, --help     this page; {program()} help SUBCOMMAND or SUBCOMMAND --help for one",
        "  -V, --version  the version",
        "",
        FOOTER,
    ]
    return "\n".join(lines)


def _option(option: str) -> list[str]:
    """`  --opt METAVAR` and its text, wrapped, ending with its default."""
    import textwrap  # noqa: PLC0415 - only for help

    metavar, text, default = OPTIONS[option]
    head = f"  {option} {metavar}".rstrip()
    body = textwrap.wrap(f"{text} (default: {default})", WIDTH - 6)
    return [head] + ["      " + line for line in body]


def where(home: str) -> str:
    """What this runner uses, resolved: its home, attempt log and state (a state URL is shown
    without its password)."""
    url = os.environ.get("RUNNER_STATE_URL")
    if url:
        from entrypoints.environ import scrubbed_environ  # noqa: PLC0415 - only for help

        shown = scrubbed_environ({"RUNNER_STATE_URL": url}).get("RUNNER_STATE_URL", "(not a URL)")
        state = f"PostgreSQL at {shown} (RUNNER_STATE_URL)"
    else:
        state = os.path.join(home, "state")
    return "\n".join(
        [
            "this runner:",
            f"  home   {home}",
            f"  log    {os.path.join(home, 'runs.jsonl')}",
            f"  state  {state}",
        ]
    )
