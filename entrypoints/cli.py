"""The composition root: reads the command line, builds the adapters, maps errors to codes."""

from __future__ import annotations

import gc
import os
import signal
import sys

from domain.errors import ExitStatus, Interrupted, LockBusy, RunnerError
from entrypoints.args import parse
from entrypoints.console import StreamConsole

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import NoReturn

    from adapters.capture import Capture
    from adapters.ping import Pinger
    from adapters.signals import SignalWatch
    from domain import flows
    from domain.ports import AttemptSink, Console
    from entrypoints.backends import Backend
    from entrypoints.invocation import Invocation
    from entrypoints.wiring import Wiring


class Ending:
    """How the runner ends: with `status`, or by re-raising signal `signum`. Without
    `teardown`, the process leaves at once, skipping the interpreter's (see `exit_with`)."""

    __slots__ = ("signum", "status", "teardown")

    def __init__(self, status: int, signum: int | None = None, *, teardown: bool = True) -> None:
        self.status = status
        self.signum = signum
        self.teardown = teardown


def main(
    argv: list[str] | None = None, home: str | None = None, wiring: Wiring | None = None
) -> int:
    """Run the runner; return its exit code. No exception escapes for any input.

    `home` is the home when neither --home nor RUNNER_HOME is given: runner.py's
    folder for a checkout; None, for the installed command and the zipapp, means
    the user's state folder (see `state_home`). `wiring` builds the adapters: the
    real ones by default, fakes in tests. The signal handlers stay in place after it
    returns (see `exit_with`); the cyclic garbage collector, which stats turns off, is
    put back.
    """
    collecting = gc.isenabled()
    try:
        return _main(argv, home, wiring).status
    finally:
        if collecting:
            gc.enable()  # stats leaves it off for the process's last moments


def launch(home: str | None) -> NoReturn:
    """The entry of runner.py, the zipapp and the installed command: run, then exit
    (by the signal itself after SIGINT or SIGQUIT)."""
    ending = _main(None, home, None)
    exit_with(ending.status, ending.signum, teardown=ending.teardown)


def state_home(environ: Mapping[str, str]) -> str:
    """$XDG_STATE_HOME/runner, else ~/.local/state/runner (a relative XDG path is ignored)."""
    xdg = environ.get("XDG_STATE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "runner")


def _main(argv: list[str] | None, home: str | None, wiring: Wiring | None) -> Ending:
    from adapters.signals import REENTER_BY_SIGNAL
    from entrypoints.wiring import Wiring

    wiring = wiring or Wiring()
    watch = wiring.watch()
    console = StreamConsole()
    try:
        return _dispatch(argv, home, watch, console, wiring)
    except Interrupted as stop:
        again = stop.signum if stop.signum in REENTER_BY_SIGNAL else None
        return Ending(stop.exit_code, again)
    except RunnerError as error:
        console.warn(f"error: {error}" if error.status == ExitStatus.RUNNER_ERROR else str(error))
        return Ending(error.status)
    except MemoryError:
        console.warn("error: out of memory (see ulimit -v, or the container's memory limit)")
        return Ending(ExitStatus.RUNNER_ERROR)
    except Exception as bug:  # the promise is one line and no traceback, for any input
        console.warn(f"internal error: {type(bug).__name__}: {bug}")
        return Ending(ExitStatus.RUNNER_ERROR)


def _dispatch(
    argv: list[str] | None,
    home: str | None,
    watch: SignalWatch,
    console: StreamConsole,
    wiring: Wiring,
) -> Ending:
    invocation = parse(sys.argv[1:] if argv is None else argv, os.environ)
    if invocation.home is None:  # help reads no option: $RUNNER_HOME is its to say too
        invocation.home = os.environ.get("RUNNER_HOME") or home or state_home(os.environ)
    if invocation.action in ("help", "version"):
        from entrypoints.usage import VERSION, page

        console.answer(
            page(invocation.topic, invocation.home)
            if invocation.action == "help"
            else f"runner {VERSION}"
        )
        return Ending(ExitStatus.OK)
    console.quiet = invocation.quiet
    try:
        if invocation.action in ("run", "apply"):
            return Ending(_execute(invocation, watch, console, wiring))
        from entrypoints.manage import manage

        code = manage(invocation, watch, console, wiring)
        return Ending(code, teardown=invocation.action != "stats")  # it holds only memory
    except LockBusy as busy:
        busy.status = invocation.conflict_exit_code
        if busy.status == ExitStatus.OK and invocation.quiet:
            return Ending(ExitStatus.OK)  # as `flock -n -E 0`: a busy lock is no news
        raise


def _execute(
    invocation: Invocation, watch: SignalWatch, console: StreamConsole, wiring: Wiring
) -> int:
    """Wire the adapters; a run without --lock loads nothing of locks and markers."""
    from domain import flows
    from domain.attempts import AttemptRecord

    home = invocation.home or ""
    backend = wiring.backend(invocation, home, watch)
    if invocation.replay_stdin and not invocation.dry_run:
        from adapters.stdin import keep_stdin

        keep_stdin(watch)
    sink = wiring.sink(os.path.join(home, "runs.jsonl"), console.warn)
    run_id = os.urandom(8).hex()
    clock, random = wiring.clock(watch), wiring.random()
    began = clock.wall(), clock.monotonic()
    if invocation.policy.splay and not invocation.dry_run:  # before the lock and the pings
        first = AttemptRecord(began[0], invocation.cmd, 1, 0, 0, run_id, invocation.name or None)
        flows.splay(invocation.policy, clock, random, sink, first)
    capture, pinger, recorder = _reporting(invocation, console, sink, run_id, watch)
    processes = wiring.processes(invocation, watch, backend, capture)
    said: Console = console
    if capture is not None:  # what the run says of its attempts goes with their output
        from entrypoints.console import HeldConsole

        said = HeldConsole(console, capture.hold)
    attempts = flows.Attempts(processes, clock, recorder, said, run_id, random)
    code: int = ExitStatus.RUNNER_ERROR
    try:
        code = _perform(invocation, attempts, backend, console, began[1])
        return code
    except Interrupted as stop:
        code = stop.exit_code
        raise
    except LockBusy as busy:
        busy.status = code = invocation.conflict_exit_code  # what the run exits with, pinged
        waited = max(0, round((attempts.clock.monotonic() - began[1]) * 1000))
        refused = AttemptRecord(
            began[0], invocation.cmd, 1, code, waited, run_id, invocation.name or None
        )
        refused.busy = True
        recorder.record(refused)  # the run's one line: the overlap shows in stats
        raise
    except RunnerError as error:
        code = error.status
        raise
    finally:
        if capture is not None:
            if code != ExitStatus.OK:
                capture.replay(console.warn)
            capture.close()
        if pinger is not None:
            pinger.finish(code, capture.tail(pinger.body_limit) if capture else b"")
        sink.close()
        if backend is not None:
            backend.close()


def _reporting(
    invocation: Invocation,
    console: StreamConsole,
    sink: AttemptSink,
    run_id: str,
    watch: SignalWatch,
) -> tuple[Capture | None, Pinger | None, AttemptSink]:
    """--output-on-failure's capture and --ping's pinger, when asked for, and the sink that
    pings the run's end before it writes the run's last line."""
    if invocation.dry_run:
        return None, None, sink
    capture = None
    if invocation.output_on_failure:
        from adapters.capture import Capture

        capture = Capture(console.warn, ordered=invocation.ping is not None)
    if invocation.ping is None:
        return capture, None, sink
    from adapters.ping import Pinger, PingingSink

    pinger = Pinger(invocation.ping, run_id, console.info, watch)  # -q: ping_failed alone
    if invocation.ping_fail_after > 1:  # the job's failures in a row, from its log
        from adapters.streak import counter

        log, job = os.path.join(invocation.home or "", "runs.jsonl"), invocation.name or None
        pinger.fail_after = invocation.ping_fail_after
        pinger.failed_before = counter(log, job, invocation.cmd, run_id, pinger.fail_after)
    recorder = PingingSink(sink, pinger, capture.tail if capture else None)
    recorder.start_failed = not pinger.start()
    return capture, pinger, recorder


def _perform(
    invocation: Invocation,
    attempts: flows.Attempts,
    backend: Backend | None,
    console: StreamConsole,
    since: float,
) -> int:
    """run or apply, with the adapters the composition root built; `since` (monotonic) is when
    the run began."""
    from domain import flows

    if invocation.action == "run":
        lock = None if backend is None else backend.lock
        return flows.run(
            invocation.cmd,
            invocation.policy,
            attempts=attempts,
            lock=lock,
            name=invocation.name or None,
            since=since,
        )
    from domain.apply import apply

    assert backend is not None
    assert backend.markers is not None
    return apply(
        invocation.name,
        invocation.cmd,
        invocation.policy,
        dry_run=invocation.dry_run,
        attempts=attempts,
        lock=backend.lock,
        markers=backend.markers,
        console=console,
        since=since,
    )


def exit_with(status: int, signum: int | None = None, *, teardown: bool = True) -> NoReturn:
    """Exit with `status`, ignoring signals that come once the work is done.

    Python puts back the default handlers while it shuts down; a SIGTERM in that
    window would otherwise kill a runner whose apply has already succeeded. With
    `signum`, the runner ends by that signal instead, once its output is flushed.
    Without `teardown` (a process that holds only memory, such as stats' history and
    checkpoint: freeing them object by object, then collecting once more, costs a
    repeat some 3 ms), it leaves once its output is flushed; output that cannot be is
    left to Python's own exit to report, as before.
    """
    from adapters.signals import FORWARDED, end_by_signal

    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    if signum is not None:
        _flushed()
        end_by_signal(signum)
    if not teardown and _flushed():
        os._exit(status)
    sys.exit(status)


def _flushed() -> bool:
    """Flush stdout and stderr (each, whatever the other does); whether both were."""
    whole = True
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            whole = False
    return whole
