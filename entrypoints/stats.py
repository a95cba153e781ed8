"""The stats and applied subcommands: read, aggregate, print or export."""

from __future__ import annotations

import json
import os
import shutil
import time

from adapters.files import write_atomically
from adapters.logfile import summarize
from domain.apply import shell_words
from domain.errors import ExitStatus, StateError
from entrypoints import report

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.signals import SignalWatch
    from entrypoints.console import StreamConsole
    from entrypoints.invocation import Invocation


def stats(invocation: Invocation, home: str, console: StreamConsole, watch: SignalWatch) -> int:
    """Summarize the attempt log; print a table or JSON; optionally write Prometheus text."""
    path = invocation.log or os.path.join(home, "runs.jsonl")
    since = None if invocation.since is None else time.time() - invocation.since
    try:
        found = summarize(path, invocation.by, since, watch)
    except FileNotFoundError:
        console.warn(f"no attempt log at {path} yet: nothing to summarize")
        groups, lines, malformed = {}, 0, 0
    except IsADirectoryError:
        raise StateError(f"{path} is a folder, not an attempt log") from None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror}") from None
    else:
        groups, lines, malformed = found.summary.finish(), found.lines, found.malformed
        if malformed:
            noun = "line" if malformed == 1 else "lines"
            console.warn(f"skipped {malformed} malformed {noun} of {lines} in {path}")
    if invocation.prometheus is not None:
        _export(invocation.prometheus, report.prometheus(groups, invocation.by, malformed))
    rows = report.document(groups, invocation.by)
    if invocation.json:
        doc = {"log": path, "by": invocation.by, "lines": lines, "malformed": malformed}
        console.answer(json.dumps({**doc, "groups": rows}, indent=2))
    elif rows:
        width = _width()
        console.answer("\n".join(report.table(rows, invocation.by, width)))
    elif lines or os.path.exists(path):
        console.warn(f"no runs in {path}" + (" in that time" if since is not None else ""))
    return ExitStatus.OK


def _width() -> int:
    """The terminal's width (or $COLUMNS); unlimited when stdout is a pipe or a file."""
    if os.environ.get("COLUMNS", "").isdigit() or os.isatty(1):
        return shutil.get_terminal_size().columns
    return 1 << 16


def _export(path: str, text: str) -> None:
    try:
        write_atomically(path, text.encode("utf-8"))
    except OSError as exc:
        raise StateError(f"cannot write {path}: {exc.strerror or exc}") from None


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
            str(entry["name"]),
            str(entry.get("time", "-"))[:19].replace("T", " "),
            str(entry.get("run_id", "-")),
            str(entry.get("host", "-")),
            _command(entry),
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
