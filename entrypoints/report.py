"""What `stats` prints: a table that fits the terminal, or a JSON document.

Both are views over the same aggregates (the Prometheus view is `prometheus.py`).
"""

from __future__ import annotations

import json
import os

from adapters.jsonl import iso8601
from domain.durations import human

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.logfile import LogSummary
    from domain.aggregate import Aggregate
    from entrypoints.console import StreamConsole
    from entrypoints.invocation import Invocation

STRIP = {"success": ".", "failure": "x", "timeout": "T", "signal": "!"}
"""The history strip's cells, one per recent run, oldest first, in plain characters."""
COLOURS = {"success": "32", "failure": "31", "timeout": "33", "signal": "35"}


def ordered(groups: dict[str, Aggregate]) -> list[tuple[str, Aggregate]]:
    """Most failures first, then most runs, then by key."""
    return sorted(groups.items(), key=lambda item: (-item[1].failures, -item[1].runs, item[0]))


def document(groups: dict[str, Aggregate], by: str) -> list[dict[str, object]]:
    """The figures of each group as plain values (seconds, ISO 8601 times)."""
    rows: list[dict[str, object]] = []
    for key, group in ordered(groups):
        if not group.runs:
            continue
        hist, attempts = group.durations, group.attempt_durations
        rows.append(
            {
                by: key,
                "runs": group.runs,
                "succeeded": group.outcomes["success"],
                "failed": group.outcomes["failure"],
                "timed_out": group.outcomes["timeout"],
                "signalled": group.outcomes["signal"],
                "success_rate": round(group.outcomes["success"] / group.runs, 4),
                "exit_codes": {str(rc): n for rc, n in sorted(group.codes.items())},
                "attempts": attempts.count,
                "attempts_timed_out": group.attempt_outcomes["timeout"],
                "attempts_mean": round(group.attempts / group.runs, 3),
                "attempts_max": group.attempts_max,
                "retried_runs": group.retried,
                "duration_p50_s": _seconds(hist.quantile(0.5)),
                "duration_p95_s": _seconds(hist.quantile(0.95)),
                "duration_p99_s": _seconds(hist.quantile(0.99)),
                "duration_max_s": _seconds(hist.maximum),
                "attempt_p50_s": _seconds(attempts.quantile(0.5)),
                "attempt_p95_s": _seconds(attempts.quantile(0.95)),
                "attempt_p99_s": _seconds(attempts.quantile(0.99)),
                "last_run": _iso(group.last_run),
                "last_rc": group.last_rc,
                "last_success": _iso(group.last_success),
                "last_failure": _iso(group.last_failure),
                "last_failure_rc": group.last_failure_rc,
                "history": [outcome for _, outcome in group.recent],
            }
        )
    return rows


def _seconds(milliseconds: float) -> float:
    return round(milliseconds / 1000, 3)


COLUMNS = (
    ("runs", "RUNS"),
    ("succeeded", "OK"),
    ("failed", "FAIL"),
    ("timed_out", "TIMEOUT"),
    ("signalled", "SIGNAL"),
    ("success_rate", "OK%"),
    ("attempts_mean", "ATTEMPTS"),
    ("retried_runs", "RETRIED"),
    ("duration_p50_s", "P50"),
    ("duration_p95_s", "P95"),
    ("duration_p99_s", "P99"),
    ("attempt_p95_s", "ATT P95"),
    ("duration_max_s", "MAX"),
    ("last_run", "LAST RUN"),
    ("last_success", "LAST OK"),
    ("last_failure", "LAST FAIL"),
    ("exit_codes", "CODES"),
    ("history", "HISTORY"),
)


DROP_FIRST = (
    "exit_codes",
    "last_success",
    "last_run",
    "attempt_p95_s",
    "duration_max_s",
    "duration_p99_s",
    "signalled",
    "timed_out",
    "retried_runs",
    "duration_p95_s",
    "last_failure",
    "attempts_mean",
)
"""Columns given up, in this order, when the terminal is too narrow."""
KEY_MIN = 20


def table(rows: list[dict[str, object]], by: str, width: int, colour: bool = False) -> list[str]:
    """Rows as aligned text that fits `width`: the key column takes what the others leave.

    When even that leaves the key fewer than 20 characters, the least useful
    columns go first; a key that is still too long is cut in the middle. The
    history strip is coloured with `colour` (a terminal without NO_COLOR).
    """
    keys = [str(row[by]) for row in rows]
    longest = max(len(by), *map(len, keys))
    columns = list(COLUMNS)
    drops = list(DROP_FIRST)
    while True:
        cells = [[_cell(row, field) for field, _ in columns] for row in rows]
        widths = [
            max(len(title), *(len(line[n]) for line in cells))
            for n, (_, title) in enumerate(columns)
        ]
        room = width - sum(widths) - 2 * len(widths)
        if room >= min(KEY_MIN, longest) or not drops:
            break
        dropped = drops.pop(0)
        columns = [column for column in columns if column[0] != dropped]
    key_width = max(min(longest, room), min(KEY_MIN, longest))
    lines = ["  ".join([by.upper().ljust(key_width), *_fit([t for _, t in columns], widths)])]
    for key, line, row in zip(keys, cells, rows, strict=True):
        text = "  ".join([shorten(key, key_width).ljust(key_width), *_fit(line, widths)])
        strip = line[-1] if columns[-1][0] == "history" else ""
        if colour and strip:
            text = text[: -len(strip)] + _coloured(_outcomes(row))
        lines.append(text)
    return [line.rstrip() for line in lines]


def _coloured(history: list[str]) -> str:
    return "".join(f"\033[{COLOURS[o]}m{'x' if o == 'failure' else '■'}\033[0m" for o in history)


def _outcomes(row: dict[str, object]) -> list[str]:
    """A row's history: its latest outcomes, oldest first."""
    history = row["history"]
    return [str(outcome) for outcome in history] if isinstance(history, list) else []


def _fit(cells: list[str], widths: list[int]) -> list[str]:
    return [cell.rjust(width) for cell, width in zip(cells, widths, strict=True)]


def _cell(row: dict[str, object], field: str) -> str:
    value = row.get(field)
    if field == "attempts_mean":
        return f"{row['attempts_mean']:.2f}/{row['attempts_max']}"
    if field == "timed_out":
        return f"{value}/{row['attempts_timed_out']}"
    if field == "exit_codes":
        codes = row["exit_codes"]
        return " ".join(f"{rc}:{n}" for rc, n in codes.items()) if isinstance(codes, dict) else ""
    if field == "history":
        return "".join(STRIP[outcome] for outcome in _outcomes(row))
    if field == "success_rate":
        return f"{float(str(value)) * 100:.1f}"
    if field.startswith(("duration_", "attempt_")):
        return human(float(str(value)))
    if field == "last_failure" and value is not None:
        return f"{str(value)[:16].replace('T', ' ')} rc={row['last_failure_rc']}"
    if field.startswith("last_"):
        return "-" if value is None else str(value)[:16].replace("T", " ")
    return str(value)


def shorten(text: str, width: int) -> str:
    """`text` cut in the middle with '…' to at most `width` characters."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return iso8601(epoch)


def show(
    found: LogSummary, invocation: Invocation, console: StreamConsole, logs: list[str]
) -> None:
    """The table or the JSON document."""
    rows = document(found.summary.finished(), invocation.by)
    if invocation.json:
        doc = {
            "logs": logs,
            "by": invocation.by,
            "lines": found.lines,
            "malformed": found.malformed,
        }
        console.answer(json.dumps({**doc, "groups": rows}, indent=2))
    elif rows:
        width, colour = terminal()
        console.answer("\n".join(table(rows, invocation.by, width, colour)))
    elif found.lines or any(os.path.exists(path) for path in logs):
        where = " in " + ", ".join(logs)
        console.info("no runs" + where + (" in that time" if invocation.since is not None else ""))


def terminal() -> tuple[int, bool]:
    """The width (or $COLUMNS; unlimited for a pipe or a file), and whether to colour: on a
    terminal, unless NO_COLOR is set (not empty) or TERM is dumb."""
    tty = os.isatty(1)
    colour = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    if os.environ.get("COLUMNS", "").isdigit() or tty:
        import shutil  # noqa: PLC0415 - only for a terminal or $COLUMNS

        return shutil.get_terminal_size().columns, colour
    return 1 << 16, colour
