"""Attempt lines decoded into a Summary (for `stats`): the runner's own form read by one
pattern, any other line by the json module, with the same result.

The runner writes every line in one form: its keys in a fixed order, no spaces, ASCII
only. `line_form.RUNNER_LINE_PATTERN` matches exactly that form, for a whole batch at
once, far faster than decoding JSON; what it matches, `json.loads` reads the same way
(a property test holds the two together). A batch where any line is in another form
(a hand-written line, another writer's, a hostile one) is read line by line, each line
the fast way if it can be and with `json.loads` if not. A batch of a few lines (a
`stats` that reads what was added since the last) is read line by line with the json
module's C reader, without building the pattern. The pattern is built from its program
compiled beforehand, without importing `re`, where the interpreter's regular expression
engine is one it was made for (see line_form.prebuilt); else `re` compiles it, and only
for a batch of a thousand lines or more.
"""

from __future__ import annotations

from operator import itemgetter

from adapters import cjson
from adapters.batches import nonblank
from adapters.line_form import MAYBE_OBJECT, prebuilt, runner_line
from adapters.timestamps import parse as _parse_ts
from domain.errors import SIGNALLED_RC, TIMEOUT_RC
from domain.words import bounded, shell_words, visible

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable

    from domain.stats import Summary

FAST_FROM = 100
"""Lines in a batch from which the pattern is used, when it is built from its program
compiled beforehand (line_form.prebuilt): fewer cost less read each with the json
module's C reader than building the pattern does."""
COMPILED_FROM = 1000
"""The same where `re` must compile the pattern (an engine the program was not made for):
importing `re` and compiling the pattern cost what reading about a thousand lines with
`json` does."""

_FIELDS = itemgetter("ts", "cmd", "attempt", "rc", "duration_ms", "run_id")

LIMITS = {"attempt": 1_000_000_000, "rc": 255, "duration_ms": 10**13}
"""The largest value of each number field (1 to it for attempt, 0 to it for the others)."""

KEYS_MAX = 100_000
"""Command lines and names whose key is remembered; past that, the memory starts over."""

_BROKEN = (
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    OverflowError,
    OSError,
    RecursionError,
)
"""What a hostile line can make decoding raise: the line is malformed, nothing more."""


class LineReader:
    """Decodes batches of lines into `summary`, counting the lines and the malformed ones."""

    def __init__(self, summary: Summary, by: str, fast_from: int | None = None) -> None:
        self.summary = summary
        self.by = by
        self.fast_from = fast_from
        """Lines in a batch from which the pattern is used (None: FAST_FROM or COMPILED_FROM,
        whichever holds here)."""
        self.lines = 0
        self.malformed = 0
        self._keys: dict[bytes, str] = {}
        """The key of each command line seen (its JSON array), or of each name (its JSON
        string, or empty when absent)."""
        self._arrays: set[bytes] = set()
        """Command lines seen to be JSON arrays (when grouping by name)."""
        self._words: dict[tuple[str, ...], str] = {}
        """The key of each command line decoded by the json module, by its words."""

    def feed(self, chunk: bytes, count: int) -> None:
        """Decode `count` lines joined by newlines, an empty one malformed: in one go when all
        are in the runner's form, else one at a time."""
        self.lines += count
        if not self._fast(count):
            self._few(chunk, count)
            return
        pattern = runner_line()
        rows = [] if pattern is None else pattern.findall(chunk)
        if len(rows) == count:
            self._rows(rows)
            return
        chunk, count, blank = nonblank(chunk)
        self.malformed += blank
        if len(rows) == count:  # the runner's lines, and empty ones
            self._rows(rows)
            return
        import re  # noqa: PLC0415 - only for a long read, with the pattern

        objects = re.findall(MAYBE_OBJECT, chunk, re.MULTILINE) if count else []
        self.malformed += count - len(objects)
        if not rows and objects:  # none in the runner's form
            self._each(objects, cjson.each_line(b"\n".join(objects)))
            return
        for line in objects:
            found = None if pattern is None else pattern.match(line)
            if found is not None and found.end() == len(line):
                self._rows([found.groups(b"")])
            else:
                self._record(_decode(line))

    def _fast(self, count: int) -> bool:
        """Whether a batch of `count` lines is read with the pattern."""
        if self.fast_from is not None:
            return count >= self.fast_from
        return count >= COMPILED_FROM or (count >= FAST_FROM and prebuilt() is not None)

    def _few(self, chunk: bytes, count: int) -> None:
        """`count` lines, each decoded by the json module's C reader; an empty one malformed."""
        if count:
            self._each(chunk.split(b"\n"), cjson.each_line(chunk))

    def _each(self, lines: list[bytes], values: list[object]) -> None:
        """Lines and their values as `cjson.each_line` read them; one it left (None) is
        decoded by `json.loads`, an empty one malformed."""
        for line, value in zip(lines, values, strict=True):
            self._record(_decode(line) if value is None and line else value)

    def _rows(self, rows: Iterable[tuple[bytes, ...]]) -> None:
        """Lines read by the pattern."""
        add, keys, arrays, by_name = self.summary.add, self._keys, self._arrays, self.by == "name"
        most_rc = LIMITS["rc"]
        for (
            ts,
            cmd,
            attempt_text,
            rc_text,
            duration_text,
            run_id,
            name,
            delay,
            said,
            signal,
        ) in rows:
            try:
                key = keys.get(name if by_name else cmd)
                if key is None or (by_name and cmd not in arrays):
                    key = self._key(cmd, name)
                started = _parse_ts(ts.decode()).timestamp()
            except _BROKEN:
                self.malformed += 1
                continue
            rc = 0 if rc_text == b"0" else int(rc_text)
            if rc > most_rc:
                self.malformed += 1
                continue
            attempt = 1 if attempt_text == b"1" else int(attempt_text)
            outcome = None
            if rc == TIMEOUT_RC or rc >= SIGNALLED_RC or said:
                outcome = _told(rc, said, signal)
            waits = delay != b""
            add(run_id.decode(), key, started, attempt, rc, int(duration_text), waits, outcome)

    def _key(self, cmd: bytes, name: bytes) -> str:
        """The key of a line not seen before; raises TypeError or ValueError for a command
        that is not a JSON array (of words, when grouping by command)."""
        if len(self._keys) >= KEYS_MAX or len(self._arrays) >= KEYS_MAX:
            self._keys.clear()
            self._arrays.clear()
        words = cjson.loads(cmd)
        if type(words) is not list:
            raise TypeError
        if self.by == "name":
            self._arrays.add(cmd)
            said = cjson.loads(name) if name else "-"
            if type(said) is not str:
                raise TypeError
            key = self._keys[name] = bounded(visible(said))
            return key
        self._keys[cmd] = key = _words_key(words)
        return key

    def _command(self, cmd: object) -> str:
        """The key of a decoded command line; TypeError or ValueError for one that is not a
        list of words. A list equal to one seen is all words too: a JSON value of any
        other type never equals a str."""
        if type(cmd) is not list:
            raise TypeError
        words = tuple(cmd)
        key = self._words.get(words)  # TypeError for a word that is a list or an object
        if key is None:
            if len(self._words) >= KEYS_MAX:
                self._words.clear()
            key = self._words[words] = _words_key(cmd)
        return key

    def _record(self, record: object) -> None:
        """One line decoded by the json module (None: not JSON)."""
        if not isinstance(record, dict):
            self.malformed += 1
            return
        try:
            ts, cmd, attempt, rc, duration, run_id = _FIELDS(record)
            started = _parse_ts(ts).timestamp()
            by_name = self.by == "name"
            key = bounded(visible(record.get("name", "-"))) if by_name else self._command(cmd)
        except _BROKEN:
            self.malformed += 1
            return
        if (
            type(attempt) is not int
            or type(rc) is not int
            or type(duration) is not int
            or type(run_id) is not str
            or type(key) is not str
            or type(cmd) is not list
            or not 1 <= attempt <= LIMITS["attempt"]
            or not 0 <= rc <= LIMITS["rc"]
            or not 0 <= duration <= LIMITS["duration_ms"]
        ):
            self.malformed += 1
            return
        outcome = None
        if rc == TIMEOUT_RC or rc >= SIGNALLED_RC or "timed_out" in record:
            outcome = _said(record, rc)
        self.summary.add(run_id, key, started, attempt, rc, duration, "delay_ms" in record, outcome)


def _words_key(cmd: object) -> str:
    if not isinstance(cmd, list) or not all(type(word) is str for word in cmd):
        raise TypeError
    return bounded(shell_words(cmd))


def _told(rc: int, said: bytes, signal: bytes) -> str | None:
    """`_said` for a line read by the pattern: `said` is timed_out's text (empty when
    absent), `signal` the signal's (empty when absent)."""
    if said == b"true":
        return "timeout"
    if rc == TIMEOUT_RC:
        return "failure" if said else None
    if not signal:
        return None
    return "failure" if signal in (b"null", b'""') else "signal"


def _said(record: dict[str, object], rc: int) -> str | None:
    """How the line says an attempt with a timeout's or a signal's rc ended: `timed_out` and
    `signal` tell the runner's timeout and a real signal from a command that merely exited
    with that code; a line without them (written before they were) is read by its rc."""
    said = record.get("timed_out")
    if said is True:
        return "timeout"
    if rc == TIMEOUT_RC:
        return None if said is None else "failure"
    if "signal" not in record:
        return None
    return "signal" if record["signal"] else "failure"


def _decode(line: bytes) -> object:
    import json  # noqa: PLC0415 - only for lines in another form

    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None
