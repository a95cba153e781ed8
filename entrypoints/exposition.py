"""The textfile's lines: its metric families, and each series written as Prometheus'
exposition format wants it (labels escaped, numbers as the client libraries write them)."""

from __future__ import annotations

from itertools import accumulate, compress, pairwise, repeat
from operator import add, and_, eq, lt, not_

from domain.buckets import LE_TEXT
from domain.outcomes import OUTCOMES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable

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

    def whole(self, name: str, counts: Iterable[tuple[str, int]]) -> None:
        """One sample of a whole number for each label, in the order given."""
        base = self._base
        self.lines += [f"{name}{{{base(label)}}} {count}" for label, count in counts]

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
        """Its buckets (cumulative, as Prometheus wants them), sum and count: the bucket
        lines written by one %-format of the family's BUCKET_LINES, the labels in place."""
        buckets = BUCKET_LINES[name].replace("\0", base.replace("%", "%%"))
        return (
            f"{buckets % tuple(accumulate(hist.le))}\n"
            f"{name}_sum{{{base}}} {_number(hist.total / 1000)}\n"
            f"{name}_count{{{base}}} {hist.count}"
        )

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


BUCKET_LINES = {
    name: "\n".join(f'{name}_bucket{{\0,le="{le}"}} %d' for le in LE_TEXT)
    for name, kind, _ in FAMILIES
    if kind == "histogram"
}
"""The bucket lines of each histogram family: NUL where the labels go, %d for each count."""

NAMES = [name.encode() for name, _, _ in FAMILIES]
"""Each family's name, as its lines start."""


class Copy:
    """The lines of unchanged series in the textfile written before, to copy rather than
    render: runs of series that follow one another both there and now, each copied as one
    slice a family (a few slices where nearly nothing changed).

    `places` are the copied series' places among the series now (ascending); `olds`, each
    one's place there; `bounds`, for each family, where each series' lines start there,
    and where the last one's end (one more than the series). Raises ValueError when they
    are not where a family's lines start and end.
    """

    def __init__(
        self, old: bytes, places: list[int], olds: list[int], bounds: list[list[int]]
    ) -> None:
        if not all(map(lt, olds[:-1], olds[1:])) or min(olds, default=0) < 0:
            raise ValueError("places")  # in the order of the labels, there as now
        if type(bounds) is not list or len(bounds) != len(FAMILIES):
            raise ValueError("bounds")
        follows = map(eq, map(add, places[:-1], repeat(1)), places[1:])
        joined = map(and_, follows, map(eq, map(add, olds[:-1], repeat(1)), olds[1:]))
        cuts = [0, *compress(range(1, len(places)), map(not_, joined)), len(places)]
        self.runs = [(places[a], olds[a], b - a) for a, b in pairwise(cuts)] if places else []
        """Each run's place now, its first series' place there, and its length in series."""
        needed = max((first + count for _, first, count in self.runs), default=0)
        try:  # a TypeError for what is not a number, or a start that is no whole one
            for name, column in zip(NAMES, bounds, strict=True):
                if not (
                    type(column) is list
                    and len(column) > needed
                    and column == sorted(column)  # one C-level pass over what is in order
                    and column[0] >= 0
                    and column[-1] <= len(old)
                ):
                    raise ValueError("bounds")
                for _, first, count in self.runs:
                    start, end = column[first], column[first + count]
                    if end > start and not (
                        old.startswith(name, start) and old.endswith(b"\n", start, end)
                    ):
                        raise ValueError("lines")
        except TypeError:
            raise ValueError("bounds") from None
        self.places, self.view, self.bounds = places, memoryview(old), bounds


def assemble(
    copy: Copy | None, fresh: dict[int, list[bytes]]
) -> tuple[list[bytes | memoryview], list[list[int]]]:
    """Every family under its HELP and TYPE, the series in order: their lines copied (runs
    of `copy`) or rendered (`fresh`, by the series' place: one string a family). And, for
    each family, where each series' lines now start, and where the last one's end."""
    chunks: list[bytes | memoryview] = []
    bounds: list[list[int]] = []
    segments = sorted([(place, -1, 0) for place in fresh] + (copy.runs if copy else []))
    at = 0
    for index, (name, kind, help_text) in enumerate(FAMILIES):
        head = f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n".encode()
        chunks.append(head)
        at += len(head)
        column: list[int] = []
        for place, first, count in segments:
            if first < 0:
                piece = fresh[place][index]
                column.append(at)
                if piece:
                    chunks += piece, b"\n"
                    at += len(piece) + 1
            else:
                assert copy is not None
                there = copy.bounds[index]
                start, end = there[first], there[first + count]
                chunks.append(copy.view[start:end])
                column += map(add, there[first : first + count], repeat(at - start))
                at += end - start
        column.append(at)
        bounds.append(column)
    return chunks, bounds
