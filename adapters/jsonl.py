"""JSON lines without the json module (it costs more start-up than the whole run path)."""

from __future__ import annotations

import os
import time

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
    return (dumps(fields) + "\n").encode("ascii")


class JsonlSink:
    """Appends one line per attempt to `path`, each with a single write on O_APPEND.

    Concurrent runners never interleave: the kernel appends each write whole.
    A log that cannot be written costs one warning, never the outcome.
    """

    def __init__(self, path: str, warn: Callable[[str], None]) -> None:
        self.path = path
        self.warn = warn
        self._fd: int | None = None
        self._failed = False

    def record(self, attempt: AttemptRecord) -> None:
        line = attempt_line(attempt)
        try:
            if self._fd is None:
                self._fd = os.open(
                    self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
                )
            written = os.write(self._fd, line)
            if written != len(line):
                raise OSError(f"short write ({written} of {len(line)} bytes)")
        except OSError as exc:
            if not self._failed:
                self._failed = True
                reason = exc.strerror or str(exc)
                self.warn(f"warning: cannot write the attempt log {self.path}: {reason}")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
