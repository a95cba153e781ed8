"""The applied subcommand: the markers, as a table or JSON."""

from __future__ import annotations

import json

from domain.errors import ExitStatus
from domain.words import shell_words, visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from entrypoints.console import StreamConsole


def applied(entries: list[dict[str, object]], as_json: bool, console: StreamConsole) -> int:
    """List the markers: name, when, run id, command, host; and the period of one applied
    with --every (its start: the marker counts for the period from it)."""
    entries = [_with_period(entry) for entry in entries]
    if as_json:
        console.answer(json.dumps(entries, indent=2))
        return ExitStatus.OK
    if not entries:
        console.answer("nothing applied yet")
        return ExitStatus.OK
    rows = [
        (
            visible(
                str(entry["name"])
                + (f" (period from {entry['period']})" if "period" in entry else "")
            ),
            visible(str(entry.get("time", "-"))[:19].replace("T", " ")),
            visible(str(entry.get("run_id", "-"))),
            visible(str(entry.get("host", "-"))),
            visible(_command(entry)),
        )
        for entry in entries
    ]
    titles = ("NAME", "APPLIED", "RUN ID", "HOST", "COMMAND")
    widths = [max(len(t), *(len(r[n]) for r in rows)) for n, t in enumerate(titles[:-1])]
    for row in [titles, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        console.answer("  ".join([*cells, row[-1]]).rstrip())
    return ExitStatus.OK


def _command(entry: dict[str, object]) -> str:
    if "error" in entry:
        return str(entry["error"])
    cmd = entry.get("cmd")
    if isinstance(cmd, list) and all(isinstance(word, str) for word in cmd):
        return shell_words(cmd)
    return "-"


def _with_period(entry: dict[str, object]) -> dict[str, object]:
    """A marker of apply --every (`NAME@START`) as its name and its period's start."""
    name = str(entry["name"])
    if "@" not in name:
        return entry
    base, start = name.split("@", 1)
    return {**entry, "name": base, "period": start}
