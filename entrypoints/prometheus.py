"""The Prometheus view of the log: a textfile for node_exporter that an alert can trust.

Counters (`*_total`) and histograms count the whole history of the log (kept across
rotation by the checkpoint), so they never go down; a --since window is a gauge,
`runner_window_*`. Every series, once exported, stays, unless --retire-after retires it.

Labels are bounded: a name has each run of digits replaced by `N` (`nightly-2026-11-30`
is `nightly-N-N-N`, one series for all nights), a command is cut to 200 characters; at
most MAX_SERIES label values are exported, the first ones seen, and later ones are summed
under `(other)`. The values exported are kept in the checkpoint, so the choice never
changes from one export to the next.
"""

from __future__ import annotations

from itertools import accumulate

from domain.aggregate import OUTCOMES, Aggregate
from domain.histogram import LE_SECONDS
from domain.stats import OTHER

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.stats import Summary

MAX_SERIES = 200
LE_TEXT = (*(repr(float(bound)) for bound in LE_SECONDS), "+Inf")
"""The bucket bounds as the Prometheus client libraries write them: 0.005, 1.0, 86400.0."""
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


def label_of(key: str, by: str) -> str:
    """The label value of a command (at most 200 characters) or of a name (digits as N)."""
    if by != "name":
        return key[:200]
    folded: list[str] = []
    for char in key:
        if not "0" <= char <= "9":
            folded.append(char)
        elif not folded or folded[-1] != "\0":
            folded.append("\0")
    return "".join(folded).replace("\0", "N")


def render(
    history: Summary, by: str, exported: list[str], *, now: float,
    window: dict[str, Aggregate] | None = None, window_seconds: float | None = None,
    constant: tuple[tuple[str, str], ...] = (), log_present: bool = True,
    retire_before: float | None = None,
) -> bytes:  # fmt: skip
    """The textfile. `exported` (the label values exported before, in order) gains the new
    ones, or loses those retired: a job whose last run started before `retire_before` and
    that has no run in progress."""
    history.settle()
    running: dict[str, int] = {}
    for key, count in history.in_progress().items():
        running[label_of(key, by)] = running.get(label_of(key, by), 0) + count
    groups = _by_label(history.by_key, by)
    for label in running:
        groups.setdefault(label, Aggregate())
    retired = set()
    for label, group in list(groups.items()):
        if (
            retire_before is not None
            and (group.last_run or 0) < retire_before
            and not running.get(label)
        ):
            retired.add(label)
            del groups[label]
    exported[:] = [label for label in exported if label not in retired]
    exported += [label for label in groups if label not in exported and label != OTHER]
    del exported[MAX_SERIES:]
    series = _placed(groups, exported)
    in_progress = {label: 0 for label in series}
    for label, count in running.items():
        placed = label if label in series else OTHER
        in_progress[placed] = in_progress.get(placed, 0) + count
    out = Text(by, constant)
    out.families(sorted(series.items()))
    out.family(
        "runner_runs_in_progress", "gauge", "Runs waiting for a retry, or never seen to end."
    )
    for label, count in sorted(in_progress.items()):
        out.sample("runner_runs_in_progress", label, count)
    if window is not None and window_seconds is not None:
        out.family(
            "runner_window_seconds", "gauge", "The --since window of the runner_window_* gauges."
        )
        out.plain("runner_window_seconds", window_seconds)
        out.family("runner_window_runs", "gauge", "Runs that started in the window, by outcome.")
        alive = {key: group for key, group in window.items() if label_of(key, by) not in retired}
        shown = {label: Aggregate() for label in series} | _placed(_by_label(alive, by), exported)
        for label, group in sorted(shown.items()):
            for outcome in OUTCOMES:
                out.sample("runner_window_runs", label, group.outcomes[outcome], outcome=outcome)
    out.family("runner_log_malformed_lines_total", "counter", "Log lines that are not attempts.")
    out.plain("runner_log_malformed_lines_total", history.malformed)
    out.family("runner_log_present", "gauge", "1 when the attempt log exists, 0 when it does not.")
    out.plain("runner_log_present", int(log_present))
    out.family("runner_stats_generated_timestamp_seconds", "gauge", "When this file was written.")
    out.plain("runner_stats_generated_timestamp_seconds", now)
    return ("\n".join(out.lines) + "\n").encode()


def _by_label(aggregates: dict[str, Aggregate], by: str) -> dict[str, Aggregate]:
    """The aggregates summed by label, the labels in the order of their last runs."""
    keys: dict[str, list[Aggregate]] = {}
    for key, aggregate in sorted(aggregates.items(), key=lambda item: item[1].last_run or 0):
        keys.setdefault(OTHER if key == OTHER else label_of(key, by), []).append(aggregate)
    return {label: _sum(found) for label, found in keys.items()}


def _placed(groups: dict[str, Aggregate], exported: list[str]) -> dict[str, Aggregate]:
    """Every exported label's series (empty when it has no runs now), the others' summed
    under OTHER."""
    placed: dict[str, list[Aggregate]] = {label: [] for label in exported}
    for label, group in groups.items():
        placed.setdefault(label if label in placed else OTHER, []).append(group)
    return {label: _sum(found) for label, found in placed.items()}


def _sum(found: list[Aggregate]) -> Aggregate:
    """One aggregate of several (the one itself when it is alone: it is only read)."""
    if len(found) == 1:
        return found[0]
    total = Aggregate()
    for aggregate in found:
        total.merge(aggregate)
    return total


class Text:
    """Exposition-format lines, label values escaped as the format requires."""

    def __init__(self, by: str, constant: tuple[tuple[str, str], ...]) -> None:
        self.by = by
        self.constant = ",".join(f'{key}="{_escape(text)}"' for key, text in constant)
        self.lines: list[str] = []
        self._bases: dict[str, str] = {}

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]

    def plain(self, name: str, value: float) -> None:
        """A sample with the constant labels alone."""
        pairs = self.constant
        self.lines.append(
            f"{name}{{{pairs}}} {_number(value)}" if pairs else f"{name} {_number(value)}"
        )

    def base(self, label: str) -> str:
        """The labels of a series, the constant ones first, escaped (once a series)."""
        found = self._bases.get(label)
        if found is None:
            own = f'{self.by}="{_escape(label)}"'
            found = self._bases[label] = f"{self.constant},{own}" if self.constant else own
        return found

    def sample(self, name: str, label: str, value: float, **extra: str) -> None:
        more = "".join(f',{key}="{text}"' for key, text in extra.items())
        self.lines.append(f"{name}{{{self.base(label)}{more}}} {_number(value)}")

    def families(self, series: list[tuple[str, Aggregate]]) -> None:
        """Each per-series family, every series in it (the counts are whole numbers)."""
        bases = [(self.base(label), group) for label, group in series]
        lines = self.lines
        self.family("runner_runs_total", "counter", "Runs that ended, by outcome (whole history).")
        for base, group in bases:
            counts = group.outcomes
            lines += [f'runner_runs_total{{{base},outcome="{o}"}} {counts[o]}' for o in OUTCOMES]
            lines.append(f'runner_runs_total{{{base},outcome="busy"}} {group.busy}')
        self.family("runner_attempts_total", "counter", "Attempts, by outcome (whole history).")
        for base, group in bases:
            counts = group.attempt_outcomes
            lines += [
                f'runner_attempts_total{{{base},outcome="{o}"}} {counts[o]}' for o in OUTCOMES
            ]
        self.family(
            "runner_retried_runs_total", "counter", "Runs that needed more than one attempt."
        )
        lines += [f"runner_retried_runs_total{{{base}}} {group.retried}" for base, group in bases]
        self.family(
            "runner_ping_failures_total", "counter", "Runs whose --ping did not reach the service."
        )
        lines += [
            f"runner_ping_failures_total{{{base}}} {group.ping_failures}" for base, group in bases
        ]
        self.family(
            "runner_run_exit_codes_total", "counter", "Runs that ended, by their exit code."
        )
        for base, group in bases:
            lines += [
                f'runner_run_exit_codes_total{{{base},code="{rc}"}} {count}'
                for rc, count in sorted(group.codes.items())
            ]
        for name, help_text, field in (
            ("runner_run_duration_seconds", "Run duration: first start to last end.", "durations"),
            ("runner_attempt_duration_seconds", "Attempt duration.", "attempt_durations"),
        ):
            self.family(name, "histogram", help_text)
            buckets = "\n".join(f'{name}_bucket{{\0,le="{le}"}} %d' for le in LE_TEXT)
            for base, group in bases:  # the bucket lines by one %-format, the labels in place
                hist = getattr(group, field)
                lines.append(
                    buckets.replace("\0", base.replace("%", "%%")) % tuple(accumulate(hist.le))
                )
                lines.append(f"{name}_sum{{{base}}} {_number(hist.total / 1000)}")
                lines.append(f"{name}_count{{{base}}} {hist.count}")
        for name, help_text, field, none in GAUGES:
            self.family(name, "gauge", help_text)
            for base, group in bases:
                value = getattr(group, field)
                lines.append(f"{name}{{{base}}} {_number(none if value is None else value)}")


def _number(value: float) -> str:
    if type(value) is int:
        return str(value)
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
