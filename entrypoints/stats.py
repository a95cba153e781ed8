"""The stats subcommand: read the logs, keep the history, print or export the views."""

from __future__ import annotations

import os
import time

from adapters.logfile import LogSummary, distinct_files, stop_if_ended
from adapters.signals import ending
from domain.errors import Damaged, ExitStatus, Interrupted, LockBusy, StateError
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from adapters.checkpoint import Checkpoint
    from adapters.lock import FcntlLock
    from adapters.signals import SignalWatch
    from entrypoints.console import StreamConsole
    from entrypoints.invocation import Invocation


def stats(invocation: Invocation, home: str, console: StreamConsole, watch: SignalWatch) -> int:
    """Summarize the logs; print a table or JSON; optionally write Prometheus text.

    One log file is read from where the last `stats` stopped (its checkpoint); several
    logs, gzip-compressed ones and `-` (stdin) are read whole. --since narrows the
    table and JSON to a window, and adds window gauges to the Prometheus file. Stdin
    can be read only once: with --since, what it yields is the window alone.
    """
    logs = distinct_files(invocation.logs) or [os.path.join(home, "runs.jsonl")]
    if invocation.prometheus not in (None, "-"):
        from adapters import textfile

        textfile.check(invocation.prometheus, logs)  # before a long read, not after it
    by, now = invocation.by, time.time()
    since = None if invocation.since is None else now - invocation.since
    guard = None if logs == ["-"] else _updating(logs, watch)
    try:
        if logs == ["-"]:
            history, checkpoint = _read(logs, by, since, watch), None
            window = None if since is None else history
        else:
            history, checkpoint = _history(logs, by, watch, console)
            window = None if since is None else _read(logs, by, since, watch)
        stop_if_ended(watch)
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


UPDATE_WAIT = 120.0
"""Seconds a stats waits for another one to finish updating the same checkpoint."""


def _updating(logs: list[str], watch: SignalWatch) -> FcntlLock | None:
    """The lock that lets one stats at a time read on from a checkpoint, export and save it,
    so that two at once can never export a counter lower than the one before."""
    if len(logs) != 1:
        return None
    from adapters.lock import FcntlLock

    folder, name = os.path.split(logs[0])
    if not os.path.isdir(folder or "."):
        return None
    guard = FcntlLock(os.path.join(folder, f".{name}.stats.lock"), watch, bare=True)
    try:
        guard.acquire(UPDATE_WAIT)
    except StateError:
        return None  # a folder we may not write to: nothing to guard, no checkpoint either
    except LockBusy:
        raise StateError(
            f"another stats has been updating the checkpoint of {logs[0]} for "
            f"{UPDATE_WAIT:g}s (stopped, or held up by its disk): try again later"
        ) from None
    return guard


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
            console.info(
                f"cannot keep the stats checkpoint {checkpoint.path}: {exc.strerror or exc}"
            )


def _history(
    logs: list[str], by: str, watch: SignalWatch, console: StreamConsole
) -> tuple[LogSummary, Checkpoint | None]:
    """The whole history: from the checkpoint for one log file, else read whole."""
    from adapters.checkpoint import Checkpoint
    from adapters.rotation import is_compressed

    for path in logs:
        _refuse_unless_regular(path)
    single = logs[0]
    if len(logs) == 1:
        try:
            if not (os.path.exists(single) and is_compressed(single)):
                checkpoint = Checkpoint(single, by, console.warn)
                return checkpoint.update(watch, console.info), checkpoint
        except FileNotFoundError:
            console.info(f"no attempt log at {single} yet: nothing to summarize")
            return LogSummary(Summary(), 0, 0), None
        except OSError as exc:
            raise _unreadable(single, exc) from None
    return _read(logs, by, None, watch), None


def _read(logs: list[str], by: str, since: float | None, watch: SignalWatch) -> LogSummary:
    """Every log, in the order given, as one: files split across cores, streams in one go."""
    import sys

    from adapters.logfile import summarize, summarize_stream
    from adapters.rotation import is_compressed, open_log

    total = LogSummary(Summary(since), 0, 0)
    for path in logs:
        try:
            if path == "-":
                total.merge(summarize_stream(sys.stdin.buffer, by, since, watch))
            elif is_compressed(path):
                with open_log(path) as handle:
                    total.merge(summarize_stream(handle, by, since, watch))
            else:
                total.merge(summarize(path, by, since, watch))
        except (OSError, EOFError) as exc:
            raise _unreadable(path, exc) from None
    return total


def _refuse_unless_regular(path: str) -> None:
    """A log given by name must be a regular file: opening a FIFO would block, deaf to
    signals, until someone writes to it. `-` reads a stream."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # said when it is read
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise StateError(f"cannot read {path}: not a regular file (read a stream with --log -)")


def _unreadable(path: str, exc: OSError | EOFError) -> StateError:
    if isinstance(exc, EOFError):
        return StateError(f"cannot read {path}: a compressed log cut short")
    if isinstance(exc, IsADirectoryError):
        return StateError(f"{path} is a folder, not an attempt log")
    if isinstance(exc, FileNotFoundError):
        return StateError(f"no attempt log at {path}")
    return StateError(f"cannot read {path}: {exc.strerror or exc}")
