"""The applied subcommand: the markers, as a table or JSON."""

from __future__ import annotations

import json

from domain.errors import ExitStatus
from domain.words import shell_words, visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from entrypoints.console import StreamConsole


def applied(entries: list[dict[str, object]], as_json: bool, console: StreamConsole) -> int:
    """List the markers: name, when, run id, command, host."""
    if as_json:
        console.answer(json.dumps(entries, indent=2))
        return ExitStatus.OK
    if not entries:
        console.answer("nothing applied yet")
        return ExitStatus.OK
    rows = [
        (
            visible(str(entry["name"])),
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
