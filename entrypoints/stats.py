"""The stats subcommand: read the logs, keep the history, print or export the views."""

from __future__ import annotations

import os
import time

from adapters.log_reads import read_whole, refuse_unless_regular, unreadable
from adapters.log_reads import window as window_of
from adapters.logfile import LogSummary, distinct_files, stop_if_ended
from adapters.signals import ending
from adapters.stats_files import check_checkpoint, checkpoint_path, lock_path, updating
from domain.errors import Damaged, ExitStatus, Interrupted
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from adapters.checkpoint import Checkpoint
    from adapters.signals import SignalWatch
    from entrypoints.console import StreamConsole
    from entrypoints.invocation import Invocation


def stats(invocation: Invocation, home: str, console: StreamConsole, watch: SignalWatch) -> int:
    """Summarize the logs; print a table or JSON; optionally write Prometheus text.

    One log file is read from where the last `stats` stopped (its checkpoint); several
    logs, gzip-compressed ones and `-` (stdin) are read whole. --since narrows the
    table and JSON to a window (of one log file, read from the checkpoint's latest mark
    before it: see domain.marks), and adds window gauges to the Prometheus file. Stdin
    can be read only once: with --since, what it yields is the window alone.
    """
    logs = distinct_files(invocation.logs) or [os.path.join(home, "runs.jsonl")]
    by, now = invocation.by, time.time()
    one = len(logs) == 1 and logs != ["-"]
    kept = checkpoint_path(logs[0], by, invocation.checkpoint) if one else None
    _check_outputs(invocation, logs)  # before a long read, not after it
    since = None if invocation.since is None else now - invocation.since
    guard = None if kept is None else updating(kept, logs[0], watch)
    try:
        if logs == ["-"]:
            history, checkpoint = read_whole(logs, by, since, watch), None
            window = None if since is None else history
        else:
            history, checkpoint = _history(logs, by, watch, console, invocation.checkpoint)
            position = None if checkpoint is None else checkpoint.position
            window = None if since is None else window_of(logs, by, since, watch, position)
        stop_if_ended(watch)
        if window is not None:  # the lines the logs hold, as without --since
            window.lines, window.malformed = history.lines, history.malformed
        try:
            data = _prepare(invocation, logs, history, checkpoint, window, console, now)
        except Damaged as damage:  # a saved aggregate, read only now: before anything is said
            if checkpoint is None:
                raise
            history = checkpoint.afresh(str(damage), watch, console.info)
            data = _prepare(invocation, logs, history, checkpoint, window, console, now)
        _write_out(invocation, logs, history, checkpoint, console, data)
    finally:
        if guard is not None:
            guard.release()
    stop_if_ended(watch)
    if not console.quiet and invocation.prometheus != "-":  # stdout holds the text alone
        from entrypoints import report

        report.show(history if window is None else window, invocation, console, logs)
    signum = ending(watch.final())
    if signum is not None:
        raise Interrupted(signum)
    return ExitStatus.OK


def _check_outputs(invocation: Invocation, logs: list[str]) -> None:
    """The textfile and the checkpoint given: nothing that stats reads or keeps."""
    given = invocation.checkpoint
    if given is not None:
        check_checkpoint(given, logs)
    if invocation.prometheus not in (None, "-"):
        from adapters import textfile

        extra = [] if given is None else [given, lock_path(given, logs[0])]
        textfile.check(invocation.prometheus, logs, extra)


def _prepare(
    invocation: Invocation,
    logs: list[str],
    history: LogSummary,
    checkpoint: Checkpoint | None,
    window: LogSummary | None,
    console: StreamConsole,
    now: float,
) -> list[bytes | memoryview] | None:
    """Read every aggregate that will be needed: the Prometheus text (None: not asked for),
    the checkpoint's bound, and (unless -q) the whole history for the table, the fine
    buckets of its histograms decoded for the quantiles. Nothing is written yet, so that
    a damaged saved aggregate can still be set aside."""
    if not console.quiet and invocation.prometheus != "-":
        for aggregate in history.summary.by_key.values():  # every saved aggregate read, here
            aggregate.durations.span()
            aggregate.attempt_durations.span()
    data = None
    if invocation.prometheus is not None:
        from entrypoints import prometheus

        before = None if checkpoint is None else _before(checkpoint, invocation)
        data, series, placed = prometheus.render(
            history.summary,
            invocation.by,
            malformed=history.malformed,
            series=[] if checkpoint is None else checkpoint.series,
            now=now,
            window=None if window is None else window.summary.finished(),
            window_seconds=invocation.since,
            constant=tuple(invocation.labels),
            log_present=logs == ["-"] or any(os.path.exists(path) for path in logs),
            retire_before=None if not invocation.retire_after else now - invocation.retire_after,
            before=before,
        )
        if checkpoint is not None:
            checkpoint.series, checkpoint.placed = series, placed
    if checkpoint is not None:
        checkpoint.bound(history)
    return data


def _before(checkpoint: Checkpoint, invocation: Invocation) -> tuple[bytes, dict[str, Any]] | None:
    """The textfile this export may copy unchanged series from: the one written last, to
    the same path with the same constant labels, if it is still as it was written."""
    export = checkpoint.export
    path = invocation.prometheus
    labels = [list(pair) for pair in invocation.labels]
    if export is None or path in (None, "-") or export["labels"] != labels:
        return None
    from adapters import textfile

    old = textfile.read_same(path, export)
    return None if old is None else (old, export["lines"])


def _write_out(
    invocation: Invocation,
    logs: list[str],
    history: LogSummary,
    checkpoint: Checkpoint | None,
    console: StreamConsole,
    data: list[bytes | memoryview] | None,
) -> None:
    """The malformed count, the Prometheus text, and the checkpoint."""
    if history.malformed:
        noun = "line" if history.malformed == 1 else "lines"
        console.info(
            f"skipped {history.malformed} malformed {noun} of {history.lines} in {logs[-1]}"
        )
    if data is not None and invocation.prometheus is not None:
        if invocation.prometheus == "-":
            console.answer(b"".join(data).decode().removesuffix("\n"), even_quiet=True)
        else:
            from adapters import textfile

            identity = textfile.write(invocation.prometheus, data)
            if checkpoint is not None:
                checkpoint.exported(identity, [list(pair) for pair in invocation.labels])
    if checkpoint is not None:
        try:
            checkpoint.save(history)
        except OSError as exc:
            why = f"cannot keep the stats checkpoint {checkpoint.path}: {exc.strerror or exc}"
            if invocation.prometheus is None:
                console.info(why)
            else:  # said under -q too: an exported counter is no longer sure to only grow
                console.warn(
                    f"{why}; every stats reads the whole log again, and an exported counter "
                    "falls when a rotated log is deleted (keep it elsewhere: --checkpoint FILE)"
                )


def _history(
    logs: list[str], by: str, watch: SignalWatch, console: StreamConsole, given: str | None
) -> tuple[LogSummary, Checkpoint | None]:
    """The whole history: from the checkpoint (beside the log, or `given`: --checkpoint) for
    one log file, else read whole."""
    from adapters.checkpoint import Checkpoint
    from adapters.rotation import is_compressed

    for path in logs:
        refuse_unless_regular(path)
    single = logs[0]
    if len(logs) == 1:
        try:
            if not (os.path.exists(single) and is_compressed(single)):
                checkpoint = Checkpoint(single, by, console.warn, given)
                return checkpoint.update(watch, console.info), checkpoint
        except FileNotFoundError:
            console.info(f"no attempt log at {single} yet: nothing to summarize")
            return LogSummary(Summary(), 0, 0), None
        except OSError as exc:
            raise unreadable(single, exc) from None
    return read_whole(logs, by, None, watch), None
