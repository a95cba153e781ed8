"""What `stats` prints: a table that fits the terminal, a JSON document, Prometheus text."""

from __future__ import annotations

import time

from adapters.jsonl import iso8601

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.stats import Aggregate

OUTCOMES = ("success", "failure", "timeout", "signal")


def ordered(groups: dict[str, Aggregate]) -> list[tuple[str, Aggregate]]:
    """Most failures first, then most runs, then by key."""
    return sorted(groups.items(), key=lambda item: (-item[1].failures, -item[1].runs, item[0]))


def document(groups: dict[str, Aggregate], by: str) -> list[dict[str, object]]:
    """The figures of each group as plain values (seconds, ISO 8601 times)."""
    rows: list[dict[str, object]] = []
    for key, group in ordered(groups):
        hist = group.durations
        rows.append(
            {
                by: key,
                "runs": group.runs,
                "succeeded": group.outcomes["success"],
                "failed": group.outcomes["failure"],
                "timed_out": group.outcomes["timeout"],
                "signalled": group.outcomes["signal"],
                "success_rate": round(group.outcomes["success"] / group.runs, 4),
                "attempts_mean": round(group.attempts / group.runs, 3),
                "attempts_max": group.attempts_max,
                "retried_runs": group.retried,
                "duration_p50_s": round(hist.quantile(0.5) / 1000, 3),
                "duration_p95_s": round(hist.quantile(0.95) / 1000, 3),
                "duration_max_s": round(hist.maximum / 1000, 3),
                "last_run": _iso(group.last_run),
                "last_success": _iso(group.last_success),
            }
        )
    return rows


COLUMNS = (
    ("runs", "RUNS"),
    ("succeeded", "OK"),
    ("failed", "FAIL"),
    ("timed_out", "TIMEOUT"),
    ("signalled", "SIGNAL"),
    ("success_rate", "OK%"),
    ("attempts", "ATTEMPTS"),
    ("retried_runs", "RETRIED"),
    ("duration_p50_s", "P50"),
    ("duration_p95_s", "P95"),
    ("duration_max_s", "MAX"),
    ("last_run", "LAST RUN"),
    ("last_success", "LAST OK"),
)


DROP_FIRST = (
    "last_success",
    "last_run",
    "duration_max_s",
    "signalled",
    "timed_out",
    "retried_runs",
    "duration_p95_s",
    "attempts",
)
"""Columns given up, in this order, when the terminal is too narrow."""
KEY_MIN = 20


def table(rows: list[dict[str, object]], by: str, width: int) -> list[str]:
    """Rows as aligned text that fits `width`: the key column takes what the others leave.

    When even that leaves the key fewer than 20 characters, the least useful
    columns go first; a key that is still too long is cut in the middle.
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
    for key, line in zip(keys, cells, strict=True):
        lines.append("  ".join([shorten(key, key_width).ljust(key_width), *_fit(line, widths)]))
    return [line.rstrip() for line in lines]


def _fit(cells: list[str], widths: list[int]) -> list[str]:
    return [cell.rjust(width) for cell, width in zip(cells, widths, strict=True)]


def _cell(row: dict[str, object], field: str) -> str:
    value = row.get(field)
    if field == "attempts":
        return f"{row['attempts_mean']:.2f}/{row['attempts_max']}"
    if field == "success_rate":
        return f"{float(str(value)) * 100:.1f}"
    if field.startswith("duration_"):
        return human_seconds(float(str(value)))
    if field.startswith("last_"):
        return "-" if value is None else str(value)[:16].replace("T", " ")
    return str(value)


def shorten(text: str, width: int) -> str:
    """`text` cut in the middle with '…' to at most `width` characters."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def human_seconds(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return iso8601(epoch)


def prometheus(groups: dict[str, Aggregate], by: str, malformed: int) -> str:
    """The aggregates in the Prometheus text exposition format (textfile collector)."""
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str) -> None:
        lines.extend([f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"])

    items = ordered(groups)
    family("runner_runs_total", "counter", "Runs in runs.jsonl by outcome.")
    for key, group in items:
        for outcome in OUTCOMES:
            labels = _labels(by, key, outcome=outcome)
            lines.append(f"runner_runs_total{labels} {group.outcomes[outcome]}")
    family("runner_attempts_total", "counter", "Attempts in runs.jsonl.")
    lines += [f"runner_attempts_total{_labels(by, k)} {g.attempts}" for k, g in items]
    family("runner_retried_runs_total", "counter", "Runs that needed more than one attempt.")
    lines += [f"runner_retried_runs_total{_labels(by, k)} {g.retried}" for k, g in items]
    family("runner_run_duration_seconds", "summary", "Run duration, first start to last end.")
    for key, group in items:
        hist = group.durations
        for q in ("0.5", "0.95"):
            labels = _labels(by, key, quantile=q)
            lines.append(f"runner_run_duration_seconds{labels} {hist.quantile(float(q)) / 1000}")
        lines.append(f"runner_run_duration_seconds_sum{_labels(by, key)} {hist.total / 1000}")
        lines.append(f"runner_run_duration_seconds_count{_labels(by, key)} {hist.count}")
    family("runner_last_run_timestamp_seconds", "gauge", "Start of the last run (Unix time).")
    lines += [
        f"runner_last_run_timestamp_seconds{_labels(by, k)} {g.last_run}"
        for k, g in items
        if g.last_run is not None
    ]
    family("runner_last_success_timestamp_seconds", "gauge", "End of the last successful run.")
    lines += [
        f"runner_last_success_timestamp_seconds{_labels(by, k)} {g.last_success}"
        for k, g in items
        if g.last_success is not None
    ]
    family("runner_log_malformed_lines", "gauge", "Lines of runs.jsonl that are not attempts.")
    lines.append(f"runner_log_malformed_lines {malformed}")
    family("runner_stats_generated_timestamp_seconds", "gauge", "When this file was written.")
    lines.append(f"runner_stats_generated_timestamp_seconds {time.time()}")
    return "\n".join(lines) + "\n"


def _labels(by: str, key: str, **extra: str) -> str:
    pairs = [(by, key), *extra.items()]
    return "{" + ",".join(f'{name}="{_escape(value)}"' for name, value in pairs) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
