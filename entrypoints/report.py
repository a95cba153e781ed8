"""What `stats` prints: a table that fits the terminal, or a JSON document; both views over
the same aggregates (the Prometheus view is `prometheus.py`)."""

from __future__ import annotations

import json
import os

from adapters.jsonl import iso8601
from domain.durations import human

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.aggregate import Aggregate

CELLS = {"success": ".", "failure": "x", "timeout": "T", "signal": "!"}
"""The history strip's cells, one per recent run, oldest first."""
COLOURS = {"success": "32", "failure": "31", "timeout": "33", "signal": "35"}
COLUMNS = (
    ("runs", "RUNS"), ("succeeded", "OK"), ("failed", "FAIL"), ("timed_out", "TIMEOUT"),
    ("signalled", "SIGNAL"), ("busy", "BUSY"), ("success_rate", "OK%"),
    ("attempts_mean", "ATTEMPTS"), ("retried_runs", "RETRIED"), ("duration_p50_s", "P50"),
    ("duration_p95_s", "P95"), ("duration_p99_s", "P99"), ("attempt_p95_s", "ATT P95"),
    ("duration_max_s", "MAX"), ("last_run", "LAST RUN"), ("last_success", "LAST OK"),
    ("last_failure", "LAST FAIL"), ("exit_codes", "CODES"), ("history", "HISTORY"),
)  # fmt: skip
DROP_FIRST = (
    "exit_codes", "attempt_p95_s", "duration_p99_s", "duration_max_s", "busy", "retried_runs",
    "attempts_mean", "duration_p95_s", "succeeded", "signalled", "timed_out", "success_rate",
    "last_success", "duration_p50_s",
)  # fmt: skip
"""Columns given up, in this order, on a narrow terminal: never RUNS, FAIL, LAST RUN,
LAST FAIL or HISTORY, which say whether a job fails and when it last ran."""
KEY_MIN = 20


def ordered(groups: dict[str, Aggregate]) -> list[tuple[str, Aggregate]]:
    """Most failures first, then most runs, then by key."""
    return sorted(groups.items(), key=lambda item: (-item[1].failures, -item[1].runs, item[0]))


def document(groups: dict[str, Aggregate], by: str) -> list[dict[str, object]]:
    """The figures of each group as plain values (seconds, ISO 8601 times). `failed` counts
    every run that did not succeed; `timed_out` and `signalled` are parts of it."""
    rows: list[dict[str, object]] = []
    for key, group in ordered(groups):
        if not group.runs and not group.busy:
            continue
        hist, attempts = group.durations, group.attempt_durations
        runs = max(1, group.runs)
        rows.append({
            by: key,
            "runs": group.runs,
            "succeeded": group.outcomes["success"],
            "failed": group.failures,
            "timed_out": group.outcomes["timeout"],
            "signalled": group.outcomes["signal"],
            "busy": group.busy,
            "ping_failures": group.ping_failures,
            "success_rate": round(group.outcomes["success"] / runs, 4),
            "exit_codes": {str(rc): n for rc, n in sorted(group.codes.items())},
            "attempts": attempts.count,
            "attempts_timed_out": group.attempt_outcomes["timeout"],
            "attempts_mean": round(group.attempts / runs, 3),
            "attempts_max": group.attempts_max,
            "retried_runs": group.retried,
            **{f"duration_p{q}_s": _seconds(hist.quantile(q / 100)) for q in (50, 95, 99)},
            "duration_max_s": _seconds(hist.maximum),
            **{f"attempt_p{q}_s": _seconds(attempts.quantile(q / 100)) for q in (50, 95, 99)},
            "last_run": _iso(group.last_run),
            "last_rc": group.last_rc,
            "last_success": _iso(group.last_success),
            "last_failure": _iso(group.last_failure),
            "last_failure_rc": group.last_failure_rc,
            "history": group.history(),
        })  # fmt: skip
    return rows


def _seconds(milliseconds: float) -> float:
    return round(milliseconds / 1000, 3)


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else iso8601(epoch)


def table(
    groups: dict[str, Aggregate], by: str, width: int, now: float, colour: bool = False
) -> list[str]:
    """Rows as aligned text that fits `width`: the key takes what the other columns leave.
    When that leaves it fewer than KEY_MIN characters, columns go (DROP_FIRST); a key still
    too long is cut in the middle. Times are ages ("3m ago"); HISTORY is coloured with
    `colour`."""
    rows = document(groups, by)
    keys = [str(row[by]) for row in rows]
    longest = max(len(by), *map(len, keys))
    columns, drops = list(COLUMNS), list(DROP_FIRST)
    while True:
        cells = [[_cell(row, field, now) for field, _ in columns] for row in rows]
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
        if colour and line[-1]:
            history = [str(outcome) for outcome in row["history"]]  # type: ignore[attr-defined]
            text = text[: -len(line[-1])] + "".join(
                f"\033[{COLOURS[o]}m{CELLS[o]}\033[0m" for o in history
            )
        lines.append(text)
    return [line.rstrip() for line in lines]


def _fit(cells: list[str], widths: list[int]) -> list[str]:
    return [cell.rjust(width) for cell, width in zip(cells, widths, strict=True)]


def _cell(row: dict[str, object], field: str, now: float) -> str:
    value = row[field]
    if field == "attempts_mean":
        return f"{row['attempts_mean']:.2f}/{row['attempts_max']}"
    if field == "timed_out":
        return f"{value}/{row['attempts_timed_out']}"
    if field == "exit_codes":
        return " ".join(f"{rc}:{n}" for rc, n in value.items())  # type: ignore[attr-defined]
    if field == "history":
        return "".join(CELLS[str(outcome)] for outcome in value)  # type: ignore[attr-defined]
    if field == "success_rate":
        return f"{float(str(value)) * 100:.1f}"
    if field.startswith(("duration_", "attempt_")):
        return human(float(str(value)))
    if field.startswith("last_"):
        if value is None:
            return "-"
        from datetime import datetime  # noqa: PLC0415 - only for the table

        age = f"{human(max(0.0, now - datetime.fromisoformat(str(value)).timestamp()))} ago"
        return f"{age} rc={row['last_failure_rc']}" if field == "last_failure" else age
    return str(value)


def shorten(text: str, width: int) -> str:
    """`text` cut in the middle with '…' to at most `width` characters."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def as_json(
    groups: dict[str, Aggregate], by: str, logs: list[str], lines: int, malformed: int
) -> str:
    doc = {"logs": logs, "by": by, "lines": lines, "malformed": malformed}
    return json.dumps({**doc, "groups": document(groups, by)}, indent=2)


def terminal() -> tuple[int, bool]:
    """The width (or $COLUMNS; unlimited for a pipe or a file), and whether to colour: on a
    terminal, unless NO_COLOR is set (not empty) or TERM is dumb."""
    tty = os.isatty(1)
    colour = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    if os.environ.get("COLUMNS", "").isdigit() or tty:
        import shutil  # noqa: PLC0415 - only for a terminal or $COLUMNS

        return shutil.get_terminal_size().columns, colour
    return 1 << 16, colour
