"""The stats subcommand: read the logs, keep the history, print or export the views."""

from __future__ import annotations

import os
import sys
import time

from adapters.log_read import read_file, read_stream
from adapters.rotation import is_compressed
from adapters.signals import ending
from adapters.stats_files import (
    check_checkpoint,
    check_textfile,
    checkpoint_path,
    distinct_files,
    lock_path,
    updating,
    write_textfile,
)
from domain.errors import ExitStatus, Interrupted, StateError
from domain.stats import Summary

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

    from adapters.checkpoint import Bound, Checkpoint
    from adapters.signals import SignalWatch
    from entrypoints.console import StreamConsole
    from entrypoints.invocation import Invocation

KEYS_HELD = 1000
"""Commands or names a read keeps apart at most (the exported ones, then the busiest): a
command line that differs at every run (a date in an argument) costs no more memory
than a thousand."""


def stats(invocation: Invocation, home: str, console: StreamConsole, watch: SignalWatch) -> int:
    """Summarize the logs; print a table or JSON; write the Prometheus text if asked.

    One plain log file is read from where the last `stats` stopped (its checkpoint);
    several logs, a compressed one and `-` (stdin) are read whole. --since narrows the
    table and JSON to the runs that started within it in the current log file, and adds
    window gauges to the Prometheus text. Stdin is read once: with --since, what it
    yields is the window, for the counters too.
    """
    logs = distinct_files(invocation.logs) or [os.path.join(home, "runs.jsonl")]
    by, now = invocation.by, time.time()
    since = None if invocation.since is None else now - invocation.since

    def stop() -> None:
        signum = ending(watch.pending())
        if signum is not None:
            raise Interrupted(signum)

    _check_outputs(invocation, logs)  # before a long read, not after it
    single = len(logs) == 1 and logs != ["-"] and not _compressed(logs[0])
    kept = checkpoint_path(logs[0], by, invocation.checkpoint) if single else None
    guard = None if kept is None else updating(kept, logs[0], watch)
    try:
        checkpoint = None
        if kept is not None:
            from adapters.checkpoint import Checkpoint

            checkpoint = Checkpoint(
                logs[0], by, kept, invocation.checkpoint is not None, console.warn
            )
        from entrypoints.prometheus import label_of

        bound = (lambda key: label_of(key, by), KEYS_HELD)
        history = _history(
            logs, by, since if logs == ["-"] else None, checkpoint, stop, console, invocation, bound
        )
        window = (
            history
            if logs == ["-"] or since is None
            else _whole([logs[-1]], by, since, stop, bound)
        )
        if window is not history:
            window.lines, window.malformed = history.lines, history.malformed
        _export(
            invocation,
            logs,
            history,
            window if since is not None else None,
            checkpoint,
            console,
            now,
        )
    finally:
        if guard is not None:
            guard.release()
    stop()
    _show(invocation, logs, window, console, now)
    signum = ending(watch.final())
    if signum is not None:
        raise Interrupted(signum)
    return ExitStatus.OK


def _compressed(path: str) -> bool:
    """Whether the log at `path` is compressed (a FIFO is never opened here: it would block)."""
    try:
        return os.path.isfile(path) and is_compressed(path)
    except OSError:
        return False  # said when it is read


def _check_outputs(invocation: Invocation, logs: list[str]) -> None:
    """The textfile and the checkpoint given: nothing that stats reads or keeps."""
    given = invocation.checkpoint
    if given is not None:
        check_checkpoint(given, logs)
    if invocation.prometheus not in (None, "-"):
        extra = [] if given is None else [given, lock_path(given, logs[0])]
        check_textfile(invocation.prometheus, logs, extra)


def _history(
    logs: list[str], by: str, since: float | None, checkpoint: Checkpoint | None,
    stop: Callable[[], None], console: StreamConsole, invocation: Invocation, bound: Bound,
) -> Summary:  # fmt: skip
    """The whole history: from the checkpoint for one plain log, else read whole."""
    if checkpoint is None:
        return _whole(logs, by, since, stop, bound)
    try:
        return checkpoint.update(stop, console.info, bound)
    except FileNotFoundError:
        if invocation.logs:
            raise StateError(f"no attempt log at {logs[0]}") from None
        console.info(f"no attempt log at {logs[0]} yet: nothing to summarize")
        return Summary()
    except OSError as exc:
        raise _unreadable(logs[0], exc) from None


def _whole(
    logs: list[str], by: str, since: float | None, stop: Callable[[], None], bound: Bound
) -> Summary:
    """Every line of every log, in order (`-` is stdin)."""
    found = Summary(since)
    found.bound = (bound[0], [], bound[1])
    for path in logs:
        try:
            if path == "-":
                read_stream(sys.stdin.buffer, 0, found, by, stop)
            else:
                read_file(path, 0, found, by, stop)
        except (OSError, EOFError) as exc:
            raise _unreadable(path, exc) from None
    return found


def _unreadable(path: str, exc: OSError | EOFError) -> StateError:
    from adapters.checkpoint import why

    if isinstance(exc, IsADirectoryError):
        return StateError(f"{path} is a folder, not an attempt log")
    if isinstance(exc, FileNotFoundError):
        return StateError(f"no attempt log at {path}")
    return StateError(f"cannot read {path}: {why(exc)}")


def _export(
    invocation: Invocation, logs: list[str], history: Summary, window: Summary | None,
    checkpoint: Checkpoint | None, console: StreamConsole, now: float,
) -> None:  # fmt: skip
    """The malformed count, the Prometheus text, and the checkpoint."""
    from entrypoints.prometheus import label_of, render

    exported = [] if checkpoint is None else checkpoint.exported
    history.fold(lambda key: label_of(key, invocation.by), exported, KEYS_HELD)
    if history.malformed:
        noun = "line" if history.malformed == 1 else "lines"
        console.info(
            f"skipped {history.malformed} malformed {noun} of {history.lines} in {logs[-1]}"
        )
    if invocation.prometheus is not None:
        retire = invocation.retire_after
        text = render(
            history, invocation.by, exported, now=now,
            window=None if window is None else window.finished(), window_seconds=invocation.since,
            constant=tuple(invocation.labels),
            log_present=logs == ["-"] or any(os.path.exists(path) for path in logs),
            retire_before=now - retire if retire else None,
        )  # fmt: skip
        if invocation.prometheus == "-":
            console.answer(text.decode().removesuffix("\n"), even_quiet=True)
        else:
            write_textfile(invocation.prometheus, text, 0o644)
    if checkpoint is None or (not history.lines and not os.path.exists(logs[0])):
        return  # nothing counted yet, and maybe no home yet either: nothing to keep
    from adapters.checkpoint import KEYS_MAX, OPEN_MAX

    history.fold(lambda key: label_of(key, invocation.by), exported, KEYS_MAX)
    history.forget_open(OPEN_MAX, now)
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


def _show(
    invocation: Invocation, logs: list[str], found: Summary, console: StreamConsole, now: float
) -> None:
    """The JSON document (asked for: even under -q), or the table (not under -q with an
    export: the cron recipe's silence)."""
    if invocation.prometheus == "-" or (
        console.quiet and invocation.prometheus and not invocation.json
    ):
        return
    from entrypoints import report

    groups = found.finished()
    if invocation.json:
        document = report.as_json(groups, invocation.by, logs, found.lines, found.malformed)
        console.answer(document, even_quiet=True)
    elif any(group.runs or group.busy for group in groups.values()):
        width, colour = report.terminal()
        lines = report.table(groups, invocation.by, width, now, colour)
        console.answer("\n".join(lines), even_quiet=True)
    elif found.lines or any(os.path.exists(path) for path in logs):
        within = " in that time" if invocation.since is not None else ""
        console.info(f"no runs in {', '.join(logs)}{within}")
