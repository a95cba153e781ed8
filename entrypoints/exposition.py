"""The textfile's lines: its metric families, and each series written as Prometheus'
exposition format wants it (labels escaped, numbers as the client libraries write them)."""

from __future__ import annotations

from itertools import chain, compress, pairwise, repeat
from operator import add, and_, eq, not_

from domain.outcomes import OUTCOMES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from domain.aggregate import Aggregate
    from domain.histogram import Histogram

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
FAMILIES = (
    ("runner_runs_total", "counter", "Runs that ended, by outcome (whole history)."),
    ("runner_attempts_total", "counter", "Attempts, by outcome (whole history)."),
    ("runner_retried_runs_total", "counter", "Runs that needed more than one attempt."),
    ("runner_run_exit_codes_total", "counter", "Runs that ended, by their exit code."),
    ("runner_run_duration_seconds", "histogram", "Run duration: first start to last end."),
    ("runner_attempt_duration_seconds", "histogram", "Attempt duration."),
    *((name, "gauge", help_text) for name, help_text, _, _ in GAUGES),
)
"""The metric families of each series, in the textfile's order."""


class Text:
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

    def series(self, label: str, group: Aggregate) -> list[str]:
        """The lines of one series in each of FAMILIES, one string a family."""
        base = self._base(label)
        codes = sorted(group.codes.items())
        pieces = [
            self._outcomes("runner_runs_total", base, group.outcomes),
            self._outcomes("runner_attempts_total", base, group.attempt_outcomes),
            f"runner_retried_runs_total{{{base}}} {_number(group.retried)}",
            "\n".join(
                f'runner_run_exit_codes_total{{{base},code="{code}"}} {_number(count)}'
                for code, count in codes
            ),
            self._histogram("runner_run_duration_seconds", base, group.durations),
            self._histogram("runner_attempt_duration_seconds", base, group.attempt_durations),
        ]
        for name, _, field, none in GAUGES:
            value = getattr(group, field)
            pieces.append(f"{name}{{{base}}} {_number(none if value is None else value)}")
        return pieces

    @staticmethod
    def _outcomes(name: str, base: str, counts: dict[str, int]) -> str:
        """One sample per outcome (counts are whole numbers; outcomes need no escaping)."""
        return "\n".join(
            f'{name}{{{base},outcome="{outcome}"}} {counts[outcome]}' for outcome in OUTCOMES
        )

    @staticmethod
    def _histogram(name: str, base: str, hist: Histogram) -> str:
        lines = [f'{name}_bucket{{{base},le="{le}"}} {count}' for le, count in hist.cumulative()]
        lines.append(f"{name}_sum{{{base}}} {_number(hist.total / 1000)}")
        lines.append(f"{name}_count{{{base}}} {hist.count}")
        return "\n".join(lines)

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


NAMES = [name.encode() for name, _, _ in FAMILIES]
"""Each family's name, as its lines start."""


class Copy:
    """The lines of unchanged series in the textfile written before, to copy rather than
    render: for each family, the runs of series whose lines follow one another there, each
    copied as one slice (a few slices where nearly nothing changed).

    `labels` are the copied series' places among the series now (ascending); `spans`, for
    each, where its lines of each family were, [offset, length, …]. Raises ValueError when
    they are not where a family's lines start and end.
    """

    def __init__(self, old: bytes, labels: list[int], spans: list[list[int]]) -> None:
        width = 2 * len(FAMILIES)
        flat = list(chain.from_iterable(spans))
        if len(flat) != width * len(spans) or not set(map(type, flat)) <= {int}:
            raise ValueError("spans")
        if min(flat, default=0) < 0:
            raise ValueError("spans")
        self.view, self.labels = memoryview(old), labels
        self.starts: list[list[int]] = []
        self.lengths: list[list[int]] = []
        self.ends: list[list[int]] = []
        """Where each series' lines of each family end, their newline included."""
        self.runs: list[list[tuple[int, int]]] = []
        follows = list(map(eq, map(add, labels[:-1], repeat(1)), labels[1:]))
        for index, name in enumerate(NAMES):
            starts, lengths = flat[2 * index :: width], flat[2 * index + 1 :: width]
            ends = list(map(add, starts, map(add, lengths, map(bool, lengths))))
            joined = map(and_, follows, map(eq, ends[:-1], starts[1:]))
            cuts = [0, *compress(range(1, len(starts)), map(not_, joined)), len(starts)]
            runs = list(pairwise(cuts)) if starts else []
            for first, last in runs:
                start, end = starts[first], ends[last - 1]
                if end > len(old) or (
                    end > start
                    and not (old.startswith(name, start) and old.endswith(b"\n", start, end))
                ):
                    raise ValueError("lines")
            self.starts.append(starts)
            self.lengths.append(lengths)
            self.ends.append(ends)
            self.runs.append(runs)


def assemble(
    copy: Copy | None, fresh: dict[int, list[bytes]]
) -> tuple[list[bytes | memoryview], dict[int, list[int]]]:
    """Every family under its HELP and TYPE, the series in order: their lines copied (runs
    of `copy`) or rendered (`fresh`, by the series' place: one string a family). And where
    each series' lines of each family now are, by its place: [offset, length, …]."""
    chunks: list[bytes | memoryview] = []
    spans: dict[int, list[int]] = {place: [] for place in fresh}
    columns: list[list[int]] = []
    at = 0
    view = memoryview(b"") if copy is None else copy.view
    for index, (name, kind, help_text) in enumerate(FAMILIES):
        head = f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n".encode()
        chunks.append(head)
        at += len(head)
        starts, lengths, ends = (
            ([], [], [])
            if copy is None
            else (copy.starts[index], copy.lengths[index], copy.ends[index])
        )
        segments = [(place, -1, -1) for place in fresh]
        if copy is not None:
            segments += [(copy.labels[first], first, last) for first, last in copy.runs[index]]
        shifts = []
        for place, first, last in sorted(segments):
            if first < 0:
                piece = fresh[place][index]
                spans[place] += at, len(piece)
                if piece:
                    chunks += piece, b"\n"
                    at += len(piece) + 1
            else:
                chunks.append(view[starts[first] : ends[last - 1]])
                shifts.append((last - first, at - starts[first]))
                at += ends[last - 1] - starts[first]
        moved = chain.from_iterable(repeat(shift, count) for count, shift in shifts)
        columns += [list(map(add, starts, moved)), lengths]
    if copy is not None:
        spans.update(zip(copy.labels, map(list, zip(*columns, strict=True)), strict=True))
    return chunks, spans
