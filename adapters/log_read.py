"""Attempt lines read into a Summary: a plain log by position through one descriptor (split
between two processes when it is large), a compressed one as a stream."""

from __future__ import annotations

import os
import signal
from json import JSONDecoder, loads

from adapters.forked import become_helper, drain, two_cores
from adapters.rotation import is_compressed, open_log
from adapters.stats_files import open_regular, whole_lines_end
from adapters.timestamps import parse
from domain.aggregate import BY_RC
from domain.errors import SIGNALLED_RC, TIMEOUT_RC
from domain.stats import Summary
from domain.words import bounded, shell_words, visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

CHUNK = 2 << 20
"""Bytes read at a time: a signal is acted on between two chunks."""
SETTLE_EVERY = 4
"""Chunks read between two counts of what waits in the summary (see Summary.settle)."""
TWO_FROM = 8 << 20
"""Bytes from which a plain log is read by two processes, where two cores may be used."""
KEYS_MAX = 100_000
"""Command lines or names whose key a reader remembers; past that it starts over."""
ATTEMPT_MAX, MS_MAX = 1_000_000_000, 10**13
"""The largest attempt number and duration (milliseconds) a line may hold."""
_BROKEN = (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError)
"""What a hostile line can make reading it raise: the line is malformed, nothing more."""
_decode = JSONDecoder().raw_decode


class LineReader:
    """Reads whole lines into `summary`, keyed by command line or by name (`by`)."""

    def __init__(self, summary: Summary, by: str) -> None:
        self.summary = summary
        self.by_name = by == "name"
        self.keys: dict[object, str] = {}
        self.fed = 0

    def feed(self, data: bytes) -> None:
        """Lines joined by newlines (no newline at the end); an empty one is malformed."""
        try:
            lines = data.decode().split("\n")
        except UnicodeDecodeError:  # a line not UTF-8 is malformed, and so read as "!"
            lines = [_text(line) for line in data.split(b"\n")]
        summary, record = self.summary, self.record
        summary.lines += len(lines)
        blank = lines.count("")  # counted in one pass: a log of newlines costs its size
        summary.malformed += blank
        for line in filter(None, lines) if blank else lines:
            if line[0] != "{" and not line.lstrip().startswith("{"):
                summary.malformed += 1  # not an object: no decoding, no exception
                continue
            try:
                found, end = _decode(line)
                if end != len(line) and line[end:].strip():
                    raise ValueError(line)
                record(found)
            except _BROKEN:
                self.record_loosely(line)
        self.fed += 1
        if self.fed % SETTLE_EVERY == 0:
            summary.settle()

    def record_loosely(self, line: str) -> None:  # spaces around an object: as json.loads
        try:
            self.record(loads(line or "!"))
        except _BROKEN:
            self.summary.malformed += 1

    def record(self, record: dict[str, object]) -> None:
        """One decoded line; raises one of _BROKEN when it is not an attempt line."""
        ts, cmd, attempt, rc = record["ts"], record["cmd"], record["attempt"], record["rc"]
        ms, run_id = record["duration_ms"], record["run_id"]
        if (
            type(ts) is not str
            or type(run_id) is not str
            or type(cmd) is not list
            or type(attempt) is not int
            or type(rc) is not int
            or type(ms) is not int
            or not (1 <= attempt <= ATTEMPT_MAX and 0 <= rc <= 255 and 0 <= ms <= MS_MAX)
        ):
            raise ValueError(ts)
        started = parse(ts).timestamp()
        if self.by_name:
            said = record.get("name", "-")
            key = self.keys.get(said) or self._key(said)
        else:
            key = self.keys.get(tuple(cmd)) or self._key(cmd)
        size = len(record)
        if size > 7 or (size == 7 and "name" not in record):
            if record.get("busy") is True:
                self.summary.add_busy(key, started)
                return
            outcome = BY_RC[rc]
            if rc == TIMEOUT_RC or rc >= SIGNALLED_RC or "timed_out" in record:
                outcome = told(record, rc) or outcome
            elif type(record.get("signal")) is str:  # the runner was signalled: it exited so
                rc, outcome = runner_exit(record["signal"], rc), "signal"
            tried = record.get("attempted") is not False
            if record.get("ping_failed") is True and "delay_ms" not in record:
                self.summary.add_ping_failure(key, started)
            self.summary.add(
                run_id, key, started, attempt, rc, ms, outcome, "delay_ms" in record, tried
            )
        elif attempt == 1:  # the lab's keys, the run id and perhaps a name: one attempt
            self.summary.add_one(run_id, key, started, rc, ms)
        else:
            self.summary.add(run_id, key, started, attempt, rc, ms, BY_RC[rc], False)

    def _key(self, said: object) -> str:
        """The key of a command line (a list of words) or a name (a string)."""
        if self.by_name:
            if type(said) is not str:
                raise TypeError(said)
            key = bounded(visible(said))
        else:
            if not all(type(word) is str for word in said):  # type: ignore[attr-defined]
                raise TypeError(said)
            key = bounded(shell_words(said))  # type: ignore[arg-type]
        if len(self.keys) >= KEYS_MAX:
            self.keys.clear()
        self.keys[tuple(said) if type(said) is list else said] = key
        return key


def told(record: dict[str, object], rc: int) -> str | None:
    """How a line with a timeout's or a signal's rc says it ended (`timed_out`, `signal`: the
    runner's timeout or a real signal, or a command that exited so); None: by its rc."""
    said = record.get("timed_out")
    if said is True or said == "idle":
        return "timeout"
    if rc == TIMEOUT_RC:
        return None if said is None else "failure"
    if "signal" not in record:
        return None
    return "signal" if record["signal"] else "failure"


def runner_exit(name: object, rc: int) -> int:
    """What the runner exited with when signal `name` (TERM) came during an attempt that the
    command ended itself with `rc` (a trap, then exit 0): 128 + the signal's number."""
    found = getattr(signal.Signals, f"SIG{name}", None)
    return rc if found is None else 128 + found


def _text(line: bytes) -> str:
    try:
        return line.decode()
    except UnicodeDecodeError:
        return "!"


def read_range(
    fd: int, start: int, end: int, into: Summary, by: str, stop: Callable[[], None]
) -> bool:
    """Read the whole lines in [start, end) of the plain log open at `fd` into `into`; False
    when the file turned out shorter than `end` (truncated while it was read)."""
    if end - start >= TWO_FROM and two_cores():
        middle = whole_lines_end(fd, start, (start + end) // 2)
        if start < middle < end:
            return _read_in_two(fd, start, middle, end, into, by, stop)
    return _read(fd, start, end, LineReader(into, by), stop)


def _read(fd: int, start: int, end: int, reader: LineReader, stop: Callable[[], None]) -> bool:
    at, size = start, CHUNK
    while at < end:
        stop()
        data = os.pread(fd, min(size, end - at), at)
        if not data:
            return False
        if at + len(data) < end:
            cut = data.rfind(b"\n")
            if cut < 0:  # a line longer than a chunk: read it whole
                size *= 2
                continue
            data = data[: cut + 1]
        at, size = at + len(data), CHUNK
        reader.feed(data[:-1] if data.endswith(b"\n") else data)
    return True


def _read_in_two(
    fd: int, start: int, middle: int, end: int, into: Summary, by: str, stop: Callable[[], None]
) -> bool:
    """The first half here, the second in a child process that hands back its summary."""
    import pickle  # noqa: PLC0415 - only for a large log

    parent = os.getpid()
    out, inp = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: ended by a signal, or when its parent is gone
        code = 1
        try:
            become_helper(keep=(fd, inp))
            later = Summary(into.since)
            later.bound = into.bound

            def orphaned() -> None:
                if os.getppid() != parent:
                    os._exit(1)

            whole = _read(fd, middle, end, LineReader(later, by), orphaned)
            later.settle()
            later.bound = None  # a function: not to be pickled, and the parent has its own
            with os.fdopen(inp, "wb") as pipe:
                pickle.dump((whole, later), pipe, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)
    os.close(inp)
    try:
        whole = _read(fd, start, middle, LineReader(into, by), stop)
        data = drain(out, stop)
        _, status = os.waitpid(pid, 0)
        pid = 0
        if status != 0 or not data:  # the child failed: read its half here
            return _read(fd, middle, end, LineReader(into, by), stop) and whole
        found, later = pickle.loads(data)
        into.merge(later)
        return whole and found
    finally:
        os.close(out)
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def read_stream(
    handle: BinaryIO, skip: int, into: Summary, by: str, stop: Callable[[], None]
) -> None:
    """Every line after the first `skip` bytes of a decompressed stream; raises OSError or
    EOFError when the data is damaged or cut short."""
    reader, rest = LineReader(into, by), b""
    while skip > 0:
        stop()
        skipped = handle.read(min(CHUNK, skip))
        if not skipped:
            return
        skip -= len(skipped)
    while True:
        stop()
        data = handle.read(CHUNK)
        if not data:
            break
        data, rest = rest + data, b""
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        data, rest = data[:cut], data[cut + 1 :]
        reader.feed(data)
    if rest:
        reader.feed(rest)


def read_file(path: str, skip: int, into: Summary, by: str, stop: Callable[[], None]) -> None:
    """A log or rotated generation after `skip` bytes: plain by position (a FIFO refused),
    compressed as a stream. OSError, or EOFError for a compressed one cut short."""
    fd = open_regular(path)
    try:
        if not is_compressed(path):
            read_range(fd, skip, os.fstat(fd).st_size, into, by, stop)
            return
    finally:
        os.close(fd)
    with open_log(path) as handle:
        read_stream(handle, skip, into, by, stop)
