"""The runner's own output: answers on stdout, `runner:` lines on stderr."""

from __future__ import annotations

import os
import sys

from domain.errors import OutputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO


class StreamConsole:
    """Answers on stdout; `runner:` lines on stderr, one line each.

    An answer the user asked for is never lost in silence: a failed write raises
    OutputError, except a closed pipe (`| head`), after which answers are dropped.
    A status line (`say`) is worth no error. Text the stream cannot encode (an
    argument that is not UTF-8) is escaped. --quiet silences all but warnings.
    """

    def __init__(self) -> None:
        self.quiet = False  # set once the command line is read
        self._reader_gone = False

    def say(self, text: str) -> None:
        try:
            self.answer(text)
        except OutputError:
            pass

    def answer(self, text: str, *, even_quiet: bool = False) -> None:
        """What the user asked for, on stdout; `even_quiet`: not silenced by --quiet either
        (a textfile sent to `-`)."""
        if self._reader_gone or (self.quiet and not even_quiet):
            return
        stream = sys.stdout
        if stream is None:
            raise OutputError("standard output is closed")
        try:
            _write(stream, text)
        except BrokenPipeError:
            self._reader_gone = True
            _silence(stream)
        except OSError as exc:
            _silence(stream)  # what stays in its buffer must not fail again at exit (120)
            raise OutputError(exc.strerror or str(exc)) from None
        except ValueError as exc:
            raise OutputError(str(exc)) from None

    def info(self, text: str) -> None:
        if not self.quiet:
            self.warn(text)

    def warn(self, text: str) -> None:
        """A line on stderr; a stderr that cannot be written is not worth a traceback, nor a
        changed exit code: the lines that follow go nowhere (see `_mute`). What would act
        on a terminal (a path or value with an escape in it) is escaped, as in the table."""
        if sys.stderr is not None:
            line = " ".join(text.split("\n"))
            if not line.isprintable():
                from domain.words import visible  # noqa: PLC0415 - rarely needed

                line = visible(line)
            try:
                _write(sys.stderr, "runner: " + line)
            except OSError:
                _mute()
            except ValueError:
                pass


def _write(stream: TextIO, line: str) -> None:
    try:
        stream.write(line + "\n")
    except UnicodeEncodeError:
        stream.write(printable(line, stream.encoding or "utf-8") + "\n")
    stream.flush()


def printable(text: str, encoding: str) -> str:
    """`text` with what `encoding` cannot carry escaped: undecodable bytes as \\xff."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    readable = raw.decode("utf-8", "backslashreplace")
    return readable.encode(encoding, "backslashreplace").decode(encoding)


def _mute() -> None:
    """Write the runner's own stderr lines to /dev/null from now on: what stays in the buffer
    of the one that failed (a full device) would fail again at exit, and Python would then
    exit 120 in place of the command's code. Only sys.stderr changes, not the descriptor:
    the command's next attempt gets the stderr the runner was given."""
    try:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - sys.stderr until the end
    except OSError:
        pass


def _silence(stream: TextIO) -> None:
    """Point the stream at /dev/null, so that nothing left in its buffer fails at exit."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError):
        pass


class HeldConsole:
    """What a run says of its attempts, held with --output-on-failure's output (`hold`) and
    said only if the run fails: a run that succeeds prints nothing, retries included."""

    def __init__(self, console: StreamConsole, hold: Callable[[str], None]) -> None:
        self.console = console
        self.hold = hold

    def say(self, text: str) -> None:
        self.console.say(text)

    def answer(self, text: str) -> None:
        self.console.answer(text)

    def info(self, text: str) -> None:
        if not self.console.quiet:
            self.hold(text)

    def warn(self, text: str) -> None:
        self.hold(text)
