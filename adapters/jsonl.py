"""JSON lines without the json module (it costs more start-up than the whole run path)."""

from __future__ import annotations

import fcntl
import os
import stat
import time

from domain.errors import SIGNALLED_RC, TIMEOUT_RC

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    from domain.attempts import AttemptRecord

    Json: TypeAlias = str | int | float | bool | list["Json"] | dict[str, "Json"] | None

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}


def _string(text: str) -> str:
    """A JSON string literal, ASCII only, as json.dumps(text) writes it."""
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif " " <= char <= "~":
            out.append(char)
        elif ord(char) > 0xFFFF:
            high, low = divmod(ord(char) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    out.append('"')
    return "".join(out)


def dumps(value: Json) -> str:
    """Encode `value` as compact JSON (non-finite floats are not JSON: they become null)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(value) if value - value == 0 else "null"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    return "{" + ",".join(_string(key) + ":" + dumps(item) for key, item in value.items()) + "}"


def iso8601(epoch: float) -> str:
    """Local time with milliseconds and UTC offset, e.g. 2026-11-29T10:33:40.123+00:00."""
    seconds = int(epoch // 1)
    local = time.localtime(seconds)
    offset = local.tm_gmtoff // 60
    sign = "+" if offset >= 0 else "-"
    hours, minutes = divmod(abs(offset), 60)
    millis = min(999, int((epoch - seconds) * 1000))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", local)
    return f"{stamp}.{millis:03d}{sign}{hours:02d}:{minutes:02d}"


def attempt_line(record: AttemptRecord) -> bytes:
    fields: dict[str, Json] = {
        "ts": iso8601(record.started),
        "cmd": list(record.cmd),
        "attempt": record.attempt,
        "rc": record.rc,
        "duration_ms": record.duration_ms,
        "run_id": record.run_id,
    }
    if record.name is not None:
        fields["name"] = record.name
    if record.delay_ms is not None:
        fields["delay_ms"] = record.delay_ms
    if record.token is not None:
        fields["token"] = record.token
    if record.rc == TIMEOUT_RC or record.timed_out:
        fields["timed_out"] = record.timed_out
    if record.signal is not None or SIGNALLED_RC <= record.rc <= SIGNALLED_RC + 64:
        fields["signal"] = signal_name(record.signal)
    if record.ping_failed:
        fields["ping_failed"] = True
    if record.busy:
        fields["busy"] = True
    if not record.attempted:
        fields["attempted"] = False
    return (dumps(fields) + "\n").encode("ascii")


def signal_name(signum: int | None) -> str | None:
    """`TERM` for 15; the number as text for one without a name; None for None."""
    if signum is None:
        return None
    import signal  # noqa: PLC0415 - loaded by the run path already

    try:
        return signal.Signals(signum).name.removeprefix("SIG")
    except ValueError:
        return str(signum)


LOCK_TRIES = 100
"""Tries, a millisecond apart, at the log's flock before appending without it."""


class JsonlSink:
    """Appends one line per attempt to `path`, each with a single write on O_APPEND.

    Concurrent runners never interleave: the kernel appends each write whole. A
    line cut short (a full disk) is never merged with the next: a line that
    would follow a partial one starts on a fresh line. A log that is not a
    regular file (a FIFO, a device) is never opened for good, so it cannot block
    the runner, and a symbolic link is never followed (one planted in a home another
    user can write would have root append to a file of its choice). A missing home
    folder is created (mode 0700). A log that cannot be written costs one warning,
    never the outcome. Each attempt goes to the file the path names then: a log
    rotated between two attempts gets the next one anew.
    """

    def __init__(self, path: str, warn: Callable[[str], None]) -> None:
        self.path = path
        self.warn = warn
        self._fd: int | None = None
        self._readable = True
        self._failed = False
        self._refused = False

    def record(self, attempt: AttemptRecord) -> None:
        if self._refused:
            return
        line = attempt_line(attempt)
        try:
            fd = self._open()
            locked = self._readable and _lock(fd)
            try:
                if locked and not _ends_a_line(fd):
                    line = b"\n" + line
                written = os.write(fd, line)
            finally:
                if locked:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            if written != len(line):
                raise OSError(f"short write ({written} of {len(line)} bytes)")
        except _NotAFile as refused:
            self._refused = True
            self.warn(f"warning: cannot write the attempt log {self.path}: {refused}")
        except OSError as exc:
            if not self._failed:
                self._failed = True
                reason = exc.strerror or str(exc)
                self.warn(f"warning: cannot write the attempt log {self.path}: {reason}")

    def _open(self) -> int:
        if self._fd is not None and not _still_named(self._fd, self.path):
            self.close()  # rotated away since the last attempt: append where the path is now
        if self._fd is None:
            try:
                mode = os.lstat(self.path).st_mode
                if not stat.S_ISREG(mode):
                    raise _NotAFile(
                        "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                    )
            except FileNotFoundError:
                from adapters.files import make_folders  # noqa: PLC0415 - once, for a new home

                make_folders(os.path.dirname(self.path) or ".")
            flags = os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW
            try:
                fd = os.open(self.path, flags | os.O_RDWR, 0o600)
            except PermissionError:
                fd = os.open(self.path, flags | os.O_WRONLY, 0o600)
                self._readable = False
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise _NotAFile("not a regular file")
            self._fd = fd
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _still_named(fd: int, path: str) -> bool:
    """Whether `path` still names the file open at `fd` (not moved away, nor replaced)."""
    try:
        now = os.stat(path)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)


def _lock(fd: int) -> bool:
    """Take the log's flock, so no other runner's append is half-seen; give up after ~0.1 s.

    Every runner holds it only around one append. Without it the line is
    appended all the same, unchecked.
    """
    for _ in range(LOCK_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(0.001)
        except OSError:
            return False
        else:
            return True
    return False


def _ends_a_line(fd: int) -> bool:
    """Whether the log is empty or ends with a newline (not with a line cut short)."""
    size = os.fstat(fd).st_size
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


class _NotAFile(Exception):
    """The log's path names a FIFO, a device, a folder or a symbolic link: what, in words."""
