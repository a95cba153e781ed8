"""The Prometheus view of the log: a textfile for node_exporter that an alert can trust.

Counters (`*_total`) and histograms count the whole history of the log (kept across
rotation by the checkpoint), so they never go down. Whatever a --since window says
is a gauge named `runner_window_*`. Every series, once exported, stays.

Labels are bounded: an apply name has each run of digits replaced by `N` (so
`nightly-2026-11-30` is `nightly-N-N-N`, one series for all nights); at most
MAX_SERIES label values are exported, the first ones seen, and later ones are
folded into `(other)`. The label values already exported are remembered, so the
choice never changes from one export to the next.
"""

from __future__ import annotations

from domain.aggregate import OUTCOMES, Aggregate
from domain.stats import OTHER

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.histogram import Histogram
    from domain.stats import Summary

MAX_SERIES = 200


def label_of(key: str, by: str) -> str:
    """The label value of a command (as is, at most 200 characters) or a name (digits as N)."""
    if by != "name":
        return key[:200]
    folded: list[str] = []
    in_digits = False
    for char in key:
        digit = "0" <= char <= "9"
        if not digit:
            folded.append(char)
        elif not in_digits:
            folded.append("N")
        in_digits = digit
    return "".join(folded)


def fold(
    groups: dict[str, Aggregate], by: str, series: list[str]
) -> tuple[dict[str, Aggregate], list[str]]:
    """The aggregates by label value, and the label values exported from now on.

    A label of one key shows that key's aggregate as it is; only labels that join
    several keys get an aggregate of their own.
    """
    known = list(series)
    allowed = set(known)
    keys_of: dict[str, list[str]] = {}
    for key in sorted(groups, key=lambda k: groups[k].last_run or 0):
        label = label_of(key, by)
        if label not in allowed:
            if len(known) < MAX_SERIES:
                known.append(label)
                allowed.add(label)
            else:
                label = OTHER
        keys_of.setdefault(label, []).append(key)
    folded: dict[str, Aggregate] = {}
    for label, keys in keys_of.items():
        folded[label] = groups[keys[0]] if len(keys) == 1 else Aggregate()
        if len(keys) > 1:
            for key in keys:
                folded[label].merge(groups[key])
    for label in known:
        folded.setdefault(label, Aggregate())
    return folded, known


def text(
    history: Summary,
    by: str,
    *,
    malformed: int,
    series: list[str],
    now: float,
    window: dict[str, Aggregate] | None = None,
    window_seconds: float | None = None,
    constant: tuple[tuple[str, str], ...] = (),
    log_present: bool = True,
    retire_before: float | None = None,
) -> tuple[str, list[str]]:
    """The textfile, and the label values it exported (to remember for the next one).

    `constant` labels (--label) go on every sample, so that textfiles of several homes
    never collide; `log_present` says whether there was a log to read at all. With
    `retire_before` (epoch seconds, --retire-after), a job whose last run started
    before then is left out, and its label no longer counts against the limit.
    """
    groups, known = fold(history.by_key, by, series)
    if retire_before is not None:
        groups, known = _retire(groups, known, retire_before)
    items = sorted(groups.items())
    out = _Text(by, constant)
    _counters(out, items)
    for name, help_text, pick in HISTOGRAMS:
        out.family(name, "histogram", help_text)
        for label, group in items:
            out.histogram(name, label, getattr(group, pick))
    for name, help_text, field, none in GAUGES:
        out.family(name, "gauge", help_text)
        for label, group in items:
            value = getattr(group, field)
            out.sample(name, label, none if value is None else value)
    running: dict[str, int] = {}
    for key, count in history.in_progress().items():
        label = label_of(key, by) if label_of(key, by) in groups else OTHER
        running[label] = running.get(label, 0) + count
    out.family(
        "runner_runs_in_progress", "gauge", "Runs waiting for a retry, or never seen to end."
    )
    for label, _ in items:
        out.sample("runner_runs_in_progress", label, running.get(label, 0))
    if window is not None and window_seconds is not None:
        _window(out, window, by, known, window_seconds)
    out.family("runner_log_malformed_lines_total", "counter", "Log lines that are not attempts.")
    out.plain("runner_log_malformed_lines_total", malformed)
    out.family("runner_log_present", "gauge", "1 when the attempt log exists, 0 when it does not.")
    out.plain("runner_log_present", int(log_present))
    out.family("runner_stats_generated_timestamp_seconds", "gauge", "When this file was written.")
    out.plain("runner_stats_generated_timestamp_seconds", now)
    return "\n".join(out.lines) + "\n", known


def _retire(
    groups: dict[str, Aggregate], known: list[str], before: float
) -> tuple[dict[str, Aggregate], list[str]]:
    def current(label: str) -> bool:
        last = groups[label].last_run if label in groups else None
        return last is not None and last >= before

    kept = {label: group for label, group in groups.items() if current(label)}
    return kept, [label for label in known if current(label)]


HISTOGRAMS = (
    ("runner_run_duration_seconds", "Run duration: first start to last end.", "durations"),
    ("runner_attempt_duration_seconds", "Attempt duration.", "attempt_durations"),
)
GAUGES = (
    ("runner_last_run_timestamp_seconds", "Start of the last run (0: none).", "last_run", 0),
    (
        "runner_last_success_timestamp_seconds",
        "End of the last success (0: none).",
        "last_success",
        0,
    ),
    (
        "runner_last_failure_timestamp_seconds",
        "End of the last failure (0: none).",
        "last_failure",
        0,
    ),
    ("runner_last_exit_code", "Exit code of the last run (-1: none).", "last_rc", -1),
    (
        "runner_last_failure_exit_code",
        "Exit code of the last failed run (-1: none).",
        "last_failure_rc",
        -1,
    ),
    ("runner_last_run_duration_seconds", "Duration of the last run (0: none).", "last_duration", 0),
)


def _counters(out: _Text, items: list[tuple[str, Aggregate]]) -> None:
    out.family("runner_runs_total", "counter", "Runs that ended, by outcome (whole history).")
    for label, group in items:
        out.outcomes("runner_runs_total", label, group.outcomes)
    out.family("runner_attempts_total", "counter", "Attempts, by outcome (whole history).")
    for label, group in items:
        out.outcomes("runner_attempts_total", label, group.attempt_outcomes)
    out.family("runner_retried_runs_total", "counter", "Runs that needed more than one attempt.")
    for label, group in items:
        out.sample("runner_retried_runs_total", label, group.retried)
    out.family("runner_run_exit_codes_total", "counter", "Runs that ended, by their exit code.")
    for label, group in items:
        for code, count in sorted(group.codes.items()):
            out.sample("runner_run_exit_codes_total", label, count, code=str(code))


def _window(
    out: _Text, window: dict[str, Aggregate], by: str, known: list[str], seconds: float
) -> None:
    """--since: runs that started in the window, as gauges (a window's count goes down)."""
    folded: dict[str, Aggregate] = {label: Aggregate() for label in known}
    for key, group in window.items():
        label = label_of(key, by)
        folded.setdefault(label if label in folded else OTHER, Aggregate()).merge(group)
    out.family(
        "runner_window_seconds", "gauge", "The --since window of the runner_window_* gauges."
    )
    out.plain("runner_window_seconds", seconds)
    out.family("runner_window_runs", "gauge", "Runs that started in the window, by outcome.")
    for label, group in sorted(folded.items()):
        for outcome in OUTCOMES:
            out.sample("runner_window_runs", label, group.outcomes[outcome], outcome=outcome)


class _Text:
    """Exposition-format lines, with the label escaping Prometheus requires. The labels of
    a series are escaped once and used for each of its samples."""

    def __init__(self, by: str, constant: tuple[tuple[str, str], ...] = ()) -> None:
        self.by = by
        self.constant = ",".join(f'{key}="{_escape(text)}"' for key, text in constant)
        self.lines: list[str] = []
        self._bases: dict[str, str] = {}

    def plain(self, name: str, value: float) -> None:
        """A sample with the constant labels alone."""
        pairs = self.constant
        self.lines.append(f"{name}{{{pairs}}} {value}" if pairs else f"{name} {value}")

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]

    def sample(self, name: str, label: str, value: float, **extra: str) -> None:
        more = "".join(f',{key}="{_escape(text)}"' for key, text in extra.items()) if extra else ""
        self.lines.append(f"{name}{{{self._base(label)}{more}}} {_number(value)}")

    def outcomes(self, name: str, label: str, counts: dict[str, int]) -> None:
        """One sample per outcome (counts are whole numbers; outcomes need no escaping)."""
        base = self._base(label)
        self.lines += [
            f'{name}{{{base},outcome="{outcome}"}} {counts[outcome]}' for outcome in OUTCOMES
        ]

    def histogram(self, name: str, label: str, hist: Histogram) -> None:
        base = self._base(label)
        self.lines += [
            f'{name}_bucket{{{base},le="{le}"}} {count}' for le, count in hist.cumulative()
        ]
        self.lines.append(f"{name}_sum{{{base}}} {_number(hist.total / 1000)}")
        self.lines.append(f"{name}_count{{{base}}} {hist.count}")

    def _base(self, label: str) -> str:
        """The constant labels and the series' own, escaped (once per series)."""
        base = self._bases.get(label)
        if base is None:
            own = f'{self.by}="{_escape(label)}"'
            base = self._bases[label] = f"{self.constant},{own}" if self.constant else own
        return base


def _number(value: float) -> str:
    if type(value) is int:
        return str(value)
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
