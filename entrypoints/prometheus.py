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

from domain.aggregate import Aggregate
from domain.outcomes import OUTCOMES
from domain.stats import OTHER
from entrypoints.exposition import Copy, Text, assemble

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import KeysView
    from typing import Any

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
    last_runs: dict[str, float | None], by: str, series: list[str]
) -> tuple[dict[str, list[str]], list[str]]:
    """The keys under each label value (none under a label exported before whose keys are
    gone), and the label values exported from now on. `last_runs` says when each key's
    last run started: new keys take the free labels in that order."""
    known = list(series)
    allowed = set(known)
    keys_of: dict[str, list[str]] = {}
    for key in sorted(last_runs, key=lambda k: last_runs[k] or 0):
        label = label_of(key, by)
        if label not in allowed:
            if len(known) < MAX_SERIES:
                known.append(label)
                allowed.add(label)
            else:
                label = OTHER
        keys_of.setdefault(label, []).append(key)
    for label in known:
        keys_of.setdefault(label, [])
    return keys_of, known


def render(
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
    before: tuple[bytes, dict[str, Any]] | None = None,
) -> tuple[list[bytes | memoryview], list[str], dict[str, Any]]:
    """The textfile (its pieces, in order: the copied ones are slices of the one before);
    the label values it exported (to remember for the next one); and
    where it put the lines of each series: `keys`, the place of each key exported alone
    under its own label ({key: place}: `(other)` holds more than one, or a key that is
    not `(other)` itself), and `bounds`, for each family, where each place's lines start
    and where the last one's end (to export them again while the key is unchanged).

    `constant` labels (--label) go on every sample, so that textfiles of several homes
    never collide; `log_present` says whether there was a log to read at all. With
    `retire_before` (epoch seconds, --retire-after), a job whose last run started
    before then is left out, and its label no longer counts against the limit.
    `before`: the textfile last written with these constant labels, and where its keys'
    lines are in it; the lines of a key still saved (unchanged since) are copied from it
    as they are, its aggregate not even read.
    """
    last_runs = history.last_runs()
    keys_of, known = fold(last_runs, by, series)
    if retire_before is not None:
        keys_of, known = _retire(keys_of, known, last_runs, retire_before)
    out = Text(by, constant)
    labels = sorted(keys_of.items())
    copy = None if before is None else _copy(*before, labels, history.saved.keys())
    copied = set(() if copy is None else copy.places)
    fresh = {
        place: [piece.encode() for piece in out.series(label, _group(history, keys))]
        for place, (label, keys) in enumerate(labels)
        if place not in copied
    }
    chunks, bounds = assemble(copy, fresh)
    alone = {
        keys[0]: at
        for at, (label, keys) in enumerate(labels)
        if len(keys) == 1 and _own(label, keys[0])
    }
    placed: dict[str, Any] = {"keys": alone, "bounds": bounds}
    running: dict[str, int] = {}
    for key, count in history.in_progress().items():
        label = label_of(key, by) if label_of(key, by) in keys_of else OTHER
        running[label] = running.get(label, 0) + count
    out.family(
        "runner_runs_in_progress", "gauge", "Runs waiting for a retry, or never seen to end."
    )
    out.whole(
        "runner_runs_in_progress", [(label, running.get(label, 0)) for label in sorted(keys_of)]
    )
    if window is not None and window_seconds is not None:
        _window(out, window, by, known, window_seconds)
    out.family("runner_log_malformed_lines_total", "counter", "Log lines that are not attempts.")
    out.plain("runner_log_malformed_lines_total", malformed)
    out.family("runner_log_present", "gauge", "1 when the attempt log exists, 0 when it does not.")
    out.plain("runner_log_present", int(log_present))
    out.family("runner_stats_generated_timestamp_seconds", "gauge", "When this file was written.")
    out.plain("runner_stats_generated_timestamp_seconds", now)
    chunks.append(("\n".join(out.lines) + "\n").encode())
    return chunks, known, placed


def _copy(
    old: bytes, where: dict[str, Any], labels: list[tuple[str, list[str]]], unchanged: KeysView[str]
) -> Copy | None:
    """What can be copied from the textfile written before (`where` says where each key's
    lines are in it): the lines of the unchanged keys exported alone under their own label,
    then as now. None when anything there is amiss (all is rendered anew)."""
    alone = where.get("keys")
    if type(alone) is not dict:
        return None
    places, olds = [], []
    for place, (label, keys) in enumerate(labels):
        if len(keys) == 1 and keys[0] in unchanged and _own(label, keys[0]):
            found = alone.get(keys[0])
            if type(found) is int:
                places.append(place)
                olds.append(found)
    try:
        return Copy(old, places, olds, where.get("bounds"))  # type: ignore[arg-type]
    except ValueError:
        return None


def _own(label: str, key: str) -> bool:
    """Whether `key` is under its own label (label_of(key)), knowing that `fold` put it
    under that label or under OTHER, which is no key's own label but OTHER's."""
    return label != OTHER or key == OTHER


def _group(history: Summary, keys: list[str]) -> Aggregate:
    """The aggregate of the keys under one label: the key's own when it is alone."""
    if len(keys) == 1:
        return history.aggregate(keys[0])
    group = Aggregate()
    for key in keys:
        group.merge(history.aggregate(key))
    return group


def _retire(
    keys_of: dict[str, list[str]],
    known: list[str],
    last_runs: dict[str, float | None],
    before: float,
) -> tuple[dict[str, list[str]], list[str]]:
    def current(label: str) -> bool:
        runs = [last_runs[key] for key in keys_of.get(label, ())]
        last = max((run for run in runs if run is not None), default=None)
        return last is not None and last >= before

    kept = {label: keys for label, keys in keys_of.items() if current(label)}
    return kept, [label for label in known if current(label)]


def _window(
    out: Text, window: dict[str, Aggregate], by: str, known: list[str], seconds: float
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
